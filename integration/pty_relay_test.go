//go:build linux

package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Interactive runs under a real terminal: a pseudo-terminal pair the test
// opens, whose slave is the controlling terminal of a session the test
// starts (a shell, which runs wrun) and whose master is the user's screen
// and keyboard. wrun, given that terminal on its standard input while it
// is the terminal's foreground, relays it (internal/ptyrelay): the command
// gets a terminal, a session and process groups of its own. Each test
// does the act under wrun and, as the control, bare (the same shell
// running the command itself), where the act reaches the shell, the
// terminal or the group it shares.
//
// What the command prints for the test is a marker, @@KEY followed by
// values; the commands spell it @@""KEY where a shell's echo of a typed
// line could show it, so only the command's output matches.

// ptyWait bounds each wait for a marker or a process state.
const ptyWait = 20 * time.Second

// ptySession is one terminal with a session leader running in it.
type ptySession struct {
	t      *testing.T
	master *os.File
	mfd    int
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
	// initial are the terminal's modes before the session started.
	initial unix.Termios

	mu      sync.Mutex
	out     bytes.Buffer // everything the terminal showed
	changed chan struct{}
	closed  chan struct{} // the master reads no more
}

// startPty runs argv as the leader of a new session whose controlling
// terminal is a new pseudo-terminal of rows x cols (0: none set), with o's
// directory, environment and user. The session, and whatever is left in
// it, ends with the test.
func startPty(t *testing.T, o runOpts, rows, cols uint16, argv ...string) *ptySession {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	master := os.NewFile(uintptr(mfd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	defer slave.Close()
	if o.cred != nil {
		_ = slave.Chown(int(o.cred.Uid), int(o.cred.Gid))
	}
	if rows > 0 {
		if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			master.Close()
			t.Fatal(err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), append(o.env, "PS1=$ ", "PS2=", "TERM=dumb")...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Credential: o.cred}
	s := &ptySession{t: t, master: master, mfd: mfd, cmd: cmd, exited: make(chan struct{}),
		changed: make(chan struct{}, 1), closed: make(chan struct{})}
	s.initial = s.modes()
	if err := cmd.Start(); err != nil {
		master.Close()
		t.Fatalf("starting %v: %v", argv, err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	go s.read()
	t.Cleanup(func() {
		// Whatever is left in the session: its leader's group, the
		// processes of wrun that the test found, then the hangup.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.exited:
		case <-time.After(ptyWait):
			t.Errorf("%v did not end after SIGKILL", argv)
		}
		master.Close()
		<-s.closed
		if t.Failed() {
			t.Logf("the terminal showed:\n%s", s.screen())
		}
	})
	return s
}

// read collects what the terminal shows until every holder of its slave
// has closed it.
func (s *ptySession) read() {
	defer close(s.closed)
	buf := make([]byte, 4096)
	for {
		n, err := s.master.Read(buf)
		if n > 0 {
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
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

func (s *ptySession) screen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// marker returns the values after @@key on the screen (the first such
// line), waiting for it; ok is false when the session ended, or ptyWait
// passed, without it.
func (s *ptySession) marker(key string) (string, bool) {
	deadline := time.NewTimer(ptyWait)
	defer deadline.Stop()
	for {
		scr := s.screen()
		if i := strings.Index(scr, "@@"+key); i >= 0 {
			rest := scr[i+2+len(key):]
			if j := strings.IndexAny(rest, "\r\n"); j >= 0 {
				return strings.TrimSpace(rest[:j]), true
			}
		}
		select {
		case <-s.changed:
		case <-s.closed:
			if scr != s.screen() {
				continue
			}
			return "", false
		case <-deadline.C:
			return "", false
		}
	}
}

// expect is marker that fails the test when the marker does not come.
func (s *ptySession) expect(key string) string {
	s.t.Helper()
	v, ok := s.marker(key)
	if !ok {
		s.t.Fatalf("@@%s did not reach the terminal within %s", key, ptyWait)
	}
	return v
}

// waitText waits for text to appear on the screen.
func (s *ptySession) waitText(text string) {
	s.t.Helper()
	deadline := time.NewTimer(ptyWait)
	defer deadline.Stop()
	for !strings.Contains(s.screen(), text) {
		select {
		case <-s.changed:
		case <-s.closed:
			if !strings.Contains(s.screen(), text) {
				s.t.Fatalf("the terminal closed without showing %q", text)
			}
		case <-deadline.C:
			s.t.Fatalf("%q did not reach the terminal within %s", text, ptyWait)
		}
	}
}

// typeIn types b on the terminal's keyboard.
func (s *ptySession) typeIn(b string) {
	s.t.Helper()
	if _, err := s.master.Write([]byte(b)); err != nil {
		s.t.Fatalf("typing %q: %v", b, err)
	}
}

// wait waits for the session leader to end and returns its wait status.
func (s *ptySession) wait() syscall.WaitStatus {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(ptyWait):
		s.t.Fatalf("the session leader did not end within %s", ptyWait)
	}
	return s.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// modes are the terminal's modes now (TCGETS on a master reads its
// slave's).
func (s *ptySession) modes() unix.Termios {
	s.t.Helper()
	tm, err := unix.IoctlGetTermios(s.mfd, unix.TCGETS)
	if err != nil {
		s.t.Fatal(err)
	}
	return *tm
}

// resize changes the terminal's size, as a terminal emulator does when
// its window changes: the kernel sends SIGWINCH to its foreground group.
func (s *ptySession) resize(rows, cols uint16) {
	s.t.Helper()
	if err := unix.IoctlSetWinsize(s.mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		s.t.Fatal(err)
	}
}

// statFields are the fields of /proc/PID/stat after the command name:
// [0] is the state.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("unreadable stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 17 {
		return nil, errors.New("short stat")
	}
	return f, nil
}

// waitState waits for process pid to be in state ("T": stopped, "S"...).
func waitState(t *testing.T, pid int, state string) {
	t.Helper()
	deadline := time.Now().Add(ptyWait)
	for {
		f, err := statFields(pid)
		if err == nil && f[0] == state {
			return
		}
		if time.Now().After(deadline) {
			got := "gone"
			if err == nil {
				got = f[0]
			}
			t.Fatalf("process %d (%s) is %s, want state %s", pid, commOf(pid), got, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExit waits for process pid to end (to be gone or a zombie).
func waitExit(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(ptyWait)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d (%s) did not end within %s", pid, commOf(pid), ptyWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// childNamed waits for a child of parent whose comm is name and returns
// its pid.
func childNamed(t *testing.T, parent int, name string) int {
	t.Helper()
	deadline := time.Now().Add(ptyWait)
	for {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err == nil && parentOf(pid) == parent && commOf(pid) == name {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no child %q of process %d within %s", name, parent, ptyWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wrunLine is wrun's command line for the command argv under grant g, as
// one shell word each (for a shell to run, or to type).
func wrunLine(t *testing.T, o runOpts, g string, argv ...string) string {
	t.Helper()
	words := append([]string{bins.wrun}, wrunArgs(t, o, append([]string{"--grant", g, "--"}, argv...)...)...)
	for i, w := range words {
		words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}

// relayModes are the environments the class-1 attempts run in.
var relayModes = []escapeMode{modeRoot, modeUser, modeNoMed}

// inner reports the command's process group and session, and its
// terminal.
const innerIDs = `read -r _ _ _ _ pgrp sid _ </proc/$$/stat; echo "@@IDS $pgrp $sid"; echo "@@TTY $(tty)"`

// TestEscapePtyRelaySession: an interactive sh under wrun runs in a
// session and a process group of its own, on a terminal of its own, not
// wrun's (which lead the test's session: the shell exec'd wrun). The
// control runs the same sh bare, where it shares both with its parent.
func TestEscapePtyRelaySession(t *testing.T) {
	for _, m := range relayModes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			o := modeOpts(m, modeDir(t, m))
			ids := func(s *ptySession) (outer, pgrp, sid int, tty string) {
				outer, _ = strconv.Atoi(s.expect("OUTER"))
				f := strings.Fields(s.expect("IDS"))
				if len(f) != 2 {
					t.Fatalf("@@IDS %v", f)
				}
				pgrp, _ = strconv.Atoi(f[0])
				sid, _ = strconv.Atoi(f[1])
				return outer, pgrp, sid, s.expect("TTY")
			}
			outerTTY := `echo "@@OUTER $$"; echo "@@OUTERTTY $(tty)"; exec `
			ctl := startPty(t, o, 0, 0, "/bin/sh", "-c", outerTTY+`/bin/sh -c '`+innerIDs+`'`)
			outer, pgrp, sid, tty := ids(ctl)
			if pgrp != outer || sid != outer || tty != ctl.expect("OUTERTTY") {
				t.Fatalf("control: a bare sh exec'd by the session's leader (%d) has group %d, session %d, terminal %s: the check cannot see sharing", outer, pgrp, sid, tty)
			}
			escapeAttempt(t)
			s := startPty(t, o, 0, 0, "/bin/sh", "-c", outerTTY+wrunLine(t, o, "verify", "/bin/sh", "-c", innerIDs))
			outer, pgrp, sid, tty = ids(s)
			if pgrp == outer || sid == outer {
				t.Errorf("the command under wrun (pid %d, the session's leader) has process group %d and session %d: it shares them with wrun", outer, pgrp, sid)
			}
			if pgrp == sid {
				t.Errorf("the command leads its session's first group (%d): the relay's monitor should, so that ^Z can stop the command's group", pgrp)
			}
			if o := s.expect("OUTERTTY"); tty == o || !strings.HasPrefix(tty, "/dev/pts/") {
				t.Errorf("the command's terminal is %s, the user's is %s: want a pseudo-terminal of its own", tty, o)
			}
			if ws := s.wait(); !ws.Exited() || ws.ExitStatus() != 0 {
				t.Errorf("wrun ended %v, want exit 0", ws)
			}
		})
	}
}

// TestEscapePtyRelayKillGroup: `kill -KILL 0` inside an interactive run
// kills the command's own group, not wrun, which reports the command's
// death (exit 137) to the shell that ran it. The control runs the same
// kill bare: it kills the shell too, which then never reports. (From
// Landlock ABI 6 the signal scope keeps kill(0) from wrun's process even
// in a shared group; below it, without the mediation, as with
// WRUN_LANDLOCK_ABI=5 in the "without the mediation" mode, the command's
// own group is what holds.)
func TestEscapePtyRelayKillGroup(t *testing.T) {
	for _, m := range relayModes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			o := modeOpts(m, modeDir(t, m))
			// A shell without job control: what it runs shares its
			// process group.
			ctl := startPty(t, o, 0, 0, "/bin/sh", "-c", `/bin/sh -c 'kill -KILL 0'; echo "@@AFTER $?"`)
			if ws := ctl.wait(); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("control: the shell that ran a bare kill -KILL 0 ended %v, want killed by SIGKILL", ws)
			}
			if v, ok := ctl.marker("AFTER"); ok {
				t.Fatalf("control: the shell survived a bare kill -KILL 0 (@@AFTER %s)", v)
			}
			escapeAttempt(t)
			s := startPty(t, o, 0, 0, "/bin/sh", "-c", wrunLine(t, o, "verify", "/bin/sh", "-c", "kill -KILL 0")+`; echo "@@AFTER $?"`)
			if v, ok := s.marker("AFTER"); !ok || v != "137" {
				t.Errorf("after kill -KILL 0 under wrun the shell reported %q (seen: %v), want wrun's exit 137 (the command killed by SIGKILL)", v, ok)
			}
			if ws := s.wait(); !ws.Exited() || ws.ExitStatus() != 0 {
				t.Errorf("the shell that ran wrun ended %v, want exit 0", ws)
			}
		})
	}
}

// TestEscapePtyRelayPriority: setpriority(PRIO_PGRP, 0, 19) inside an
// interactive run renices the command's own group, and leaves wrun and
// the shell that ran it (the user's shell) at their nice value. The
// control makes the same call bare, which renices the shell.
func TestEscapePtyRelayPriority(t *testing.T) {
	base := niceOf(os.Getpid())
	if base == "" || base == "19" {
		t.Skipf("the test runs at nice %q: a renice to 19 would show nothing", base)
	}
	// The command sets its group's priority, says so, and waits for a
	// line; the shell reports wrun's status and waits for another.
	const act = `%s setpriority pgrp 0; echo "@@SET $?"; read -r _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ nice _ </proc/$$/stat; echo "@@NICE $nice"; read -r line`
	for _, m := range relayModes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			o := modeOpts(m, modeDir(t, m))
			inner := strings.ReplaceAll(act, "%s", bins.probe)
			ctl := startPty(t, o, 0, 0, "/bin/sh", "-c", `echo "@@OUTER $$"; /bin/sh -c '`+inner+`'; echo "@@AFTER $?"; read -r line`)
			outer, _ := strconv.Atoi(ctl.expect("OUTER"))
			ctl.expect("SET")
			if got := niceOf(outer); got != "19" {
				t.Fatalf("control: a bare setpriority(PRIO_PGRP, 0, 19) left its shell at nice %s, want 19", got)
			}
			ctl.typeIn("\n")
			escapeAttempt(t)
			s := startPty(t, o, 0, 0, "/bin/sh", "-c", `echo "@@OUTER $$"; `+wrunLine(t, o, "verify", "/bin/sh", "-c", inner)+`; echo "@@AFTER $?"; read -r line`)
			outer, _ = strconv.Atoi(s.expect("OUTER"))
			w := childNamed(t, outer, "wrun")
			if v := s.expect("SET"); v != "0" {
				t.Fatalf("setpriority(PRIO_PGRP, 0, 19) under wrun failed (exit %s): the act did not happen", v)
			}
			if v := s.expect("NICE"); v != "19" {
				t.Errorf("the command's own nice is %s after renicing its group, want 19", v)
			}
			if got := niceOf(w); got != base {
				t.Errorf("wrun's nice is %s after the command reniced its group, want %s", got, base)
			}
			if got := niceOf(outer); got != base {
				t.Errorf("the shell that ran wrun is at nice %s after the command reniced its group, want %s", got, base)
			}
			s.typeIn("\n")
			if v := s.expect("AFTER"); v != "0" {
				t.Errorf("wrun exited %s, want 0", v)
			}
			s.typeIn("\n")
			s.wait()
		})
	}
}

// TestPtyRelayJobControl: in a job-control bash, ^Z stops an interactive
// run (wrun and the command), fg resumes it, and what is typed then
// reaches the command. The control does the same with the command bare.
func TestPtyRelayJobControl(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash for job control")
	}
	// The command says it is ready, reads a line, echoes it.
	const inner = `echo @@""READY; read -r l; echo @@""GOT $l`
	o := runOpts{dir: workspace(t)}
	for _, tc := range []struct {
		name, line, comm string
	}{
		{"bare (control)", `/bin/sh -c '` + inner + `'`, "sh"},
		{"wrun", wrunLine(t, o, "verify", "/bin/sh", "-c", inner), "wrun"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startPty(t, o, 0, 0, bash, "--norc", "--noprofile", "--noediting", "-i")
			s.typeIn("echo @@\"\"BASH $$\n")
			shell, _ := strconv.Atoi(s.expect("BASH"))
			s.typeIn(tc.line + "\n")
			s.expect("READY")
			job := childNamed(t, shell, tc.comm)
			s.typeIn("\x1a") // ^Z
			waitState(t, job, "T")
			s.waitText("Stopped")
			s.typeIn("fg\n")
			waitState(t, job, "S")
			s.typeIn("hello\n")
			if v := s.expect("GOT"); v != "hello" {
				t.Errorf("after fg the command read %q, want hello", v)
			}
			// Typed ahead before wrun has ended, a line would go to the
			// relay, which discards it with the inner terminal.
			waitExit(t, job)
			s.typeIn("echo @@\"\"STATUS $?\n")
			if v := s.expect("STATUS"); v != "0" {
				t.Errorf("the job ended with status %s, want 0", v)
			}
			s.typeIn("exit\n")
			s.wait()
		})
	}
}

// TestPtyRelayWindowSize: the command's terminal has the user's
// terminal's size at the start, and a change of that size reaches it
// (SIGWINCH, the new size). The control runs the same command bare.
func TestPtyRelayWindowSize(t *testing.T) {
	const inner = `trap "echo @@WINCH \$(stty size); exit 0" WINCH; echo "@@SIZE $(stty size)"; while :; do sleep 0.05; done`
	o := runOpts{dir: workspace(t)}
	for _, tc := range []struct{ name, line string }{
		{"bare (control)", `exec /bin/sh -c '` + inner + `'`},
		{"wrun", "exec " + wrunLine(t, o, "verify", "/bin/sh", "-c", inner)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startPty(t, o, 33, 111, "/bin/sh", "-c", tc.line)
			if v := s.expect("SIZE"); v != "33 111" {
				t.Errorf("the command's terminal is %q at the start, want 33 111", v)
			}
			// The trap is set before the first size is printed.
			s.resize(44, 122)
			if v := s.expect("WINCH"); v != "44 122" {
				t.Errorf("after the user's terminal became 44x122 the command's is %q, want 44 122", v)
			}
			if ws := s.wait(); !ws.Exited() || ws.ExitStatus() != 0 {
				t.Errorf("ended %v, want exit 0", ws)
			}
		})
	}
}

// TestPtyRelayTerminalModes: the user's terminal has the modes it had
// before the run once wrun has ended: after the command changed its own
// terminal's modes (stty -echo -icanon) and exited, after wrun was told
// to end (SIGTERM) while the command ran, and after ^C typed ended it. Meanwhile the user's
// terminal is raw (the relay's: what changed had to be restored). The
// control makes the same stty change bare, which stays after it exits.
func TestPtyRelayTerminalModes(t *testing.T) {
	const inner = `stty -echo -icanon; echo "@@CHANGED"; read -r l; echo "@@READ $l"`
	o := runOpts{dir: workspace(t)}
	same := func(a, b unix.Termios) bool {
		return a.Iflag == b.Iflag && a.Oflag == b.Oflag && a.Cflag == b.Cflag && a.Lflag == b.Lflag && a.Cc == b.Cc
	}
	t.Run("bare (control)", func(t *testing.T) {
		s := startPty(t, o, 0, 0, "/bin/sh", "-c", `/bin/sh -c '`+inner+`'; echo "@@AFTER $?"; read -r l`)
		before := s.initial
		s.expect("CHANGED")
		s.typeIn("x\n")
		s.expect("AFTER")
		if same(s.modes(), before) {
			t.Fatalf("control: a bare stty -echo -icanon left the terminal's modes as they were: the check cannot see a change")
		}
		s.typeIn("\n")
		s.wait()
	})
	for _, end := range []string{"exit", "SIGTERM", "^C"} {
		t.Run("wrun, "+end, func(t *testing.T) {
			s := startPty(t, o, 0, 0, "/bin/sh", "-c", `echo "@@OUTER $$"; `+wrunLine(t, o, "verify", "/bin/sh", "-c", inner)+`; echo "@@AFTER $?"; read -r l`)
			before := s.initial
			outer, _ := strconv.Atoi(s.expect("OUTER"))
			w := childNamed(t, outer, "wrun")
			s.expect("CHANGED")
			if during := s.modes(); during.Lflag&(unix.ICANON|unix.ECHO) != 0 {
				t.Errorf("while the command runs the user's terminal is not raw (lflag %#o): the relay is not in between", during.Lflag)
			}
			want := "0"
			switch end {
			case "SIGTERM":
				if err := syscall.Kill(w, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				want = strconv.Itoa(128 + int(syscall.SIGTERM))
			case "^C":
				// Through the raw outer terminal to the inner one,
				// whose line discipline sends the command SIGINT.
				s.typeIn("\x03")
				want = strconv.Itoa(128 + int(syscall.SIGINT))
			default:
				s.typeIn("x\n")
				if v := s.expect("READ"); v != "x" {
					t.Errorf("the command read %q, want x", v)
				}
			}
			if v := s.expect("AFTER"); v != want {
				t.Errorf("wrun exited %s, want %s", v, want)
			}
			if after := s.modes(); !same(after, before) {
				t.Errorf("the user's terminal's modes after the run differ from before:\n before %+v\n after  %+v", before, after)
			}
			s.typeIn("\n")
			s.wait()
		})
	}
}

// TestEscapePtyRelayUserTerminal: under the relay the command holds the
// relay's terminal, not the user's, and cannot open the user's by its
// name (/dev/pts/N) to read what is typed there or write to it. It can
// still reopen its own (/dev/stdout; for appending: below Landlock ABI 3
// an open with O_TRUNC is performed by the mediation, which opens only
// pseudo-terminals the sandbox made, the inherited one neither with nor
// without the relay). The control opens the user's terminal bare.
func TestEscapePtyRelayUserTerminal(t *testing.T) {
	const inner = `if (exec 3<>"$1"); then echo "@@OPENED $1"; fi; echo "@@OWN $(tty)" >>/dev/stdout; echo "@@DONE"`
	for _, m := range relayModes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			o := modeOpts(m, modeDir(t, m))
			const outer = `T=$(tty); echo "@@OUTERTTY $T"; exec `
			ctl := startPty(t, o, 0, 0, "/bin/sh", "-c", outer+`/bin/sh -c '`+inner+`' sh "$T"`)
			ctl.expect("DONE")
			if _, ok := ctl.marker("OPENED"); !ok {
				t.Fatalf("control: a bare sh could not open its own terminal %s by name", ctl.expect("OUTERTTY"))
			}
			escapeAttempt(t)
			s := startPty(t, o, 0, 0, "/bin/sh", "-c", outer+wrunLine(t, o, "verify", "/bin/sh", "-c", inner, "sh")+` "$T"`)
			s.expect("DONE")
			if v, ok := s.marker("OPENED"); ok {
				t.Errorf("the command under wrun opened the user's terminal %s", v)
			}
			if v, ok := s.marker("OWN"); !ok || v == s.expect("OUTERTTY") {
				t.Errorf("the command under wrun could not reopen its own terminal (/dev/stdout), or it is the user's: %q", v)
			}
		})
	}
}
