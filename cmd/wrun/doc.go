// Command wrun runs a command under a real kernel sandbox derived from one
// grant object. This package is the command line only: flags, help,
// output and exit statuses. The grant lives in package grant, the policy
// in package policy, enforcement in sandbox/linux.
package main
