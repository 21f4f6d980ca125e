// Package run runs one command under a kernel sandbox computed from one
// grant, end to end: it is what a harness imports to do what the wrun
// command does, and the wrun command is a thin front end over it (flags,
// help, output and exit statuses).
//
// A run (Run) goes:
//
//   - bounds: the requested grant narrowed to what an enclosing wrun
//     exported and to the ceiling (Resolve, the one place a grant is
//     narrowed; the pure grant operations are package grant's);
//   - host facts: the workspace, the home directories, the extra paths, all
//     checked and canonical, and a private temp dir for each attempt;
//   - the policy (package policy), planned for this operating system by a
//     Platform (Native selects it by build tags: Landlock and seccomp on
//     Linux, a Seatbelt profile under sandbox-exec on macOS; elsewhere
//     one that refuses to run rather than run unsandboxed);
//   - verify's steps before and after the command (package verify), the
//     command itself with signals forwarded to it, and what was denied,
//     observed or inferred, turned into an escalation request (package
//     escalate);
//   - under OnDenial Ask or Retry, the request goes to an Approver
//     (CommandApprover, TerminalApprover or the caller's own); escalate.Approve
//     turns an approved decision into a widened grant inside the ceiling,
//     and under Retry the command runs once more with it.
//
// Hooks say what happens while it happens; the Summary says what happened.
// Explain computes the same policy and plan without running anything.
//
// A program that uses Run must, like cmd/wrun, keep its main goroutine on
// the main thread (runtime.LockOSThread in init: the Linux launcher's
// restricted thread must never be the main one) and call Init first
// thing. The running program is also re-executed as an interactive run's
// pty monitor (internal/ptyrelay.MaybeMonitor, first thing in main), and
// in verify mode serves as the child's git shim and Go cache program,
// which only the wrun executable does.
//
// There is no package-level state: runs are independent of each other.
package run
