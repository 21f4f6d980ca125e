// Command wrun runs a command under a real kernel sandbox derived from one
// grant object. This package is the command line only: flags, help,
// output and exit statuses, and the dispatch to the hidden entry points
// (the launcher's second stage, the git shim, the Go cache program). The
// run itself lives in package run, the grant in package grant, the policy
// in package policy, enforcement in sandbox/linux.
package main
