//go:build linux

package ptyrelay

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// makeRaw returns t in raw mode, as cfmakeraw(3) makes it: bytes pass
// through one at a time, unchanged, with no echo and no signal characters,
// so ^C, ^Z and ^D reach the inner terminal's line discipline, which
// applies the command's own modes to them.
func makeRaw(t unix.Termios) unix.Termios {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return t
}

// selfStopSignal is the signal wrun stops itself with when the command
// stopped with sig: the same job-control signal, and SIGTSTP for SIGSTOP
// (or anything else). A SIGSTOP would stop wrun even under a parent with
// no job control (a pipeline's, script(1)'s), where nothing would ever
// continue it; the kernel discards SIGTSTP there instead, and the run
// goes on.
func selfStopSignal(sig syscall.Signal) syscall.Signal {
	switch sig {
	case syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
		return sig
	}
	return syscall.SIGTSTP
}

// ending is how the monitor ends to mirror the command's wait status: by
// the signal that killed the command (sig != 0), or with its exit code.
type ending struct {
	code int
	sig  syscall.Signal
}

// mirror says how the monitor ends for the command's final status ws. A
// status that is neither an exit nor a death by signal is none the
// monitor is given (it waits with WUNTRACED only); it ends with 125, a
// failure of the launcher's own.
func mirror(ws syscall.WaitStatus) ending {
	switch {
	case ws.Exited():
		return ending{code: ws.ExitStatus()}
	case ws.Signaled():
		return ending{code: 128 + int(ws.Signal()), sig: ws.Signal()}
	}
	return ending{code: 125}
}

// execFailure is the exit status for a command the monitor could not
// execute, as a shell gives it: 127 when there is no such file, 126
// otherwise.
func execFailure(err error) int {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return 127
	}
	return 126
}
