//go:build linux

package ptyrelay_test

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/wrun-dev/wrun/internal/ptyrelay"
)

// A launcher that runs argv with the relay when its standard input is a
// foreground terminal, and exactly as before otherwise (every method of a
// nil Relay does nothing). wrun's main calls ptyrelay.MaybeMonitor first,
// so that the binary re-executed by Relay.Command becomes the monitor.
func Example() {
	ws, err := launch("/bin/sh", []string{"sh", "-c", "stty size; tty"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(125)
	}
	fmt.Println("exit status", ws.ExitStatus())
}

func launch(path string, argv []string) (syscall.WaitStatus, error) {
	// The launch thread is the child's parent: Pdeathsig fires when it ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	r, err := ptyrelay.Start(os.Stdin) // before any sandbox is applied
	if err != nil {
		return 0, fmt.Errorf("a terminal for the command: %w", err)
	}
	defer r.Close() // restores the terminal on every path, a panic included
	in, out, errOut := r.Replace(os.Stdin), r.Replace(os.Stdout), r.Replace(os.Stderr)
	files := []uintptr{in.Fd(), out.Fd(), errOut.Fd()}
	path, argv = r.Command("/proc/self/exe", path, argv, len(files))
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r.Apply(sys) // with a relay: a session of its own instead of a group
	// (here the sandbox would be applied to this thread)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: files, Sys: sys})
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", path, err)
	}
	r.Started(pid)
	go func() {
		for s := range sigs {
			// With a relay every caught signal goes on (the terminal is
			// raw: none came from its keyboard); without one, to the group.
			target := -pid
			if r != nil {
				target = pid
			}
			_ = syscall.Kill(target, s.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return 0, fmt.Errorf("waiting for %s: %w", path, err)
		}
		if ws.Stopped() {
			r.Stopped(ws.StopSignal()) // returns once fg (or bg) continued wrun
			r.Continued()
			continue
		}
		// What the command left behind is ended here; then the deferred
		// Close drains its last output and restores the terminal.
		return ws, nil
	}
}
