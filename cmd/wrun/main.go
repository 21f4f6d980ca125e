package main

import (
	"os"
	"runtime"

	"github.com/wrun-dev/wrun/run"
)

func init() {
	// Keep the main goroutine on the main thread, so that the launcher's
	// restricted thread is never the main thread (which Go cannot end, and
	// would keep instead of discarding).
	runtime.LockOSThread()
}

func main() {
	// Started again by a sandbox as git's shim, the push-refusing remote
	// helper, an interactive run's terminal monitor or the Go cache
	// program, wrun plays that part and ends.
	run.ServeHelpers()
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
