package darwin

import "syscall"

// placement is where a command runs among sessions and process groups,
// decided as on Linux (sandbox/linux's launch).
type placement struct {
	// interactive: stdin is a terminal whose foreground process group is
	// wrun's. The command stays in wrun's process group, so the
	// terminal's job control (Ctrl-C, Ctrl-Z) reaches both, and the
	// signals the terminal sends the whole group are not forwarded again.
	interactive bool
	// setsid: not interactive, and none of the command's descriptors is a
	// terminal. The command leads a session of its own, which has no
	// controlling terminal: /dev/tty fails (ENXIO), and it cannot make
	// itself the foreground of the terminal wrun's session has, read what
	// is typed there or type into it (TIOCSTI needs the controlling
	// terminal). Its session id is its pid, so it still leads the process
	// group wrun signals.
	setsid bool
	// setpgid: not interactive but holding a terminal: a process group of
	// its own in wrun's session (it holds that terminal anyway).
	setpgid bool
}

// place decides the placement of a command from whether the run is
// interactive and whether any of the command's descriptors is a terminal.
func place(interactive, holdsTerminal bool) placement {
	switch {
	case interactive:
		return placement{interactive: true}
	case holdsTerminal:
		return placement{setpgid: true}
	}
	return placement{setsid: true}
}

// forwardTo returns the pid (negative: the process group) to forward sig
// to, for a command whose pid is pid, or 0 to forward nothing: in an
// interactive run the terminal has sent SIGINT and SIGQUIT to the whole
// foreground group already.
func (pl placement) forwardTo(pid int, sig syscall.Signal) int {
	if !pl.interactive {
		return -pid
	}
	if sig == syscall.SIGINT || sig == syscall.SIGQUIT {
		return 0
	}
	return pid
}

// killTo returns what to kill to end the command: its process group,
// unless it shares wrun's.
func (pl placement) killTo(pid int) int {
	if pl.interactive {
		return pid
	}
	return -pid
}
