package darwin

import (
	"syscall"
	"testing"
)

// Placement and forwarding follow the Linux launcher: an interactive run
// shares wrun's process group and gets only the signals its terminal did
// not send; a run holding a terminal gets a group of its own; any other
// leads a session of its own, without a controlling terminal.
func TestPlacement(t *testing.T) {
	const pid = 4242
	cases := []struct {
		interactive, terminal bool
		want                  placement
		fwd                   map[syscall.Signal]int
		kill                  int
	}{
		{true, true, placement{interactive: true},
			map[syscall.Signal]int{syscall.SIGINT: 0, syscall.SIGQUIT: 0, syscall.SIGTERM: pid, syscall.SIGHUP: pid, syscall.SIGUSR1: pid}, pid},
		{false, true, placement{setpgid: true},
			map[syscall.Signal]int{syscall.SIGINT: -pid, syscall.SIGQUIT: -pid, syscall.SIGTERM: -pid}, -pid},
		{false, false, placement{setsid: true},
			map[syscall.Signal]int{syscall.SIGINT: -pid, syscall.SIGTERM: -pid, syscall.SIGHUP: -pid}, -pid},
	}
	for _, c := range cases {
		got := place(c.interactive, c.terminal)
		if got != c.want {
			t.Errorf("place(%v, %v) = %+v, want %+v", c.interactive, c.terminal, got, c.want)
		}
		if got.setsid && got.setpgid {
			t.Errorf("place(%v, %v): both setsid and setpgid", c.interactive, c.terminal)
		}
		for sig, want := range c.fwd {
			if to := got.forwardTo(pid, sig); to != want {
				t.Errorf("%+v: %v forwarded to %d, want %d", got, sig, to, want)
			}
		}
		if k := got.killTo(pid); k != c.kill {
			t.Errorf("%+v: kill %d, want %d", got, k, c.kill)
		}
	}
}
