package main

import (
	"os"
	"runtime"
)

func init() {
	// Keep the main goroutine on the main thread, so that the launcher's
	// restricted thread is never the main thread (which Go cannot end, and
	// would keep instead of discarding).
	runtime.LockOSThread()
}

func main() {
	if len(os.Args) > 0 && os.Args[0] == stage2Arg0 {
		stage2() // never returns
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
