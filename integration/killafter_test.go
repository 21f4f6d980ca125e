//go:build linux

package integration

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A CI runner ends a job with SIGTERM, waits, then SIGKILL. wrun forwards
// the SIGTERM; a command that ignores it gets --kill-after, then
// everything in the sandbox is killed (a background process in a session
// of its own too) and wrun exits. The control: with --kill-after=0 the
// same command keeps wrun waiting.
func TestTermThenKillAfterGrace(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	start := func(killAfter string) (*exec.Cmd, []string, []string) {
		t.Helper()
		fg, bg := []string{"sleep", uniqueArg()}, []string{"sleep", uniqueArg()}
		killOnCleanup(t, fg...)
		killOnCleanup(t, bg...)
		sh := `trap '' TERM INT HUP; (setsid ` + strings.Join(bg, " ") + ` </dev/null >/dev/null 2>&1 &); ` +
			strings.Join(fg, " ") + `; ` + strings.Join(fg, " ")
		cmd := exec.Command(bins.wrun, "--kill-after", killAfter, "--", "sh", "-c", sh)
		cmd.Dir = ws
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		for i := 0; len(hostPids(fg...)) == 0 || len(hostPids(bg...)) == 0; i++ {
			if i == 300 {
				t.Fatal("the command did not start its processes")
			}
			time.Sleep(10 * time.Millisecond)
		}
		return cmd, fg, bg
	}
	exited := func(cmd *exec.Cmd, within time.Duration) bool {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(within):
			return false
		}
	}

	// Control: the command ignores SIGTERM, so without a grace limit wrun
	// keeps waiting for it.
	cmd, _, _ := start("0")
	cmd.Process.Signal(syscall.SIGTERM)
	if exited(cmd, 2*time.Second) {
		t.Fatal("control: wrun ended although the command ignores SIGTERM and there is no grace limit")
	}

	cmd, fg, bg := start("1s")
	begin := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if !exited(cmd, 10*time.Second) {
		t.Fatal("wrun did not end within 10s of SIGTERM with --kill-after 1s")
	}
	if took := time.Since(begin); took < 900*time.Millisecond {
		t.Errorf("wrun ended after %s, before the grace of 1s", took)
	}
	if left := append(waitGone(fg...), waitGone(bg...)...); len(left) > 0 {
		t.Errorf("processes of the run outlived wrun's end: %v", left)
	}
}
