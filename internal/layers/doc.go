// Package layers holds no code: its test states the import rules of the
// module's layers and checks them against the go command's own listing of
// every package's imports, so that a new edge that breaks a layer fails
// the build's tests instead of waiting for a review to notice it.
//
// The layers, bottom up:
//
//   - the sandbox core: grant (and the tool-family catalogue, tools,
//     which a grant names), verify, policy, access, sandbox and the two
//     enforcements, sandbox/linux and sandbox/darwin. It decides what a
//     command may do and makes the kernel hold it, and knows nothing of
//     requests, approvals, records or configuration files.
//   - the run: proxy, escalate (denials into requests and their
//     alternatives), run (one run, its approval loop), config.
//   - the records and the harness: receipt, roster, session,
//     tools/toolsfile, hook.
//   - cmd/wrun: flags and output; nothing imports it.
//
// Sandboxing system calls (Landlock, seccomp, no_new_privs, capability
// sets) are made in sandbox/linux alone.
package layers
