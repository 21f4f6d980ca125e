// Package integration holds wrun's end-to-end tests: they build the wrun
// binary and run real programs under the real kernel sandbox, asserting
// both the denial and, as a control, that the same operation succeeds
// without wrun. Tests that need a kernel feature skip and name the Landlock
// ABI they need.
package integration
