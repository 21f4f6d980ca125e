// Package grant owns wrun's one authority object: the Grant.
//
// A Grant says what a sandboxed child may do, in five fields (files, shell,
// network, desktop, tools). Presets such as "inspect" and "verify" are named
// values of the same type, never a second model. The package parses grant
// specs from the command line, renders them back in canonical form and in
// plain words, and intersects grants so that a nested or delegated grant can
// only ever narrow its parent's ceiling.
//
// Everything here is pure: no file system, no kernel.
package grant
