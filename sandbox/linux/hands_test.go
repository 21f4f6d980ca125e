//go:build linux

package linux

import (
	"errors"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShieldFromHands: the stage starts the hands and, without waiting for
// it to make itself undumpable, the command; shieldFromHands is what keeps
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
	runCases(t, []kcase{
		{name: "control/mem", abi: 6, landlock: scoped, op: reach(false, "mem")},
		{name: "control/signal", abi: 6, landlock: scoped, op: reach(false, "signal")},
		{name: "shielded/mem", abi: 6, landlock: scoped, op: reach(true, "mem"), want: unix.EACCES},
		{name: "shielded/signal", abi: 6, landlock: scoped, op: reach(true, "signal"), want: unix.EPERM},
	})
}
