// Package policy decides, for one grant on one host, exactly what the
// sandboxed child may do, in platform-neutral terms that sandbox/linux and
// sandbox/darwin enforce.
//
// A Policy says which paths the child may read, write or execute and why
// (reads are named: the system's directories, the workspace and its
// project, the toolchains and PATH, what --allow-read names), which paths
// inside those are hidden (credential stores, files no other user may
// read; the top-level directories no rule names) or protected inside
// writable trees (what git reads that can run a program, start-up files,
// wrun's own config), what the network and IPC scopes are, and the exact
// environment the child gets.
//
// Data flows one way: grant.Grant plus facts about the host (Host) go in, a
// Policy comes out. Verify mode's write scope comes from package verify,
// complete (paths, what wrun creates, how each is reached, why): Compute
// builds verify's input once (VerifyInput) and only translates the scope
// into rules. Nothing here calls the kernel. The one place this package
// reads the disk besides verify is through Lister, when it must enumerate
// siblings to express "everything but X" with allow-only rules (Carve).
//
// Patterns to follow:
//
//   - Rights are as fine-grained as the finest platform (Landlock) and named
//     here (Access); each platform maps them to its kernel's bits
//     explicitly, right by right, in one table (sandbox/linux's accessMap),
//     never by numeric identity, and a test checks that table against the
//     kernel header's values written out again by hand.
//   - Optional rules fail closed: a Rule marked Optional whose path is
//     missing or unreachable at enforcement gets no rule at all, so the
//     child has less access, never more; a missing path that is not
//     optional stops the run before the child starts.
package policy
