//go:build linux

package ptyrelay

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// monitorArg, as the first argument, makes the launcher's binary a
// session monitor (MaybeMonitor).
const monitorArg = "--wrun-ptyrelay-monitor"

// forwarded lists the signals the monitor passes on to the command's
// process group: those a launcher forwards to its child.
func forwarded() []syscall.Signal {
	return []syscall.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}
}

// Command returns what to execute instead of path with argv so that the
// command runs under a session monitor (the package doc says why): self
// is the launcher's own binary as the child can execute it
// ("/proc/self/exe"), nfiles the number of descriptors the child gets
// (0, 1, 2 and the extra ones), which the monitor passes on unchanged.
// The child's environment and directory are the command's: the monitor
// keeps both. A nil Relay returns path and argv.
func (r *Relay) Command(self, path string, argv []string, nfiles int) (string, []string) {
	if r == nil {
		return path, argv
	}
	return self, append([]string{"wrun-pty-monitor", monitorArg, strconv.Itoa(nfiles), path}, argv...)
}

// MaybeMonitor runs the session monitor and never returns if the program
// was started as one (Relay.Command's arguments); otherwise it returns at
// once. The launcher's main calls it first.
func MaybeMonitor() {
	if len(os.Args) < 5 || os.Args[1] != monitorArg {
		return
	}
	nfiles, err := strconv.Atoi(os.Args[2])
	if err != nil || nfiles < 1 {
		fmt.Fprintf(os.Stderr, "wrun: pty monitor: bad descriptor count %q\n", os.Args[2])
		os.Exit(125)
	}
	monitor(nfiles, os.Args[3], os.Args[4:])
}

// monitor leads the pty's session (the launcher made it so, with Apply):
// it runs the command as the terminal's foreground process group, passes
// on the signals it is sent, mirrors the command's stops in its own state,
// and ends as the command ended. It runs on one locked thread, the
// command's parent, whose end sends the command SIGKILL (Pdeathsig).
func monitor(nfiles int, path string, argv []string) {
	runtime.LockOSThread()
	// Not dumpable: the command, in the same sandbox and as the same
	// user, can neither trace this process nor read its memory.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	files := make([]uintptr, nfiles)
	for i := range files {
		files[i] = uintptr(i)
	}
	sigs := make(chan os.Signal, 16)
	for _, s := range forwarded() {
		// One the launcher's caller ignores stays ignored, so the
		// command inherits it ignored.
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		// Its own process group, the terminal's foreground: the monitor
		// (in the session's first group) is its parent in the same
		// session, so the group is not orphaned and ^Z stops it.
		Sys: &syscall.SysProcAttr{Foreground: true, Ctty: 0, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "wrun: %s: %v\n", path, err)
		os.Exit(execFailure(err))
	}
	go func() {
		for s := range sigs {
			_ = unix.Kill(-pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			fmt.Fprintf(os.Stderr, "wrun: pty monitor: waiting for the command: %v\n", err)
			os.Exit(125)
		}
		if ws.Stopped() {
			// The launcher sees this stop, restores its terminal, stops
			// itself; its SIGCONT continues this thread here.
			_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
			_ = unix.Kill(-pid, unix.SIGCONT)
			continue
		}
		end(mirror(ws))
	}
}

// end ends the monitor as e says: by the signal, with its default action
// restored (the runtime's own handlers would turn a SIGSEGV from kill into
// a crash report, exit 2), or with the exit code.
func end(e ending) {
	if e.sig != 0 {
		signal.Reset(e.sig)
		// The kernel's struct sigaction with every field zero is SIG_DFL,
		// no flags, an empty mask, on every architecture.
		var dfl [4]uint64
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(e.sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
		var set unix.Sigset_t
		set.Val[(int(e.sig)-1)/64] |= 1 << ((uint(e.sig) - 1) % 64)
		_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
		_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), e.sig)
	}
	os.Exit(e.code)
}
