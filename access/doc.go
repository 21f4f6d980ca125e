// Package access says whether the kernel will allow an operation of a
// sandboxed child under a policy.Policy, and if not, which right is missing
// and which rule, hole or protected path decided it. It is the one model of what a
// plan allows: escalate asks it (Analyzer.Check, WouldDeny, Analyzer.Rights)
// to explain denials, infer them from output and check alternatives, and
// the exact observer in sandbox/linux asks it for every call it sees.
//
// It owns, platform-neutrally and without touching the kernel or the disk:
//
//   - the operations (Op and its kinds) and the names of the rights that
//     are not file system rights (connect_tcp, socket_unix, ...);
//   - Landlock's file system rules: rights inherited beneath a rule's path,
//     the union over rules, holes carved out of broader rules (simulated
//     from the policy, or as installed), directory rights checked on the
//     parent, refer on both sides of a move across directories and no
//     move that would gain rights (EXDEV), rights the kernel's ABI does not
//     handle (never denied, but for refer);
//   - protected paths as the platform enforces them: carved holes, or
//     exactly (on Linux where wrun mediates: the paths themselves
//     cannot be written, removed or replaced and their metadata cannot
//     change, while the directories above them keep their rights). The
//     exact case keeps the vocabulary of the read-only bind mounts that
//     once held it (CauseReadOnlyMount, CauseMountPoint, "mask");
//   - the socket rules: TCP under Landlock, other families under seccomp,
//     pathname and abstract UNIX sockets under the policy's IPC rules;
//   - the cause of each missing right (Cause): no rule, a hole, a carved
//     directory above a hole, an exactly protected path (a "read-only
//     mount") or one that cannot be removed (a "mount point"), a move
//     that would gain rights, the kernel, the network or IPC rules.
//
// The facts that change the answer besides the policy (how protected paths
// are enforced, which rights the kernel handles, whether pathname UNIX
// sockets are confined, the rules as installed) come in a Platform; how a
// kernel's calls and its Landlock bits map onto an Op and a Platform stays
// in sandbox/linux. Which grant field withheld a denial, and what to do
// instead, stays in escalate.
package access
