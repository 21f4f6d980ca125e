//go:build linux

package ptyrelay

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMakeRaw(t *testing.T) {
	cooked := unix.Termios{
		Iflag: unix.ICRNL | unix.IXON | unix.IUTF8 | unix.BRKINT,
		Oflag: unix.OPOST | unix.ONLCR,
		Cflag: unix.CS7 | unix.PARENB | unix.CREAD,
		Lflag: unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN | unix.ECHOE | unix.ECHOCTL,
	}
	cooked.Cc[unix.VMIN] = 0
	cooked.Cc[unix.VTIME] = 5
	cooked.Cc[unix.VINTR] = 3
	raw := makeRaw(cooked)
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"iflag", raw.Iflag, unix.IUTF8}, // ICRNL, IXON, BRKINT off; IUTF8 kept
		{"oflag", raw.Oflag, unix.ONLCR}, // OPOST off (ONLCR is inert without it)
		{"cflag", raw.Cflag, unix.CS8 | unix.CREAD},
		{"lflag", raw.Lflag, unix.ECHOE | unix.ECHOCTL}, // no ICANON, ECHO, ISIG, IEXTEN
		{"VMIN", uint32(raw.Cc[unix.VMIN]), 1},
		{"VTIME", uint32(raw.Cc[unix.VTIME]), 0},
		{"VINTR kept", uint32(raw.Cc[unix.VINTR]), 3},
	} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if makeRaw(raw) != raw {
		t.Error("makeRaw is not idempotent")
	}
}

func TestSelfStopSignal(t *testing.T) {
	for _, c := range []struct{ in, want syscall.Signal }{
		{syscall.SIGTSTP, syscall.SIGTSTP},
		{syscall.SIGTTIN, syscall.SIGTTIN},
		{syscall.SIGTTOU, syscall.SIGTTOU},
		{syscall.SIGSTOP, syscall.SIGTSTP}, // the monitor's own stop
		{syscall.SIGTRAP, syscall.SIGTSTP}, // anything else
	} {
		if got := selfStopSignal(c.in); got != c.want {
			t.Errorf("selfStopSignal(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestMirror(t *testing.T) {
	for _, c := range []struct {
		name string
		ws   syscall.WaitStatus
		want ending
	}{
		{"exit 0", 0, ending{code: 0}},
		{"exit 3", 3 << 8, ending{code: 3}},
		{"SIGKILL", syscall.WaitStatus(syscall.SIGKILL), ending{code: 137, sig: syscall.SIGKILL}},
		{"SIGSEGV with core", syscall.WaitStatus(syscall.SIGSEGV) | 0x80, ending{code: 139, sig: syscall.SIGSEGV}},
		{"stopped", syscall.WaitStatus(syscall.SIGTSTP)<<8 | 0x7f, ending{code: 125}},
	} {
		if got := mirror(c.ws); got != c.want {
			t.Errorf("%s: mirror(%#x) = %+v, want %+v", c.name, int(c.ws), got, c.want)
		}
	}
}

func TestExecFailure(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{syscall.ENOENT, 127},
		{syscall.ENOTDIR, 127},
		{syscall.EACCES, 126},
		{syscall.ENOEXEC, 126},
	} {
		if got := execFailure(c.err); got != c.want {
			t.Errorf("execFailure(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
