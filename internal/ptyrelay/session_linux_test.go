//go:build linux

package ptyrelay

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// timeout bounds every wait of a test for a process to say or do something.
const timeout = 15 * time.Second

// opts describe one session: the launcher's mode and the child's
// arguments (roles_linux_test.go), and the outer terminal before it starts.
type opts struct {
	mode       string
	child      string
	stdoutPipe bool   // the launcher's stdout is a pipe to the test, not the terminal
	noForward  bool   // the launcher forwards no signal to the child
	rows, cols uint16 // the outer terminal's size, if set
	verase     byte   // the outer terminal's erase character, if set
	countOnly  bool   // count the terminal's output, keep none of it
	slowRead   bool   // read the terminal 1 KiB at a time, 2 ms apart
}

// session is a user's terminal (a pseudo-terminal pair this test opens:
// the test types on the master and reads what reaches the screen) with a
// job-control shell leading its session, running the launcher.
type session struct {
	t        *testing.T
	master   *os.File
	mfd      int
	initial  unix.Termios // the terminal's modes before the shell started
	shell    *exec.Cmd
	control  *os.File
	out      *sink // what reached the outer terminal
	pipe     *sink // the launcher's stdout pipe, with stdoutPipe
	mu       sync.Mutex
	lines    []string
	used     []bool
	changed  chan struct{}
	reported chan struct{} // closed when every role closed the report pipe
}

// sink collects what a reader gets, or only counts it.
type sink struct {
	mu      sync.Mutex
	b       bytes.Buffer
	n       int64
	count   bool
	slow    bool
	done    chan struct{}
	changed chan struct{}
}

func newSink(count bool) *sink {
	return &sink{count: count, done: make(chan struct{}), changed: make(chan struct{}, 1)}
}

func (k *sink) drain(r io.Reader) {
	defer close(k.done)
	buf := make([]byte, 64<<10)
	if k.slow {
		buf = buf[:1<<10]
	}
	for {
		if k.slow {
			time.Sleep(2 * time.Millisecond)
		}
		n, err := r.Read(buf)
		if n > 0 {
			k.mu.Lock()
			k.n += int64(n)
			if !k.count {
				k.b.Write(buf[:n])
			}
			k.mu.Unlock()
			select {
			case k.changed <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

func (k *sink) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.b.String()
}

func (k *sink) bytes() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

// openOuter opens the user's terminal: a non-blocking master the test
// reads and types on, and its slave.
func openOuter(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		t.Fatalf("TIOCGPTPEER: %v", errno)
	}
	return os.NewFile(uintptr(m), "outer master"), os.NewFile(s, "outer slave")
}

func newSession(t *testing.T, o opts) *session {
	t.Helper()
	master, slave := openOuter(t)
	defer slave.Close()
	sfd := int(slave.Fd())
	if o.rows > 0 {
		if err := unix.IoctlSetWinsize(sfd, unix.TIOCSWINSZ, &unix.Winsize{Row: o.rows, Col: o.cols}); err != nil {
			t.Fatal(err)
		}
	}
	if o.verase != 0 {
		tm, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		tm.Cc[unix.VERASE] = o.verase
		if err := unix.IoctlSetTermios(sfd, unix.TCSETS, tm); err != nil {
			t.Fatal(err)
		}
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, master: master, control: ctlW, out: newSink(o.countOnly), changed: make(chan struct{}, 1), reported: make(chan struct{})}
	if s.mfd, err = rawFD(master); err != nil {
		t.Fatal(err)
	}
	s.initial = s.modes()
	cmd := exec.Command(self)
	env := withEnv(os.Environ(), "PTYRELAY_ROLE", "shell")
	env = withEnv(env, "PTYRELAY_MODE", o.mode)
	env = withEnv(env, "PTYRELAY_CHILD", o.child)
	if o.noForward {
		env = withEnv(env, "PTYRELAY_NOFORWARD", "1")
	}
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.ExtraFiles = []*os.File{repW, ctlR}
	var pipeW *os.File
	if o.stdoutPipe {
		var pipeR *os.File
		if pipeR, pipeW, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
		cmd.Env = withEnv(cmd.Env, "PTYRELAY_STDOUT_PIPE", "1")
		cmd.ExtraFiles = append(cmd.ExtraFiles, pipeW)
		s.pipe = newSink(false)
		go func() { s.pipe.drain(pipeR); pipeR.Close() }()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.shell = cmd
	repW.Close()
	ctlR.Close()
	if pipeW != nil {
		pipeW.Close()
	}
	go s.readReports(repR)
	s.out.slow = o.slowRead
	go s.out.drain(master)
	t.Cleanup(func() {
		_ = master.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = ctlW.Close()
		<-s.reported
		if t.Failed() {
			t.Logf("reports:\n%s\nterminal: %q", strings.Join(s.allLines(), "\n"), s.out.String())
		}
	})
	// The launcher reports "started" once Started has returned: only
	// from then on is the terminal raw and what is typed the command's
	// (a ^Z typed earlier stops the launcher, as it would any program).
	// The launcher may also end first (the control of TestKillZero).
	if !s.seen("launcher started", "shell exited", "shell signaled") {
		t.Fatalf("the launcher did not start within %s", timeout)
	}
	return s
}

func (s *session) readReports(r *os.File) {
	defer close(s.reported)
	defer r.Close()
	var part []byte
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		part = append(part, buf[:n]...)
		for {
			i := bytes.IndexByte(part, '\n')
			if i < 0 {
				break
			}
			s.mu.Lock()
			s.lines = append(s.lines, string(part[:i]))
			s.used = append(s.used, false)
			s.mu.Unlock()
			part = part[i+1:]
			select {
			case s.changed <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *session) allLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// next returns the first report not yet taken that starts with prefix,
// waiting at most d; ok is false if none came.
func (s *session) next(prefix string, d time.Duration) (string, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i, l := range s.lines {
			if !s.used[i] && strings.HasPrefix(l, prefix) {
				s.used[i] = true
				s.mu.Unlock()
				return l, true
			}
		}
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-s.reported:
			// Every writer is gone: one last look.
			s.mu.Lock()
			for i, l := range s.lines {
				if !s.used[i] && strings.HasPrefix(l, prefix) {
					s.used[i] = true
					s.mu.Unlock()
					return l, true
				}
			}
			s.mu.Unlock()
			return "", false
		case <-deadline.C:
			return "", false
		}
	}
}

// seen waits for a report starting with one of prefixes, without
// taking it.
func (s *session) seen(prefixes ...string) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for _, l := range s.lines {
			for _, p := range prefixes {
				if strings.HasPrefix(l, p) {
					s.mu.Unlock()
					return true
				}
			}
		}
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-s.reported:
			return false
		case <-deadline.C:
			return false
		}
	}
}

// expect is next that fails the test when no such report comes.
func (s *session) expect(prefix string) string {
	s.t.Helper()
	l, ok := s.next(prefix, timeout)
	if !ok {
		s.t.Fatalf("no report %q within %s", prefix, timeout)
	}
	return l
}

// waitOut waits for text to reach the outer terminal.
func (s *session) waitOut(text string) {
	s.t.Helper()
	deadline := time.After(timeout)
	for !strings.Contains(s.out.String(), text) {
		select {
		case <-s.out.changed:
		case <-s.out.done:
			if !strings.Contains(s.out.String(), text) {
				s.t.Fatalf("the terminal closed without showing %q", text)
			}
		case <-deadline:
			s.t.Fatalf("%q did not reach the terminal within %s", text, timeout)
		}
	}
}

// typeIn types b on the user's terminal.
func (s *session) typeIn(b string) {
	s.t.Helper()
	if _, err := s.master.Write([]byte(b)); err != nil {
		s.t.Fatalf("typing %q: %v", b, err)
	}
}

// modes are the user's terminal's modes now.
func (s *session) modes() unix.Termios {
	s.t.Helper()
	tm, err := unix.IoctlGetTermios(s.mfd, unix.TCGETS)
	if err != nil {
		s.t.Fatal(err)
	}
	return *tm
}

// resize gives the user's terminal a new size, as a terminal emulator
// does when its window changes (the kernel sends its foreground SIGWINCH).
func (s *session) resize(rows, cols uint16) {
	s.t.Helper()
	if err := unix.IoctlSetWinsize(s.mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		s.t.Fatal(err)
	}
}

// say tells the shell what to do with its stopped job: "fg" or "bg".
func (s *session) say(cmd string) {
	s.t.Helper()
	if _, err := s.control.WriteString(cmd + "\n"); err != nil {
		s.t.Fatal(err)
	}
}

// field returns the value of key=value in a report line.
func field(t *testing.T, line, key string) string {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in %q", key, line)
	return ""
}

// procState is the state letter of process pid (R, S, T, ...).
func procState(pid string) (string, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", errors.New("unreadable stat")
	}
	return string(b[i+2]), nil
}

// waitState waits for process pid to reach state.
func waitState(t *testing.T, pid, state string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := procState(pid)
		if err == nil && got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s is in state %q (%v), want %q", pid, got, err, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
