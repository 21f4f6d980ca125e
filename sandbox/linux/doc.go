// Package linux enforces a policy.Policy on Linux: Landlock for the file
// system, TCP and IPC scopes, a seccomp filter for what Landlock cannot
// express, a private mount namespace for paths that must stay unwritable
// inside writable trees, and the launcher that starts the child from a
// dedicated, restricted OS thread of wrun so that no second process start
// is needed. Denials are reported by an observer on seccomp user
// notifications (it predicts, it never decides) and, where auditing is on,
// confirmed from the kernel's own Landlock audit records.
//
// It is the only package that makes sandboxing system calls; every file
// that does is built for Linux only. The kernel facts it relies on, the
// Landlock ABI versions and errata, are one table (abi.go) that builds and
// is tested on any system.
package linux
