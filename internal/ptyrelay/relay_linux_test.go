//go:build linux

package ptyrelay

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// isRaw reports whether the modes are the relay's raw ones.
func isRaw(t unix.Termios) bool {
	return t.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) == 0 && t.Oflag&unix.OPOST == 0
}

// TestRelayInputOutput: what is typed on the user's terminal reaches the
// command, its output reaches the terminal, the command's descriptors
// that were the terminal are another terminal (the slave, with the
// user's modes: the erase character set here), a pipe on stdout stays a
// pipe, and the terminal is raw while the command runs and has its
// modes back after. The control is the same run without a relay, where
// the command's terminal is the user's own.
func TestRelayInputOutput(t *testing.T) {
	for _, mode := range []string{"monitor", "direct"} {
		t.Run(mode, func(t *testing.T) {
			s := newSession(t, opts{mode: mode, child: "ids echo", verase: 0x08})
			before := s.initial
			ids := s.expect("child ids")
			if got := field(t, ids, "tty"); got != "111" {
				t.Errorf("the command's descriptors 0-2 are terminals %s, want 111", got)
			}
			if got := field(t, ids, "verase"); got != "8" {
				t.Errorf("the inner terminal's erase character is %s, want the user's 8", got)
			}
			outer, err := unix.IoctlGetUint32(int(s.mfd), unix.TIOCGPTN)
			if err != nil {
				t.Fatal(err)
			}
			if got := field(t, ids, "dev"); got == strconv.Itoa(int(unix.Mkdev(136, outer))) {
				t.Errorf("the command's terminal is the user's own (device %s)", got)
			}
			s.expect("child ready")
			if !isRaw(s.modes()) {
				t.Errorf("the user's terminal is not raw while the command runs: lflag %#x", s.modes().Lflag)
			}
			s.typeIn("hello\r")
			s.waitOut("got hello")
			s.typeIn("quit\r")
			s.expect("launcher child exited 0")
			s.expect("launcher closed <nil>")
			if after := s.modes(); after != before {
				t.Errorf("modes after the run %+v, want those before %+v", after, before)
			}
		})
	}
	t.Run("stdout a pipe", func(t *testing.T) {
		s := newSession(t, opts{mode: "monitor", child: "ids stdout echo", stdoutPipe: true})
		if got := field(t, s.expect("child ids"), "tty"); got != "101" {
			t.Errorf("the command's descriptors 0-2 are terminals %s, want 101 (stdout a pipe)", got)
		}
		s.expect("child ready")
		s.typeIn("hi\r") // "got hi" goes to the pipe
		s.typeIn("\x04") // and ^D ends stdin
		s.expect("child eof")
		s.expect("launcher child exited 0")
		s.expect("launcher closed <nil>")
		<-s.pipe.done
		if got := s.pipe.String(); got != "to-stdout\ngot hi\n" {
			t.Errorf("the stdout pipe got %q, want the command's output", got)
		}
		if strings.Contains(s.out.String(), "to-stdout") || strings.Contains(s.out.String(), "got hi") {
			t.Errorf("the command's stdout reached the terminal: %q", s.out.String())
		}
	})
	t.Run("control: no relay", func(t *testing.T) {
		s := newSession(t, opts{mode: "norelay", child: "ids"})
		outer, err := unix.IoctlGetUint32(int(s.mfd), unix.TIOCGPTN)
		if err != nil {
			t.Fatal(err)
		}
		if got := field(t, s.expect("child ids"), "dev"); got != strconv.Itoa(int(unix.Mkdev(136, outer))) {
			t.Errorf("without a relay the command's terminal is device %s, want the user's own", got)
		}
	})
}

// TestSessionAndGroup: the command's process group and session are not
// the launcher's (nor anything else's outside: the group and session ids
// are the command's own, or the monitor's, inside the sandbox). The
// control is the same run without a relay, where both are the launcher's.
func TestSessionAndGroup(t *testing.T) {
	for _, mode := range []string{"monitor", "direct", "norelay"} {
		t.Run(mode, func(t *testing.T) {
			s := newSession(t, opts{mode: mode, child: "ids"})
			l := s.expect("launcher ids")
			c := s.expect("child ids")
			lpgid, lsid := field(t, l, "pgid"), field(t, l, "sid")
			cpid, cpgid, csid := field(t, c, "pid"), field(t, c, "pgid"), field(t, c, "sid")
			if mode == "norelay" {
				if cpgid != lpgid || csid != lsid {
					t.Fatalf("control: without a relay the command's group %s and session %s should be the launcher's %s and %s", cpgid, csid, lpgid, lsid)
				}
				return
			}
			if cpgid == lpgid || csid == lsid {
				t.Errorf("the command's group %s or session %s is the launcher's (%s, %s)", cpgid, csid, lpgid, lsid)
			}
			if cpgid != cpid {
				t.Errorf("the command's group %s is not its own (pid %s)", cpgid, cpid)
			}
			started := field(t, "x="+strings.TrimPrefix(s.expect("launcher started"), "launcher started "), "x")
			if want := map[string]string{"monitor": started, "direct": cpid}[mode]; csid != want {
				t.Errorf("the command's session %s is led by %s, want %s", csid, csid, want)
			}
			if got := field(t, c, "fg"); got != cpgid {
				t.Errorf("the inner terminal's foreground group is %s, want the command's %s", got, cpgid)
			}
		})
	}
}

// TestKillZero: kill(0, SIGKILL) from the command ends its own process
// group, not the launcher. The control, without a relay, kills the
// launcher (the shell sees it die of SIGKILL).
func TestKillZero(t *testing.T) {
	for _, mode := range []string{"monitor", "direct", "norelay"} {
		t.Run(mode, func(t *testing.T) {
			s := newSession(t, opts{mode: mode, child: "kill0"})
			s.expect("child kill0")
			if mode == "norelay" {
				s.expect("shell signaled 9")
				return
			}
			s.expect("launcher child signaled 9")
			s.expect("launcher closed <nil>")
			s.expect("shell exited 0")
		})
	}
}

// TestGroupPriority: setpriority(PRIO_PGRP, 0, 19) from the command
// renices its own group, not the launcher's. The control, without a
// relay, renices the launcher.
func TestGroupPriority(t *testing.T) {
	for _, mode := range []string{"monitor", "norelay"} {
		t.Run(mode, func(t *testing.T) {
			s := newSession(t, opts{mode: mode, child: "prio"})
			s.expect("child prio <nil>")
			want := "nice=0"
			if mode == "norelay" {
				want = "nice=19"
			}
			if l := s.expect("launcher child exited 0"); !strings.HasSuffix(l, want) {
				t.Errorf("%q, want %s", l, want)
			}
		})
	}
}

// TestWindowSize: the inner terminal starts with the user's terminal's
// size (a fresh pair is 0x0: the control that the copy happened), and
// follows it on SIGWINCH.
func TestWindowSize(t *testing.T) {
	s := newSession(t, opts{mode: "monitor", child: "winch echo", rows: 31, cols: 97})
	s.expect("child size 31 97")
	s.expect("child ready")
	s.resize(42, 133)
	s.expect("child size 42 133")
	s.typeIn("quit\r")
	s.expect("launcher child exited 0")
}

// TestJobControl: ^Z typed inside stops the command; the launcher sees
// it, gives the terminal its modes back and stops itself, so the shell
// has the terminal; on fg the terminal is raw again, the inner terminal
// gets the size it took meanwhile, and the command runs and reads again.
// The control is the command leading the session itself (mode direct):
// the kernel discards ^Z's SIGTSTP for its orphaned group, which is why
// the monitor exists.
func TestJobControl(t *testing.T) {
	t.Run("monitor", func(t *testing.T) {
		s := newSession(t, opts{mode: "monitor", child: "ids winch echo", rows: 24, cols: 80})
		before := s.initial
		pid := field(t, s.expect("child ids"), "pid")
		s.expect("child size 24 80")
		s.expect("child ready")
		s.typeIn("\x1a")
		s.expect("launcher child stopped " + strconv.Itoa(int(unix.SIGSTOP)))
		s.expect("shell stopped " + strconv.Itoa(int(unix.SIGTSTP)))
		waitState(t, pid, "T")
		if after := s.modes(); after != before {
			t.Errorf("while stopped the terminal has modes %+v, want the user's %+v", after, before)
		}
		s.resize(50, 150)
		s.say("fg")
		s.expect("launcher continued")
		s.expect("child size 50 150")
		waitState(t, pid, "S")
		if !isRaw(s.modes()) {
			t.Errorf("after fg the terminal is not raw")
		}
		s.typeIn("again\r")
		s.waitOut("got again")
		s.typeIn("quit\r")
		s.expect("launcher child exited 0")
		s.expect("launcher closed <nil>")
		if after := s.modes(); after != before {
			t.Errorf("modes after the run %+v, want %+v", after, before)
		}
	})
	t.Run("bg then fg", func(t *testing.T) {
		s := newSession(t, opts{mode: "monitor", child: "ids echo"})
		before := s.initial
		pid := field(t, s.expect("child ids"), "pid")
		s.expect("child ready")
		s.typeIn("\x1a")
		s.expect("shell stopped")
		s.say("bg")
		s.expect("launcher continued")
		waitState(t, pid, "S")
		// In the background the launcher leaves the terminal alone and
		// does not read it (a read would stop it with SIGTTIN).
		if l, ok := s.next("shell stopped", 500*time.Millisecond); ok {
			t.Errorf("in the background the launcher stopped again: %s", l)
		}
		if after := s.modes(); after != before {
			t.Errorf("in the background the terminal has modes %+v, want the user's %+v", after, before)
		}
		// fg of a running job: the shell gives it the terminal and
		// SIGCONT, and the relay goes raw again.
		s.say("fg")
		deadline := time.Now().Add(timeout)
		for !isRaw(s.modes()) {
			if time.Now().After(deadline) {
				t.Fatal("after fg the terminal did not go raw again")
			}
			time.Sleep(10 * time.Millisecond)
		}
		s.typeIn("back\r")
		s.waitOut("got back")
		s.typeIn("quit\r")
		s.expect("launcher child exited 0")
	})
	t.Run("control: direct", func(t *testing.T) {
		s := newSession(t, opts{mode: "direct", child: "ids echo"})
		pid := field(t, s.expect("child ids"), "pid")
		s.expect("child ready")
		s.typeIn("\x1a")
		if l, ok := s.next("launcher child stopped", time.Second); ok {
			t.Fatalf("control: the command leading its session stopped on ^Z (%s); the monitor would not be needed", l)
		}
		if st, _ := procState(pid); st == "T" {
			t.Fatal("control: the command leading its session is stopped")
		}
		s.typeIn("quit\r")
		s.expect("launcher child exited 0")
	})
}

// TestModesRestored: the user's terminal gets its modes back on every way
// a run ends: the command exits, is killed from outside, or ends on a
// SIGTERM the launcher forwards, and when the launcher panics with Close
// deferred. The control is a launcher that panics without Close deferred:
// the terminal stays raw, so the check can fail.
func TestModesRestored(t *testing.T) {
	cases := []struct {
		name, mode string
		end        func(s *session, child, launcher string)
		restored   bool
	}{
		{"command exits", "monitor", func(s *session, _, _ string) { s.typeIn("quit\r") }, true},
		{"command killed", "monitor", func(s *session, child, _ string) { kill(s.t, child, unix.SIGKILL) }, true},
		{"command killed, direct", "direct", func(s *session, child, _ string) { kill(s.t, child, unix.SIGKILL) }, true},
		{"SIGTERM to the launcher", "monitor", func(s *session, _, launcher string) { kill(s.t, launcher, unix.SIGTERM) }, true},
		{"launcher panics", "panic", nil, true},
		{"control: launcher panics without Close", "panic-nodefer", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t, opts{mode: c.mode, child: "ids echo"})
			before := s.initial
			launcher := strings.TrimPrefix(s.expect("shell launcher"), "shell launcher ")
			child := field(t, s.expect("child ids"), "pid")
			s.expect("child ready")
			if !isRaw(s.modes()) {
				t.Fatal("the terminal is not raw while the command runs")
			}
			if c.end != nil {
				c.end(s, child, launcher)
			}
			s.expect("shell exited")
			after := s.modes()
			switch {
			case c.restored && after != before:
				t.Errorf("modes after %s: %+v, want %+v", c.name, after, before)
			case !c.restored && !isRaw(after):
				t.Errorf("control: the terminal left without Close is not raw (%+v): the check could not fail", after)
			}
		})
	}
}

func kill(t *testing.T, pid string, sig unix.Signal) {
	t.Helper()
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(n, sig); err != nil {
		t.Fatalf("kill %s: %v", pid, err)
	}
}

// TestDrainAtExit: output the command wrote just before it exited reaches
// the terminal whole, also from a terminal slower than the command: the
// test reads 1 KiB every 2 ms, so when the command exits the relay is
// blocked writing to the terminal and the rest is still in the pty.
func TestDrainAtExit(t *testing.T) {
	for _, c := range []struct {
		mode string
		n    int
		slow bool
	}{
		{"monitor", 1 << 20, false},
		{"direct", 1 << 20, false},
		{"monitor", 256 << 10, true},
		{"direct", 256 << 10, true},
	} {
		t.Run(fmt.Sprintf("%s %d slow=%v", c.mode, c.n, c.slow), func(t *testing.T) {
			s := newSession(t, opts{mode: c.mode, child: "flood " + strconv.Itoa(c.n), countOnly: true, slowRead: c.slow})
			s.expect("launcher child exited 0")
			s.expect("launcher closed <nil>")
			s.expect("shell exited 0")
			deadline := time.Now().Add(timeout)
			for s.out.bytes() < int64(c.n) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			if got := s.out.bytes(); got != int64(c.n) {
				t.Errorf("the terminal got %d bytes, want the %d the command wrote", got, c.n)
			}
		})
	}
}

// TestOuterHangup: when the user's terminal goes away (its master
// closed, as when a terminal emulator's window closes), the relay hangs
// up the inner terminal: the command gets SIGHUP from it, though the
// launcher here forwards no signal (the kernel's SIGHUP to the launcher
// is dropped), and the run ends.
func TestOuterHangup(t *testing.T) {
	s := newSession(t, opts{mode: "monitor", child: "hup echo", noForward: true})
	s.expect("child ready")
	if err := s.master.Close(); err != nil {
		t.Fatal(err)
	}
	s.expect("child sighup")
	s.expect("launcher child exited 0")
	s.expect("launcher closed")
}

// TestJobControlUnderBash: the same suspend and resume with a real
// interactive bash as the user's shell: ^Z inside stops the command,
// bash reports the launcher stopped and takes the terminal, and its fg
// continues the launcher, which continues the command.
func TestJobControlUnderBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	master, slave := openOuter(t)
	reports := filepath.Join(t.TempDir(), "reports")
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Env = append(os.Environ(), "PS1=PROMPT> ", "TERM=dumb", "HISTFILE=/dev/null")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	out := newSink(false)
	go out.drain(master)
	t.Cleanup(func() {
		master.Close()
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() || os.Getenv("PTYRELAY_SHOW") != "" {
			b, _ := os.ReadFile(reports)
			t.Logf("reports:\n%s\nterminal: %q", b, out.String())
		}
	})
	s := &session{t: t, master: master, out: out}
	report := func(line string) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			b, _ := os.ReadFile(reports)
			if strings.Contains(string(b), line) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no report %q within %s", line, timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.waitOut("PROMPT> ")
	s.typeIn("PTYRELAY_ROLE=launcher PTYRELAY_MODE=monitor PTYRELAY_CHILD='ids echo' " + self + " 3>>" + reports + "\r")
	report("child ready")
	s.typeIn("\x1a")
	report("launcher child stopped 19")
	s.waitOut("Stopped")
	s.typeIn("fg\r")
	report("launcher continued")
	s.typeIn("again\r")
	s.waitOut("got again")
	s.typeIn("quit\r")
	report("launcher closed <nil>")
	s.typeIn("exit\r")
	select {
	case <-exited:
	case <-time.After(timeout):
		t.Fatal("bash did not exit")
	}
}
