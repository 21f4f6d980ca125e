package verify

import (
	"path/filepath"
	"strings"

	"github.com/wrun-dev/wrun/internal/envlist"
)

// Git's object directory is chosen by the environment (GIT_OBJECT_DIRECTORY),
// which every git command inherits, whatever repository it works on: set
// for the whole sandbox, a test suite's own repositories (or a fixture
// repository in testdata/) would lose sight of their objects. So the
// child's PATH starts with a directory holding `git`, a link to wrun: run
// under that name, wrun works out which repository the git command is for
// and points the object directory at the quarantine only for the
// workspace's repository, then executes the real git. A program that runs
// git by its full path gets no quarantine, and git's writes to the
// workspace's objects are then denied: the shim only ever helps, the
// sandbox decides.

// The environment the shim reads.
const (
	// EnvGitCommonDir is the common dir of the repository with a quarantine.
	EnvGitCommonDir = "WRUN_GIT_COMMON_DIR"
	// EnvGitQuarantine is its quarantine.
	EnvGitQuarantine = "WRUN_GIT_QUARANTINE"
	// EnvGitReal is the git the shim runs.
	EnvGitReal = "WRUN_GIT"
)

// GitShimEnv decides the environment of one git command run through the
// shim: args are git's arguments, cwd its working directory, env its
// environment (KEY=VALUE). It returns the environment to run the real git
// with and the real git's path ("" when unknown).
func GitShimEnv(args []string, cwd string, env []string) (newEnv []string, realGit string) {
	get := func(k string) string {
		v, _ := envlist.Lookup(env, k)
		return v
	}
	realGit = get(EnvGitReal)
	common, q := get(EnvGitCommonDir), get(EnvGitQuarantine)
	if common == "" || q == "" {
		return env, realGit
	}
	objects := filepath.Join(common, "objects")
	ours := gitTargetsCommonDir(args, cwd, get("GIT_DIR"), common)
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		// Ours are replaced below; a value the child set itself is left.
		if (k == "GIT_OBJECT_DIRECTORY" && v == q) || (k == "GIT_ALTERNATE_OBJECT_DIRECTORIES" && v == objects) {
			continue
		}
		out = append(out, kv)
	}
	if ours {
		out = append(out, "GIT_OBJECT_DIRECTORY="+q, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+objects)
	}
	return out, realGit
}

// gitTargetsCommonDir reports whether the git command args, run in cwd
// (with GIT_DIR gitDir), works on the repository whose common dir is
// common. A command that makes a repository (init, clone) never does.
func gitTargetsCommonDir(args []string, cwd, gitDir, common string) bool {
	dir := cwd
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if a == "init" || a == "clone" {
				return false
			}
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "-C", "--git-dir", "--work-tree", "--namespace", "-c", "--config-env", "--super-prefix":
			if !hasVal && a != "--" {
				if i+1 >= len(args) {
					return false
				}
				i++
				val = args[i]
			}
			switch name {
			case "-C":
				if val != "" {
					dir = absFrom(dir, val)
				}
			case "--git-dir":
				gitDir = absFrom(dir, val)
			}
		case "--":
			i = len(args)
		}
	}
	var found string
	if gitDir != "" {
		gitDir = absFrom(dir, gitDir)
		found, _ = readCommonDir(gitDir)
	} else if r, err := FindRepo(dir); err == nil && r != nil {
		found = r.CommonDir
	}
	return found != "" && sameFile(found, common)
}

// DirectGit applies the shim's decision in wrun itself when the command
// it runs is git (argv[0] named "git"), so that the common case costs no
// extra program start: it returns the argv to run (the real git) and the
// environment for it. Anything else is returned unchanged, and so is a
// push the shim refuses (ShimRefusesPush): the shim says why.
func DirectGit(argv []string, cwd string, env []string) ([]string, []string) {
	if len(argv) == 0 || argv[0] != "git" {
		return argv, env
	}
	if _, refused := ShimRefusesPush(argv[1:], env); refused {
		return argv, env // the shim, first in PATH, refuses it
	}
	newEnv, realGit := GitShimEnv(argv[1:], cwd, env)
	if realGit == "" {
		return argv, env
	}
	return append([]string{realGit}, argv[1:]...), newEnv
}
