// Package linux enforces a policy.Policy on Linux: Landlock for the file
// system, TCP and IPC scopes, a seccomp filter for what Landlock cannot
// express, a private mount namespace for paths that must stay unwritable
// inside writable trees, and the launcher that starts the child from a
// dedicated, restricted OS thread of wrun so that no second process start
// is needed. Denials are reported by an observer on seccomp user
// notifications (it predicts, it never decides) and, where auditing is on,
// confirmed from the kernel's own Landlock audit records. The prediction is
// package access's model of the plan, the same escalate uses; this package
// only maps each observed call onto an access.Op and its ruleset (handled
// Landlock rights, carved rules, mounts) onto an access.Platform.
//
// Below Landlock ABI 9 it also mediates the calls that name a socket
// address (connect, bind, addressed sends): the same notification
// listener receives them, and rather than let one continue, wrun
// (mediate.go) takes the child's socket and a copy of the address and has
// the hands process, inside the sandbox, perform the call (hands.go), so
// that pathname UNIX sockets bound outside the sandbox stay out of reach
// without a check-to-use gap.
//
// It is the only package that makes sandboxing system calls; every file
// that does is built for Linux only. The kernel facts it relies on, the
// Landlock ABI versions and errata, are one table (abi.go) that builds and
// is tested on any system; so is the support matrix (matrix.go), which
// says, for each environment (Landlock ABI, privileges, user namespaces),
// which mechanism holds each protection of a grant, and from which alone
// NewPlan decides to run, refuse or run degraded.
package linux
