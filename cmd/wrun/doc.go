// Command wrun runs a command under a real kernel sandbox derived from one
// grant object. This package is the command line: flags, help, output and
// exit statuses; the run's records (the roster entry, the receipt, the
// escalation file: record.go, outfile.go); the keeper of
// --keep-background (keeper.go); and the dispatch to the hidden entry
// points (the pty relay's monitor, the git shim, the remote helper that
// refuses a push, the Go cache program). The run itself lives in package
// run, the grant in package grant, the policy in package policy,
// enforcement in sandbox/linux and sandbox/darwin.
package main
