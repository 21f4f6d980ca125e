package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/wrun-dev/wrun/verify"
)

// runGitShim is wrun run as `git` inside a verify sandbox: it sets git's
// object directory for this one command (see verify.GitShimEnv) and
// replaces itself with the real git. It returns only on failure.
func runGitShim(args []string) int {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/"
	}
	if dest, refused := verify.ShimRefusesPush(args, os.Environ()); refused {
		verify.RecordPushRefusal(os.Environ(), dest)
		fmt.Fprintln(os.Stderr, verify.PushRefusal(dest))
		return 128
	}
	env, realGit := verify.GitShimEnv(args, cwd, os.Environ())
	if realGit == "" {
		fmt.Fprintf(os.Stderr, "wrun (as git): %s is not set, so there is no git to run\n", verify.EnvGitReal)
		return 127
	}
	err = syscall.Exec(realGit, append([]string{"git"}, args...), env)
	fmt.Fprintf(os.Stderr, "wrun (as git): running %s: %v\n", realGit, err)
	return 126
}

// runPushRefused is wrun run as git's remote helper
// git-remote-wrun-verify-refuses-push, to which verify sends every push
// (see verify.PushRefusedHelper): git runs it with the remote and the URL;
// it refuses the push.
func runPushRefused(args []string) int {
	dest := ""
	if len(args) > 0 {
		dest = args[len(args)-1]
	}
	verify.RecordPushRefusal(os.Environ(), dest)
	fmt.Fprintln(os.Stderr, verify.PushRefusal(dest))
	return 128
}
