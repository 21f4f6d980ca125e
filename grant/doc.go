// Package grant defines what a sandboxed child may do: the Grant, wrun's one
// authority object, with its presets, parsing, printing and narrowing.
//
// A Grant says what a sandboxed child may do, in five fields (files, shell,
// network, desktop, tools). Presets such as "inspect" and "verify" are named
// values of the same type, never a second model. The package parses grant
// specs from the command line; renders them back in canonical form
// (String), as the shortest spec that reads back the same (Compact) and in
// plain words (Describe); and intersects grants so that a nested or
// delegated grant can only ever narrow its parent's ceiling. Every other
// package that shows or narrows a grant calls these rather than formatting
// or comparing fields itself.
//
// Each field's values are ordered from narrowest to widest, so that the
// narrower of two is their intersection: network is off < loopback < hosts
// < on (loopback: sockets the run bound on loopback addresses, and the
// host's loopback services an --allow-host names; hosts: loopback and the
// hosts --allow-host names, through wrun's proxy). Host is one
// --allow-host entry (HOST[:PORT], *.example.com wildcards), and
// HostsWithin says which entries a network value does not reach.
//
// The tools field names tool families (package tools owns the names and
// the decision); a grant that names none carries the families its other
// fields imply (DefaultTools), and Check keeps the families consistent
// with the fields they would otherwise bypass.
//
// Everything here is pure: no file system, no kernel.
package grant
