// Package sandbox defines what the command line exchanges with a platform's
// enforcement of a policy.Policy, so that running a sandboxed command does
// not depend on which platform enforces it.
//
// It holds the options, the command to run, its result, the errors that map
// to wrun's exit statuses, and the report of what the kernel enforces (and
// what it cannot). The platforms live beneath it: sandbox/linux (Landlock
// and seccomp) and sandbox/darwin (Seatbelt).
//
// Patterns the platforms follow:
//
//   - Explicit mapping of policy rights to kernel bits: each policy.Access
//     right maps to the kernel's bits in one table, right by right, and the
//     rights an ABI can restrict are listed per ABI; nothing relies on the
//     two sets of bits having the same values, and a test checks the table
//     against the kernel header's values written out again by hand.
//   - Optional rules fail closed: a policy.Rule marked Optional whose path
//     is gone or unreachable is skipped, leaving the child less access,
//     never more; any other error building the ruleset refuses the run.
//   - Kernel tests re-run in a fresh process: a Landlock domain or a
//     seccomp filter cannot be lifted once applied, so each case that
//     restricts runs in a new process of the test binary, which restricts
//     a locked thread exactly as the launcher does, performs one operation
//     and reports its errno; the parent checks it against the case's row
//     of a table (0: must succeed). A case the kernel cannot hold skips and
//     names the ABI it needs.
//   - Seccomp programs run in the BPF VM in tests: the filter the launcher
//     loads is also run, instruction by instruction, in a BPF virtual
//     machine on encoded seccomp_data, so its decisions for each system
//     call, argument and architecture are tested without loading it.
//
// Nothing here calls the kernel.
package sandbox
