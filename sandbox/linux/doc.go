// Package linux enforces a policy.Policy on Linux with Landlock and a
// seccomp filter on every machine, and with wrun's own mediation of the
// calls those two cannot decide where seccomp user notification is there.
// It starts no second program before the command: the command is forked
// from a locked OS thread of wrun's (the launch thread), restricted
// first; an interactive run's command is started by the pty relay's
// monitor (wrun's own binary, re-executed inside the sandbox: launch.go).
//
// The parts, each a file or two:
//
//   - machine.go, features_linux.go: what this machine offers (Features),
//     probed once by calling the kernel, and the simulations of other
//     machines (WRUN_LANDLOCK_ABI, WRUN_SIMULATE) the tests use.
//   - matrix.go: the support matrix. For each protection a grant needs
//     it says which mechanism holds it on a machine (Landlock, carved
//     rules, seccomp, the mediation, an enclosing wrun) or that nothing
//     does; NewPlan runs, refuses or degrades from it alone, and the
//     table in docs/linux.md is generated from it (TestREADMEMatrix).
//   - plan.go: NewPlan, the one model of what holds what: the Landlock
//     ruleset (hidden and protected paths carved out), the seccomp
//     filter's spec, the directories the mediation performs in, the paths
//     to create before and sweep after the run.
//   - seccomp.go: the filter, assembled from the spec: refusals decided
//     by registers, and the calls sent to wrun's listener.
//   - restrict.go, launch.go: the launch thread's restriction and the run
//     (Run): subreaper, undumpable, the command forked from the
//     restricted thread, its end, what it left ended, the checks after.
//   - supervise.go and the files it dispatches to (mediation.go,
//     metadata.go, sockets.go, inet.go, sockdiag.go, procs.go,
//     devices.go): the supervisor, on
//     wrun's unrestricted threads, receiving the notified calls. It
//     performs a call (on a performer thread, performer.go: no
//     capabilities, no_new_privs, a Landlock domain of its own) where the
//     kernel cannot be left to decide it: creates, renames, links and
//     removals in the directories that hold protected paths, metadata
//     changes, UNIX socket connects below Landlock ABI 9, signals and
//     priorities of other processes, pseudo-terminals, /dev/shm. Every
//     other notified call continues, and the kernel decides it; the
//     supervisor only records, from package access's model of the plan
//     (predict.go), what the kernel will refuse.
//   - hold.go: under Options.Hold, a call the kernel would refuse and
//     wrun can perform (a write, create, removal, rename or link beyond
//     the write scope; a UNIX connect it performs) waits for an answer;
//     an approved directory is never given to the command: wrun performs
//     the call, and every later one beneath it, on performers whose
//     domain adds the directory.
//   - auditrec.go: where auditing is on, the kernel's own Landlock audit
//     records confirm the denials and add the refused reads.
//
// It is the only package that makes sandboxing system calls; every file
// that does is built for Linux only. The kernel facts it relies on (the
// Landlock ABI versions and errata: abi.go), the matrix and the plan build
// and are tested on any system.
package linux
