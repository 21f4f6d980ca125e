//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShieldFromHands: where the hands' domain scopes abstract sockets
// (!canHandsLater) the stage starts the hands and, without waiting for it
// to make itself undumpable, the command; shieldFromHands is what keeps
// the command from the hands' memory meanwhile. A process stands in for
// the hands: started from the restricted thread, in its domain, dumpable
// (as the hands is between its exec and its PR_SET_DUMPABLE). Control:
// without the shield the thread opens the process's memory for writing;
// with it the kernel refuses, and refuses signals to it too.
func TestShieldFromHands(t *testing.T) {
	scoped := func(t testing.TB, dir string) (rulesetAttr, []fsRule) {
		return rulesetAttr{scoped: llScopeSignal}, nil
	}
	// reach starts the stand-in, shields the thread when asked, then
	// opens /proc/PID/mem for writing (the attack) or signals it.
	reach := func(shield bool, how string) func(dir, arg string) error {
		return func(dir, arg string) error {
			sleep, err := exec.LookPath("sleep")
			if err != nil {
				return err
			}
			pid, err := syscall.ForkExec(sleep, []string{"sleep", "5"}, &syscall.ProcAttr{})
			if err != nil {
				return err
			}
			defer func() {
				// From another thread: a shielded one may not signal it.
				done := make(chan struct{})
				go func() {
					_ = unix.Kill(pid, unix.SIGKILL)
					var ws unix.WaitStatus
					_, _ = unix.Wait4(pid, &ws, 0, nil)
					close(done)
				}()
				<-done
			}()
			if shield {
				if err := shieldFromHands(); err != nil {
					return err
				}
			}
			if how == "signal" {
				return unix.Kill(pid, unix.SIGCONT)
			}
			fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				var errno unix.Errno
				if errors.As(err, &errno) {
					return errno
				}
				return err
			}
			unix.Close(fd)
			return nil
		}
	}
	// A layer denies moving a file between directories unless it grants
	// REFER: the shield must not (cargo renames its outputs into place).
	referable := func(t testing.TB, dir string) (rulesetAttr, []fsRule) {
		return rulesetAttr{handledFS: llRefer | llMakeReg | llRemoveFile, scoped: llScopeSignal},
			[]fsRule{{Path: dir, Access: llRefer | llMakeReg | llRemoveFile}}
	}
	dirs := func(t *testing.T, dir string) string {
		for _, d := range []string{"a", "b"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "a", "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	move := func(shield bool) func(dir, arg string) error {
		return func(dir, arg string) error {
			if shield {
				if err := shieldFromHands(); err != nil {
					return err
				}
			}
			return unix.Rename(filepath.Join(dir, "a", "f"), filepath.Join(dir, "b", "f"))
		}
	}
	runCases(t, []kcase{
		{name: "control/rename", abi: 6, landlock: referable, setup: dirs, op: move(false)},
		{name: "shielded/rename", abi: 6, landlock: referable, setup: dirs, op: move(true)},
		{name: "control/mem", abi: 6, landlock: scoped, op: reach(false, "mem")},
		{name: "control/signal", abi: 6, landlock: scoped, op: reach(false, "signal")},
		{name: "shielded/mem", abi: 6, landlock: scoped, op: reach(true, "mem"), want: unix.EACCES},
		{name: "shielded/signal", abi: 6, landlock: scoped, op: reach(true, "signal"), want: unix.EPERM},
	})
}

// TestHandsDomainBeside: below the abstract-socket scope (canHandsLater)
// the stage starts the hands after the command,
// from a thread it restricted with the command's ruleset apart from the
// launch thread (handsLater), so the hands' Landlock domain is beside the
// command's, and the hands may be dumpable while the command runs. What
// keeps the command from the hands' memory and signals is that domain.
// A process stands in for the hands, dumpable. Control: forked from the
// command's own thread (its domain), the thread opens its memory for
// writing and signals it; forked from a thread restricted apart with the
// same ruleset, the kernel refuses both (memory from ABI 1, signals with
// the signal scope of ABI 6).
func TestHandsDomainBeside(t *testing.T) {
	attr := func(abi int) rulesetAttr {
		if abi >= 6 {
			return rulesetAttr{handledFS: llMakeReg, scoped: llScopeSignal}
		}
		return rulesetAttr{handledFS: llMakeReg}
	}
	ruleset := func(abi int) func(t testing.TB, dir string) (rulesetAttr, []fsRule) {
		return func(t testing.TB, dir string) (rulesetAttr, []fsRule) { return attr(abi), nil }
	}
	// standIn forks a dumpable process, from this thread or (beside) from
	// a new thread restricted on its own with the same ruleset.
	standIn := func(abi int, beside bool) (int, error) {
		sleep, err := exec.LookPath("sleep")
		if err != nil {
			return 0, err
		}
		fork := func() (int, error) {
			return syscall.ForkExec(sleep, []string{"sleep", "5"}, &syscall.ProcAttr{})
		}
		if !beside {
			return fork()
		}
		type res struct {
			pid int
			err error
		}
		ch := make(chan res, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread is discarded
			rs, err := buildRuleset(attr(abi), nil)
			if err != nil {
				ch <- res{err: err}
				return
			}
			defer rs.close()
			if err := restrictThread(rs, false); err != nil {
				ch <- res{err: err}
				return
			}
			pid, err := fork()
			ch <- res{pid, err}
		}()
		r := <-ch
		return r.pid, r.err
	}
	reach := func(abi int, beside bool, how string) func(dir, arg string) error {
		return func(dir, arg string) error {
			pid, err := standIn(abi, beside)
			if err != nil {
				return err
			}
			defer func() {
				// From another thread, which may signal it.
				done := make(chan struct{})
				go func() {
					_ = unix.Kill(pid, unix.SIGKILL)
					var ws unix.WaitStatus
					_, _ = unix.Wait4(pid, &ws, 0, nil)
					close(done)
				}()
				<-done
			}()
			if how == "signal" {
				return unix.Kill(pid, unix.SIGCONT)
			}
			fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				var errno unix.Errno
				if errors.As(err, &errno) {
					return errno
				}
				return err
			}
			unix.Close(fd)
			return nil
		}
	}
	runCases(t, []kcase{
		{name: "control/mem", abi: 1, landlock: ruleset(1), op: reach(1, false, "mem")},
		{name: "control/signal", abi: 6, landlock: ruleset(6), op: reach(6, false, "signal")},
		{name: "beside/mem", abi: 1, landlock: ruleset(1), op: reach(1, true, "mem"), want: unix.EACCES},
		{name: "beside/mem-abi6", abi: 6, landlock: ruleset(6), op: reach(6, true, "mem"), want: unix.EACCES},
		{name: "beside/signal", abi: 6, landlock: ruleset(6), op: reach(6, true, "signal"), want: unix.EPERM},
	})
}

// TestMediationBeforeAndWithoutHands: the stage no longer waits for the
// hands, so wrun's first request may come before the hands serves: it
// waits in the socket and is answered once the hands runs (the real
// hands code, started late). Without a hands (it died, or never started)
// the same call is refused with EPERM, never performed, and counted for
// the run's report.
func TestMediationBeforeAndWithoutHands(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/s.sock"
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 8); err != nil {
		t.Fatal(err)
	}
	addr := append([]byte{0, 0}, path...)
	addr = append(addr, 0)
	addr[0], addr[1] = byte(unix.AF_UNIX), byte(unix.AF_UNIX>>8)
	connect := func(m *mediator) (handsAnswer, int) {
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(s) })
		return m.call(request{op: handsConnect, sock: s, cwd: -1, addr: addr}), s
	}
	pair := func() [2]int {
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return [2]int{p[0], p[1]}
	}

	t.Run("hands starts late", func(t *testing.T) {
		p := pair()
		m := newMediator(p[0])
		defer m.close()
		h := &hands{fd: p[1], allowed: []string{path}, bound: map[unixID]boundSock{}}
		go func() {
			// The request is in the socket before the hands serves.
			fds := []unix.PollFd{{Fd: int32(p[1]), Events: unix.POLLIN}}
			for {
				if n, err := unix.Poll(fds, -1); n == 1 || (err != nil && err != unix.EINTR) {
					break
				}
			}
			h.serve()
		}()
		a, s := connect(m)
		if a.ret != 0 || a.errno != 0 {
			t.Fatalf("the call made before the hands served: ret %d, %v", a.ret, a.errno)
		}
		if _, err := unix.Getpeername(s); err != nil {
			t.Fatalf("the socket is not connected: %v", err)
		}
		if n := m.unreached.Load(); n != 0 {
			t.Fatalf("%d calls counted as unreached", n)
		}
		unix.Close(p[1])
	})
	t.Run("hands gone", func(t *testing.T) {
		p := pair()
		unix.Close(p[1]) // the hands ended (or never ran)
		m := newMediator(p[0])
		defer m.close()
		a, s := connect(m)
		if a.errno != unix.EPERM {
			t.Fatalf("without a hands: ret %d, %v; want EPERM", a.ret, a.errno)
		}
		if _, err := unix.Getpeername(s); err == nil {
			t.Fatal("the socket was connected without a hands")
		}
		if n := m.unreached.Load(); n != 1 {
			t.Fatalf("%d calls counted as unreached, want 1", n)
		}
	})
}

// TestHandsBesideAbstract is why canHandsLater excludes the abstract-socket
// scope: a domain beside the command's, scoping abstract sockets, cannot
// connect to one the command created, and the hands makes the command's
// connects. The restricted thread (the command's domain) listens on an
// abstract address. Control: it connects to it itself; beside: a thread
// restricted apart with the same ruleset is refused (EPERM).
func TestHandsBesideAbstract(t *testing.T) {
	attr := rulesetAttr{handledFS: llMakeReg, scoped: llScopeAbstractUnix | llScopeSignal}
	ruleset := func(t testing.TB, dir string) (rulesetAttr, []fsRule) { return attr, nil }
	connect := func(beside bool) func(dir, arg string) error {
		return func(dir, arg string) error {
			ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(ln)
			addr := &unix.SockaddrUnix{Name: "@wrun-test-beside-" + strconv.Itoa(unix.Getpid())}
			if err := unix.Bind(ln, addr); err != nil {
				return err
			}
			if err := unix.Listen(ln, 1); err != nil {
				return err
			}
			dial := func() error {
				c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(c)
				return unix.Connect(c, addr)
			}
			if !beside {
				return dial()
			}
			done := make(chan error, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread is discarded
				// A failure to restrict is no errno: it cannot pass
				// for the refusal.
				rs, err := buildRuleset(attr, nil)
				if err != nil {
					done <- fmt.Errorf("ruleset: %v", err)
					return
				}
				defer rs.close()
				if err := restrictThread(rs, false); err != nil {
					done <- fmt.Errorf("restricting: %v", err)
					return
				}
				done <- dial()
			}()
			return <-done
		}
	}
	runCases(t, []kcase{
		{name: "control/same-domain", abi: 6, landlock: ruleset, op: connect(false)},
		{name: "beside", abi: 6, landlock: ruleset, op: connect(true), want: unix.EPERM},
	})
}
