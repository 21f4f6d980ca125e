// Package verify computes where build, test and git tools must be able to
// write under shell=verify (and which of the user's own tool caches
// shell=full opens), and nothing more: the bounded write scope, never a
// command allowlist. The scope depends on the workspace and the
// environment (cargo, go, git, npm, Python, a build directory the
// repository ignores), not on which command runs.
//
// Compute is the pure part (it reads manifests, config files and the
// repository, and changes nothing). Its Scope is complete, so that the
// policy layer only translates it into rules: writable paths with the tool
// that needs them, why, whether wrun creates them and the trusted directory
// each is reached from without following links (Beneath); under shell=full
// the user's tool caches; paths deliberately kept read-only and the attack
// that stops; environment changes; and Steps, data that says what wrun does
// itself outside the sandbox before and after the child runs. Its input
// is built once, by policy.VerifyInput.
//
// The steps are carried out by Prepare and Session.Finish. The one that
// matters is the git quarantine (quarantine.go): new objects go to a
// directory of the run, registered as an alternate object directory
// before the child starts, and wrun copies each into the repository and
// checks its copy against the object's name (the child's file is never
// moved or linked in), so the child can neither change an
// existing object nor leave a ref to an object the repository lacks.
// Git finds the quarantine through a shim (gitshim.go) only for the
// workspace's repository. ServeGoCache is the go command's cache program
// for the first sandboxed go command of a workspace (gocacheprog.go).
//
// Two more guards of verify mode live here: git push is refused at the
// git level (gitpush.go: every push URL is rewritten to a remote helper
// that refuses it; a guard against a mistake, not a boundary), and the
// private temp dir of every run, whatever the grant, is taken from a
// stable slot per workspace, emptied and locked (tempdir_unix.go), so
// tools that key caches on TMPDIR (go test) hit them.
//
// It also owns git repository discovery (the git dir of a clone, the git
// dir and common dir of a linked worktree or submodule, git dirs of any
// name: IsGitDir), which the policy layer uses to protect what git reads
// that can run a program in every repository a writable tree holds.
//
// Nothing here calls the kernel's sandboxing interfaces.
package verify
