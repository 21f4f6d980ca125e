package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A run with --keep-background on Linux has two wrun processes. The one
// its caller started (the front) starts wrun again (the keeper) with the
// same arguments and waits only for the run's exit status, which the
// keeper sends once the command has exited and the run is reported; the
// front then exits with it. The keeper stays: it is the supervisor of
// what the command left in the background, so their creates beside
// protected paths, metadata changes and UNIX socket connects go on being
// checked (and made) rather than failing, and it exits when the last of
// them has ended. A keeper whose front dies before the status was sent
// kills itself, as a killed wrun would be.
//
// The front passes the keeper its standard streams and --json-fd; its
// own two pipes follow, named by envKeeper.

// envKeeper names, in a keeper's environment, the descriptors of its two
// pipes to the front: "STATUS,ALIVE".
const envKeeper = "WRUN_KEEPER_FDS"

// needsKeeper reports whether a run with these flags is kept by a second
// wrun: where the sandbox mediates the command's calls (Linux), whose
// supervisor must outlive the run for what it leaves.
func needsKeeper(rf runFlags) bool {
	return rf.keepBackground && runtime.GOOS == "linux" && os.Getenv(envKeeper) == ""
}

// runFront starts the keeper and exits with the status it sends: the
// run's. Without one (the keeper failed before it ran anything) it is
// the keeper's own exit status.
func runFront(rf runFlags, stdin, stdout, stderr *os.File) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--keep-background: finding wrun's own executable: %w", err)
	}
	status, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("--keep-background: %w", err)
	}
	aliveR, alive, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("--keep-background: %w", err)
	}
	defer alive.Close() // held until the front exits: its end is the keeper's sign
	// Descriptor 3+i of the keeper is extra[i]: --json-fd keeps its
	// number, the pipes come after it.
	var extra []*os.File
	if rf.jsonFD > 2 {
		extra = make([]*os.File, rf.jsonFD-2)
		extra[rf.jsonFD-3] = os.NewFile(uintptr(rf.jsonFD), "json-fd")
	}
	extra = append(extra, statusW, aliveR)
	fds := strconv.Itoa(len(extra)+1) + "," + strconv.Itoa(len(extra)+2)
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), envKeeper+"="+fds)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = extra
	// What a caller sends the front's pid is meant for the run. A
	// terminal's SIGINT and SIGQUIT reach the keeper itself (it is in the
	// front's process group): where the front is the terminal's
	// foreground, they are not sent twice.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	fromTerminal := foreground(stdin)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("--keep-background: starting wrun's keeper: %w", err)
	}
	statusW.Close()
	aliveR.Close()
	go func() {
		for s := range sigs {
			if fromTerminal && (s == syscall.SIGINT || s == syscall.SIGQUIT) {
				continue
			}
			_ = cmd.Process.Signal(s)
		}
	}()
	line, _ := bufio.NewReader(status).ReadString('\n')
	if code, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
		if code == 0 {
			return nil
		}
		return &exitError{code}
	}
	// No status: the keeper ended before the run was reported.
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
			return &exitError{ee.ExitCode()}
		}
		return fmt.Errorf("--keep-background: wrun's keeper: %w", err)
	}
	return nil
}

// foreground reports whether f is a terminal whose foreground process
// group is wrun's.
func foreground(f *os.File) bool {
	if f == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}

// keeper is the keeper's end of the pipes to its front.
type keeper struct {
	status *os.File
	sent   atomic.Bool
}

// openKeeper takes the pipes envKeeper names, if this wrun is a keeper,
// and removes the variable (nothing it starts must see it). It watches
// the front: if the front dies before the status is sent, the keeper
// kills itself, and with it the command.
func openKeeper() (*keeper, error) {
	v, ok := os.LookupEnv(envKeeper)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(envKeeper)
	a, b, _ := strings.Cut(v, ",")
	sfd, err1 := strconv.Atoi(a)
	afd, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || sfd < 3 || afd < 3 {
		return nil, fmt.Errorf("%s=%q: not two descriptors", envKeeper, v)
	}
	k := &keeper{status: os.NewFile(uintptr(sfd), "keeper-status")}
	alive := os.NewFile(uintptr(afd), "keeper-alive")
	go func() {
		var b [1]byte
		_, _ = alive.Read(b[:]) // returns when the front has exited
		if !k.sent.Load() {
			p, _ := os.FindProcess(os.Getpid())
			_ = p.Kill()
		}
	}()
	return k, nil
}

// send gives the front the run's exit status.
func (k *keeper) send(code int) {
	if k == nil {
		return
	}
	k.sent.Store(true)
	fmt.Fprintf(k.status, "%d\n", code)
	k.status.Close()
}
