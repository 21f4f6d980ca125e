package main

import (
	"os"
	"path/filepath"
	"runtime"

	"github.com/wrun-dev/wrun/internal/ptyrelay"
	"github.com/wrun-dev/wrun/verify"
)

func init() {
	// Keep the main goroutine on the main thread, so that the launcher's
	// restricted thread is never the main thread (which Go cannot end, and
	// would keep instead of discarding).
	runtime.LockOSThread()
}

func main() {
	// Re-executed inside the sandbox as an interactive run's pty monitor
	// (sandbox/linux forks it to lead the command's session), wrun only
	// runs the command as that session's foreground job.
	ptyrelay.MaybeMonitor()
	// Run as `git` (a link verify mode puts first in the child's PATH),
	// wrun only picks git's object directory and runs the real git.
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "git" {
		os.Exit(runGitShim(os.Args[1:]))
	}
	// Run as the remote helper verify sends every push to, it refuses it.
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "git-remote-"+verify.PushRefusedHelper {
		os.Exit(runPushRefused(os.Args[1:]))
	}
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
