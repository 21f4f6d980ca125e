//go:build linux

package ptyrelay

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// bufSize is each direction's one copy buffer: what the relay holds
	// in memory, however fast one side writes and however slow the other
	// reads.
	bufSize = 32 << 10
	// Close drains the command's last output until EIO (every holder of
	// the slave has closed it), drainIdle without a byte to read (time
	// spent writing to a slow terminal does not count), or drainBytes
	// read (what a process left behind keeps writing); it waits at most
	// drainWait for a terminal that takes nothing.
	drainIdle  = 100 * time.Millisecond
	drainBytes = 1 << 20
	drainWait  = 5 * time.Second
	// inputWait bounds Close's wait for the input copier, which ends at
	// once unless a write to the master is stuck.
	inputWait = time.Second
)

// Relay is one run's pseudo-terminal and the copying between it and the
// outer terminal. A nil *Relay (Start's answer when stdin is no
// foreground terminal) does nothing: every method is nil-safe.
type Relay struct {
	outer  *os.File // the terminal the caller was given on stdin
	ofd    int      // outer's descriptor, read and set without touching its flags
	out    *os.File // where the command's output goes: outer, or outer reopened for writing
	ownOut bool     // out was opened by Start and is closed by Close
	dev    uint32   // the outer terminal's device number (TIOCGDEV)
	saved  unix.Termios

	master *os.File // non-blocking, served by the runtime's poller
	slave  *os.File // wrun's copy, closed by Started
	name   string   // the slave's path, for messages

	wakeR, wakeW int // poked to make the input copier look again (modes changed, Close)

	sigs chan os.Signal // SIGWINCH, SIGCONT

	mu       sync.Mutex
	raw      bool // the outer terminal is in raw mode, and the input copier may read it
	stopping bool // between Stopped and Continued: a SIGCONT seen then changes nothing
	pid      int  // the child, once Started
	started  bool
	closed   bool
	hungUp   bool
	closing  atomic.Bool
	draining atomic.Bool

	done    chan struct{} // closed by Close: ends the signal loop
	outDone chan struct{} // closed when the output copier returns
	inDone  chan struct{} // closed when the input copier returns
	sigDone chan struct{} // closed when the signal loop returns
}

// Start allocates the pseudo-terminal pair for a run whose standard input
// is outer, when outer is a terminal whose foreground process group is the
// caller's (an interactive run); otherwise it returns nil, nil and the
// caller runs the command as it would without a relay. The inner terminal
// starts with the outer one's modes and window size. Nothing changes on
// the outer terminal until Started. The caller keeps outer open until
// Close.
func Start(outer *os.File) (*Relay, error) {
	if outer == nil {
		return nil, nil
	}
	ofd, err := rawFD(outer)
	if err != nil {
		return nil, nil
	}
	if pgrp, err := unix.IoctlGetInt(ofd, unix.TIOCGPGRP); err != nil || pgrp != unix.Getpgrp() {
		return nil, nil
	}
	saved, err := unix.IoctlGetTermios(ofd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("reading the terminal's modes: %w", err)
	}
	dev, err := unix.IoctlGetUint32(ofd, unix.TIOCGDEV)
	if err != nil {
		return nil, fmt.Errorf("reading the terminal's device: %w", err)
	}
	r := &Relay{outer: outer, ofd: ofd, out: outer, dev: dev, saved: *saved, wakeR: -1, wakeW: -1}
	ok := false
	defer func() {
		if !ok {
			r.release()
		}
	}()
	if fl, err := unix.FcntlInt(uintptr(ofd), unix.F_GETFL, 0); err == nil && fl&unix.O_ACCMODE == unix.O_RDONLY {
		// A terminal given read-only (wrun </dev/tty): the output goes to
		// the same terminal opened again for writing.
		f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(ofd), os.O_WRONLY|unix.O_NOCTTY, 0)
		if err != nil {
			return nil, fmt.Errorf("opening the terminal for writing: %w", err)
		}
		r.out, r.ownOut = f, true
	}
	if r.master, r.slave, r.name, err = openPair(); err != nil {
		return nil, err
	}
	sfd, err := rawFD(r.slave)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlSetTermios(sfd, unix.TCSETS, saved); err != nil {
		return nil, fmt.Errorf("giving %s the terminal's modes: %w", r.name, err)
	}
	if ws, err := unix.IoctlGetWinsize(ofd, unix.TIOCGWINSZ); err == nil {
		if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, ws); err != nil {
			return nil, fmt.Errorf("giving %s the terminal's size: %w", r.name, err)
		}
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("making the relay's wake-up pipe: %w", err)
	}
	r.wakeR, r.wakeW = p[0], p[1]
	ok = true
	return r, nil
}

// openPair opens a new pseudo-terminal pair: the master from /dev/ptmx,
// unlocked, and the slave through TIOCGPTPEER (Linux 4.13), which needs
// no path and so works where /dev/pts is another instance or hidden (a
// nested wrun in a sandbox), or else by its name under /dev/pts. Both are
// close-on-exec and opened without becoming the caller's controlling
// terminal; the master is non-blocking, for the runtime's poller.
func openPair() (master, slave *os.File, name string, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, "", fmt.Errorf("opening a pseudo-terminal (/dev/ptmx): %w", err)
	}
	fail := func(err error) (*os.File, *os.File, string, error) {
		_ = unix.Close(m)
		return nil, nil, "", err
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return fail(fmt.Errorf("unlocking a pseudo-terminal: %w", err))
	}
	n, err := unix.IoctlGetUint32(m, unix.TIOCGPTN)
	if err != nil {
		return fail(fmt.Errorf("reading a pseudo-terminal's number: %w", err))
	}
	name = "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	sfd := int(s)
	if errno != 0 {
		if sfd, err = unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err != nil {
			return fail(fmt.Errorf("opening %s: %w", name, err))
		}
	}
	return os.NewFile(uintptr(m), "/dev/ptmx"), os.NewFile(uintptr(sfd), name), name, nil
}

// rawFD is f's descriptor, read without File.Fd's side effect of making
// it blocking (the outer terminal's file description is shared with the
// user's shell).
func rawFD(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return -1, err
	}
	return fd, nil
}

// Slave is the inner terminal as wrun holds it until Started: what
// Replace hands out.
func (r *Relay) Slave() *os.File {
	if r == nil {
		return nil
	}
	return r.slave
}

// Replace returns the slave in place of f when f is the outer terminal
// (the same terminal device, however it was opened: /dev/pts/N, /dev/tty,
// a dup), and f itself otherwise: a pipe or a file on stdout stays what it
// is. Standard input, given to Start, is always replaced.
func (r *Relay) Replace(f *os.File) *os.File {
	if r == nil || f == nil {
		return f
	}
	if f == r.outer {
		return r.slave
	}
	fd, err := rawFD(f)
	if err != nil {
		return f
	}
	if dev, err := unix.IoctlGetUint32(fd, unix.TIOCGDEV); err == nil && dev == r.dev {
		return r.slave
	}
	return f
}

// Apply sets what the child (the monitor, or the command itself) needs to
// lead a session of its own with the slave, its descriptor 0, as the
// controlling terminal. It clears the settings that contradict it: a
// session leader cannot join or lead another process group.
func (r *Relay) Apply(sys *syscall.SysProcAttr) {
	if r == nil || sys == nil {
		return
	}
	sys.Setsid = true
	sys.Setctty = true
	sys.Ctty = 0
	sys.Setpgid = false
	sys.Pgid = 0
	sys.Foreground = false
	sys.Noctty = false
}

// Started is called once the child runs, with its pid: wrun's copy of the
// slave is closed (so the master reads EIO once the child's side has
// closed it), the outer terminal goes raw, and the copying and the
// SIGWINCH and SIGCONT handling begin.
func (r *Relay) Started(pid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.started || r.closed {
		r.mu.Unlock()
		return
	}
	r.started, r.pid = true, pid
	_ = r.slave.Close()
	r.sigs = make(chan os.Signal, 4)
	r.done = make(chan struct{})
	r.outDone = make(chan struct{})
	r.inDone = make(chan struct{})
	r.sigDone = make(chan struct{})
	signal.Notify(r.sigs, unix.SIGWINCH, unix.SIGCONT)
	if r.foreground() {
		r.enterRaw()
		r.resize()
	}
	r.mu.Unlock()
	go r.copyOut()
	go r.copyIn()
	go r.signals()
}

// Stopped is called when the child stopped (wait4 with WUNTRACED said so)
// with sig: the outer terminal gets its modes back, the input copier stops
// reading it, and wrun stops itself with the same job-control signal
// (selfStopSignal) so the user's shell regains the terminal. It returns
// once wrun has been continued (or, under a parent without job control,
// at once); the caller then calls Continued.
func (r *Relay) Stopped(sig syscall.Signal) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopping = true
	r.leaveRaw()
	r.mu.Unlock()
	r.poke()
	stopSelf(selfStopSignal(sig))
}

// stopSelf stops the whole process with sig, sent to the calling thread
// so that the stop takes effect before the call returns: a signal sent to
// the process could be taken by another thread while this one runs on.
func stopSelf(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
}

// Continued resumes a stopped run: if wrun is the outer terminal's
// foreground again (fg), the terminal goes raw, the inner one gets its
// current size and the copier reads again; in the background (bg) the
// outer terminal is left alone. Either way the child's process group is
// continued.
func (r *Relay) Continued() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopping = false
	pid := r.pid
	if r.started && !r.closed && r.foreground() {
		r.enterRaw()
		r.resize()
	}
	r.mu.Unlock()
	r.poke()
	if pid > 0 {
		_ = unix.Kill(-pid, unix.SIGCONT)
	}
}

// Close ends the relay, on every path: the input copier stops, the
// command's remaining output is drained (until EIO, drainIdle without a
// byte to read, or drainBytes), the outer terminal gets the modes it had at Start,
// and the master is closed, which hangs up the inner terminal for
// whatever still holds it. It may be called more than once, and before
// Started (a launch that failed).
func (r *Relay) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if !started {
		r.release()
		return nil
	}
	signal.Stop(r.sigs)
	close(r.done)
	<-r.sigDone
	// Input first, so no byte is read from the outer terminal in its
	// restored modes.
	r.closing.Store(true)
	r.poke()
	_ = r.master.SetWriteDeadline(time.Now())
	inEnded := wait(r.inDone, inputWait)
	r.draining.Store(true)
	_ = r.master.SetReadDeadline(time.Now().Add(drainIdle))
	wait(r.outDone, drainWait)
	r.mu.Lock()
	err := r.restore()
	r.mu.Unlock()
	_ = r.master.Close()
	if inEnded {
		r.closeWake()
	}
	if r.ownOut {
		_ = r.out.Close()
	}
	return err
}

// wait waits for c to close, at most d; it reports whether it did.
func wait(c <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}

// release closes what Start opened, for a relay that never started.
func (r *Relay) release() {
	if r.master != nil {
		_ = r.master.Close()
	}
	if r.slave != nil {
		_ = r.slave.Close()
	}
	r.closeWake()
	if r.ownOut {
		_ = r.out.Close()
	}
}

func (r *Relay) closeWake() {
	if r.wakeR >= 0 {
		_ = unix.Close(r.wakeR)
		_ = unix.Close(r.wakeW)
		r.wakeR, r.wakeW = -1, -1
	}
}

// foreground reports whether the caller's process group is the outer
// terminal's foreground (so changing its modes stops nobody with SIGTTOU).
func (r *Relay) foreground() bool {
	pgrp, err := unix.IoctlGetInt(r.ofd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// enterRaw puts the outer terminal in raw mode; r.mu is held.
func (r *Relay) enterRaw() {
	if r.raw || r.hungUp {
		return
	}
	t := makeRaw(r.saved)
	if unix.IoctlSetTermios(r.ofd, unix.TCSETS, &t) == nil {
		r.raw = true
	}
}

// leaveRaw gives the outer terminal back its saved modes; r.mu is held.
func (r *Relay) leaveRaw() {
	if r.raw {
		_ = r.restore()
	}
}

// restore sets the saved modes if the terminal is raw; r.mu is held.
func (r *Relay) restore() error {
	if !r.raw {
		return nil
	}
	r.raw = false
	if r.hungUp {
		return nil
	}
	if err := unix.IoctlSetTermios(r.ofd, unix.TCSETS, &r.saved); err != nil {
		return fmt.Errorf("restoring the terminal's modes: %w", err)
	}
	return nil
}

// resize gives the inner terminal the outer one's size; the kernel sends
// SIGWINCH to the inner foreground group when it changed. r.mu is held.
func (r *Relay) resize() {
	ws, err := unix.IoctlGetWinsize(r.ofd, unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	if rc, err := r.master.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
	}
}

// poke makes the input copier look at the modes (and r.closing) again.
func (r *Relay) poke() {
	if r.wakeW >= 0 {
		_, _ = unix.Write(r.wakeW, []byte{0})
	}
}

// hangup is the outer terminal's end (POLLHUP, EOF, EIO): closing the
// master hangs up the inner terminal (SIGHUP to its session leader and
// foreground group), whose output has nowhere to go any more.
func (r *Relay) hangup() {
	r.mu.Lock()
	r.hungUp = true
	r.raw = false
	r.mu.Unlock()
	_ = r.master.Close()
}

// restoreOnPanic is deferred by the relay's goroutines: a panic there
// gives the terminal its modes back before it ends the program.
func (r *Relay) restoreOnPanic() {
	if p := recover(); p != nil {
		// The panic may have come with r.mu held (signals holds it
		// around resize): restore without it rather than hang.
		locked := r.mu.TryLock()
		_ = r.restore()
		if locked {
			r.mu.Unlock()
		}
		panic(p)
	}
}

// signals follows SIGWINCH (the outer size changed: copy it in) and
// SIGCONT (fg while running in the background: raw mode again). A SIGCONT
// handled while Stopped is under way (one from an earlier fg, late) must
// not make the terminal raw just as the user's shell takes it back; the
// resume after a stop is Continued's.
func (r *Relay) signals() {
	defer close(r.sigDone)
	defer r.restoreOnPanic()
	for {
		select {
		case <-r.done:
			return
		case s := <-r.sigs:
			r.mu.Lock()
			switch {
			case s == unix.SIGWINCH:
				r.resize()
			case s == unix.SIGCONT && !r.stopping && !r.raw && r.foreground():
				r.enterRaw()
				r.resize()
			}
			r.mu.Unlock()
			r.poke()
		}
	}
}

// copyOut copies the command's output from the master to the outer
// terminal until the master reads EIO (every holder of the slave closed
// it) or is closed, or, once Close drains, no byte came for drainIdle or
// drainBytes came.
func (r *Relay) copyOut() {
	defer close(r.outDone)
	defer r.restoreOnPanic()
	buf := make([]byte, bufSize)
	broken := false // the outer terminal refused a write: output is discarded
	drained := 0
	for {
		n, err := r.master.Read(buf)
		if n > 0 && !broken {
			if _, werr := r.out.Write(buf[:n]); werr != nil {
				broken = true
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !r.draining.Load() {
				continue
			}
			return
		}
		if r.draining.Load() {
			if drained += n; drained >= drainBytes {
				return
			}
			// Idle counts from here: the write just done may have
			// waited on a slow terminal.
			_ = r.master.SetReadDeadline(time.Now().Add(drainIdle))
		}
	}
}

// copyIn copies what is typed on the outer terminal to the master while
// the terminal is raw. It reads only after poll says a byte is there, so
// a read never blocks in raw mode, and it watches the wake-up pipe, so
// Close, Stopped and Continued are seen at once. It does not read while
// wrun is stopped or in the background (no SIGTTIN for wrun), but still
// sees the terminal hang up.
func (r *Relay) copyIn() {
	defer close(r.inDone)
	defer r.restoreOnPanic()
	buf := make([]byte, bufSize)
	drain := make([]byte, 64)
	for {
		if r.closing.Load() {
			return
		}
		r.mu.Lock()
		raw := r.raw
		r.mu.Unlock()
		var events int16
		if raw {
			events = unix.POLLIN
		}
		fds := []unix.PollFd{{Fd: int32(r.ofd), Events: events}, {Fd: int32(r.wakeR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			for {
				if n, _ := unix.Read(r.wakeR, drain); n <= 0 {
					break
				}
			}
			continue
		}
		ev := fds[0].Revents
		if ev&unix.POLLNVAL != 0 {
			return
		}
		if ev&(unix.POLLHUP|unix.POLLERR) != 0 && ev&unix.POLLIN == 0 {
			r.hangup()
			return
		}
		if ev&unix.POLLIN == 0 {
			continue
		}
		r.mu.Lock()
		raw = r.raw
		r.mu.Unlock()
		if !raw {
			continue
		}
		n, err := unix.Read(r.ofd, buf)
		switch {
		case err != nil && (errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN)):
			continue
		case n == 0 || err != nil:
			// A raw terminal (VMIN 1) reads 0 only once hung up; EIO is
			// a hung-up terminal or an orphaned background reader.
			r.hangup()
			return
		}
		if _, err := r.master.Write(buf[:n]); err != nil {
			return
		}
	}
}
