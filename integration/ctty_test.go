//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEscapeControllingTerminal: wrun runs with no terminal on its
// stdin, stdout or stderr (a harness's pipes) but in a session that has a
// controlling terminal (the harness's, where its user types). The child
// did not inherit that terminal, so it must not reach it: opening
// /dev/tty fails, and it can neither write to the terminal nor make
// itself the terminal's foreground to read what the user types. Control:
// the same script bare, in the same kind of session, opens /dev/tty and
// its line appears on the terminal.
func TestEscapeControllingTerminal(t *testing.T) {
	const script = `printf 'INJECTED\n' >/dev/tty && echo opened`
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			ws := modeDir(t, m)
			o := modeOpts(m, ws)
			if out, term := inTerminalSession(t, o, "/bin/sh", "-c", script); !strings.Contains(out, "opened") || !strings.Contains(term, "INJECTED") {
				t.Fatalf("control: bare, in a session with a terminal: stdout %q, terminal %q", out, term)
			}
			escapeAttempt(t)
			for _, g := range []string{"verify", "full"} {
				argv := append([]string{bins.wrun}, wrunArgs(t, o, "--grant", g, "--", "/bin/sh", "-c", script)...)
				out, term := inTerminalSession(t, o, argv...)
				if strings.Contains(out, "opened") || strings.Contains(term, "INJECTED") {
					t.Errorf("--grant %s: the child reached the session's terminal it did not inherit: stdout %q, terminal %q", g, out, term)
				}
			}
		})
	}
}

// inTerminalSession runs argv in a new session whose controlling
// terminal is a new pseudo-terminal, with stdin, stdout and stderr pipes
// (none of them the terminal); it returns the standard output and what
// reached the terminal.
func inTerminalSession(t *testing.T, o runOpts, argv ...string) (string, string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	if o.cred != nil {
		_ = slave.Chown(int(o.cred.Uid), int(o.cred.Gid))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), o.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The terminal rides as descriptor 3 only to be made the session's
	// controlling terminal.
	cmd.ExtraFiles = []*os.File{slave}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3, Credential: o.cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not finish in 2 minutes", argv)
	}
	slave.Close()
	var term bytes.Buffer
	buf := make([]byte, 4096)
	_ = unix.SetNonblock(int(master.Fd()), true)
	for {
		k, err := unix.Read(int(master.Fd()), buf)
		if k <= 0 || err != nil {
			break
		}
		term.Write(buf[:k])
	}
	if t.Failed() || !strings.Contains(stdout.String(), "opened") {
		t.Logf("%v: stderr %s", argv, stderr.String())
	}
	return stdout.String(), term.String()
}
