package main

import (
	"os"
	"path/filepath"
)

func main() {
	// Run as `git` (a link verify mode puts first in the child's PATH),
	// wrun only picks git's object directory and runs the real git.
	if filepath.Base(os.Args[0]) == "git" {
		os.Exit(runGitShim(os.Args[1:]))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
