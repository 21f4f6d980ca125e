// Package verify computes the bounded write scope of verify mode: where
// cargo, go, git and npm must be able to write for a build, a test run or a
// fetch to succeed, and nothing more. It is toolchain-aware, never a
// command allowlist: the scope depends on the workspace and the environment,
// not on which command runs.
//
// It also owns git repository discovery (the gitdir of a normal clone, and
// the gitdir and common dir of a linked worktree), which the policy layer
// uses to protect a repository's config and hooks under write grants.
//
// Functions here read the disk (is there a Cargo.toml, a .git file) but
// never call the kernel's sandboxing interfaces.
package verify
