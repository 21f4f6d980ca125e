// Package ptyrelay gives an interactive sandboxed command a terminal of its
// own, as sudo's use_pty does, so that it shares no process group and no
// session with anything outside the sandbox.
//
// Without it, a command run with a terminal on its standard input stays in
// wrun's process group and session: kill(0, SIGKILL) from the command ends
// wrun, setpriority(PRIO_PGRP, 0, 19) renices the user's shell, and the
// command holds the user's terminal itself (modes, TIOCSPGRP, O_NONBLOCK on
// the shared file description). With a relay, wrun allocates a new
// pseudo-terminal pair, the command gets the slave as the controlling
// terminal of a session of its own, and wrun copies bytes between its own
// terminal (the "outer" one, in raw mode while the command runs) and the
// master. The command's process group and session then hold only the
// sandbox's processes.
//
// # Why a monitor
//
// A process whose parent is in another session leads an orphaned process
// group, and Linux discards the job-control stop signals (SIGTSTP from ^Z,
// SIGTTIN, SIGTTOU) sent to such a group while their action is the default
// (kernel/signal.c, is_current_pgrp_orphaned). A command that wrun forks
// straight into a session of its own could therefore never be suspended
// with ^Z. So the session is led by a small monitor, the launcher's own
// binary re-executed inside the sandbox (Relay.Command, MaybeMonitor): it
// is the only process in the session's first group, runs the command as the
// foreground group of a second one (whose parent, the monitor, is in the same
// session: not orphaned), and mirrors the command's state in its own: when
// the command stops it stops itself with SIGSTOP, which the launcher's wait4
// with WUNTRACED sees; when continued it continues the command; when the
// command ends it ends with the same exit status or by the same signal. The
// monitor holds nothing the command lacks: it runs in the command's sandbox,
// with its descriptors, and only relays wait statuses and signals. A launcher
// may also fork the command directly as the session leader (skip Command);
// everything else works, but ^Z then only suspends jobs of a job-control shell
// run as the command, not the command itself.
//
// # How a launcher uses it
//
// Before the sandbox is applied (Start opens /dev/ptmx and reads the outer
// terminal), in wrun's main and around the fork:
//
//	func main() {
//		ptyrelay.MaybeMonitor() // never returns in a monitor
//		...
//	}
//
//	r, err := ptyrelay.Start(stdin) // nil, nil: stdin is no foreground terminal
//	if err != nil {
//		return err // or fall back to a process group of its own
//	}
//	defer r.Close() // every exit path; nil-safe, idempotent
//	files := []uintptr{fd(r.Replace(stdin)), fd(r.Replace(stdout)), fd(r.Replace(stderr))}
//	path, argv = r.Command("/proc/self/exe", path, argv, len(files))
//	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
//	r.Apply(sys) // Setsid, Setctty, Ctty 0; clears Setpgid and Foreground
//	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Files: files, Sys: sys})
//	if err != nil {
//		return err // the deferred Close restores nothing it did not change
//	}
//	r.Started(pid) // raw mode, copying, SIGWINCH
//	for {
//		var ws syscall.WaitStatus
//		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err == syscall.EINTR {
//			continue
//		}
//		if ws.Stopped() {
//			r.Stopped(ws.StopSignal()) // outer modes restored; returns once wrun is continued
//			r.Continued()              // raw again, current size, the command continued
//			continue
//		}
//		break
//	}
//	// end what the command left behind, then Close: the output drains
//	// until the last holder of the slave has closed it.
//
// Every method is nil-safe, so the launcher needs no branch for runs without
// a terminal. Replace hands the slave in place of any descriptor that is the
// outer terminal (compared by TIOCGDEV, so /dev/tty counts too) and leaves
// pipes and files alone; stdin is always replaced, which is why Apply sets
// Ctty to 0. With a relay, the launcher forwards every signal it catches to
// pid, SIGINT and SIGQUIT included: the outer terminal is raw, so ^C reaches
// the command as a byte through the inner terminal's line discipline, and a
// SIGINT wrun receives came from kill, not from the keyboard. Between Started
// and Close the outer terminal is raw: wrun's own messages must wait for
// Close (or go to a descriptor that is not the terminal).
//
// What the calls need from the kernel: Start opens /dev/ptmx (the peer
// through TIOCGPTPEER, so a nested relay works inside a sandbox whose
// /dev/pts is hidden, with /dev/pts/N as the fallback) and reads the outer
// terminal's modes, size and foreground group. Started, Stopped and Continued
// set the outer terminal's modes and the master's size (descriptors opened by
// Start, before any Landlock domain), signal the caller's own thread (tgkill)
// and the child's process group; they may run on a restricted launch thread
// if its seccomp filter allows TCSETS, TIOCGWINSZ, TIOCSWINSZ, TIOCGPGRP,
// tgkill and kill. The monitor needs execute and read rights on the binary it
// is exec'd from, inside the sandbox.
//
// # Terminal state
//
// The outer terminal's modes are saved by Start, copied to the inner terminal
// with the window size, and restored by Close and by Stopped: after the
// command exits, on a panic in the goroutine that deferred Close or in the
// relay's own goroutines (which restore before re-panicking), after a
// forwarded SIGTERM, SIGINT or SIGHUP ends the command. A SIGKILL of wrun or
// a panic in an unrelated goroutine leaves the terminal raw (`stty sane`
// repairs it); nothing in a process can restore after those.
//
// Job control: ^Z typed inside reaches the inner line discipline, which stops
// the command; the monitor stops; the launcher's Stopped restores the outer
// modes and stops wrun with the same signal (SIGTSTP for a SIGSTOP, which
// would hang wrun forever under a parent without job control, where the
// kernel discards SIGTSTP instead and the run simply continues). On SIGCONT
// (the shell's fg), Continued re-enters raw mode if wrun is the terminal's
// foreground again, gives the inner terminal the current size and continues
// the command. After bg, wrun leaves the outer terminal alone and does not
// read it, the command runs on, and the next fg (a SIGCONT while running)
// re-enters raw mode.
//
// EOF and hangup: the command's exit leaves its output in the master, which
// Close drains until every holder of the slave has closed it (EIO), or
// 100 ms pass with nothing to read (time spent writing to a slow terminal
// does not count), or 1 MiB came after Close began (a leftover process that
// keeps writing); Close waits at most 5 s for a terminal that takes nothing. The outer terminal's hangup
// (POLLHUP, or a read of 0 or EIO) closes the master, which hangs up the
// inner terminal: SIGHUP to the session's leader and foreground group.
//
// Memory: each direction copies through one 32 KiB buffer with blocking
// writes, so a slow reader on either side stops the other side's copying
// (the kernel's terminal buffers fill and the writer blocks) rather than
// growing a queue.
//
// Cost, measured by TestThroughput (PTYRELAY_MEASURE=1) on a 2-core machine
// under load, 300 MB written by the command: a pipe 0.18-0.25 s, one bare pty
// 2.1-4.9 s, through the relay 3.4-7.8 s, typically 1.6 times one pty's time
// (a second pty and one copy); the launcher used 1.6-2.4 s of CPU, most of it
// in the kernel's pty code, and at most 4.1 MB resident. A terminal is the
// slow part; interactive use never comes near it.
package ptyrelay
