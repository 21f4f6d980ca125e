// Package verify computes the bounded write scope of verify mode: where
// cargo, go, git and npm must be able to write for a build, a test run or a
// fetch to succeed, and nothing more. It is toolchain-aware, never a
// command allowlist: the scope depends on the workspace and the environment,
// not on which command runs.
//
// Compute is the pure part (it reads manifests, config files and the
// repository, and changes nothing): paths with the tool that needs them
// and why, paths deliberately kept read-only and the attack that stops,
// environment changes, and Steps, data that says what wrun does itself
// outside the sandbox before and after the child runs.
//
// The steps are carried out by Prepare and Session.Finish. The one that
// matters is the git quarantine (quarantine.go): new objects go to a
// directory of the run, registered as an alternate object directory
// before the child starts, and are checked against their names before
// they are moved into the repository, so the child can neither change an
// existing object nor leave a ref to an object the repository lacks.
// Git finds the quarantine through a shim (gitshim.go) only for the
// workspace's repository. ServeGoCache is the go command's cache program
// for the first sandboxed go command of a workspace (gocacheprog.go).
//
// It also owns git repository discovery (the gitdir of a normal clone, and
// the gitdir and common dir of a linked worktree), which the policy layer
// uses to protect a repository's config and hooks under write grants.
//
// Nothing here calls the kernel's sandboxing interfaces.
package verify
