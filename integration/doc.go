// Package integration holds wrun's end-to-end tests: they build the wrun
// binary and run real programs under the real kernel sandbox, to show that
// what a grant promises is what the kernel enforces.
//
// The pattern to follow: a control for every denial test. A test that
// expects wrun to stop an operation first performs the same operation the
// same way without wrun (bare, run, a control script on a fresh copy of
// the fixture) and fails if it does not succeed there, or skips when the
// host cannot do it at all: a denial with no control proves nothing, since
// the operation may have failed for a reason of its own. Only then does it
// run under wrun and check the effect is absent, on disk or in what the
// child printed, not only wrun's exit status.
//
// Tests that need a kernel feature skip and name the Landlock ABI they
// need. Every escalation request a test receives is checked against the
// published schema (internal/schematest).
package integration
