//go:build linux

package integration

import (
	"github.com/wrun-dev/wrun/sandbox/linux"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPseudoTerminals: a child opens a new pseudo-terminal pair as pty
// libraries do (/dev/ptmx, TIOCGPTN, unlockpt, /dev/pts/N) and sends a
// line each way through it, under every preset; the same probe bare is
// the control.
func TestPseudoTerminals(t *testing.T) {
	if !linux.Mediates(matrixFeatures(runOpts{})) {
		t.Skip("a pty's /dev/pts/N is opened by the mediation (seccomp user notification); without it /dev/pts stays hidden (new pairs only through TIOCGPTPEER)")
	}
	ws := workspace(t)
	if got := bare(t, runOpts{dir: ws}, "pty"); got != "ok" {
		t.Fatalf("control: a pty round trip without wrun: %s", got)
	}
	for _, g := range []string{"inspect", "verify", "write", "full"} {
		t.Run(g, func(t *testing.T) {
			if got := probe(t, runOpts{dir: ws}, g, "pty"); got != "ok" {
				t.Errorf("a pty round trip under --grant %s: %s, want ok", g, got)
			}
		})
	}
	// With a terminal on stdout (script(1)), the inherited terminal is
	// still reopened through /dev/stdout beside the sandbox's own ptys.
	t.Run("inherited terminal", func(t *testing.T) {
		requireTool(t, "script") // a terminal on stdout
		inner := bins.probe + " pty && echo reopened > /dev/stdout"
		ctl := run(t, runOpts{dir: ws}, "script", "-qec", "sh -c '"+inner+"'", "/dev/null")
		if !strings.Contains(ctl.stdout, "ok") || !strings.Contains(ctl.stdout, "reopened") {
			t.Fatalf("control without wrun: %s", ctl)
		}
		args := strings.Join(wrunArgs(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", inner), "' '")
		r := run(t, runOpts{dir: ws}, "script", "-qec", bins.wrun+" '"+args+"'", "/dev/null")
		if !strings.Contains(r.stdout, "ok") || !strings.Contains(r.stdout, "reopened") {
			t.Errorf("under --grant verify in a terminal: %s", r)
		}
	})
}

// TestPseudoTerminalLimit: the sandbox holds at most 256 pairs at once,
// so a command cannot use up the machine's pseudo-terminals
// (kernel.pty.max, shared by every devpts instance but the host's) for
// the containers and sandboxes beside it. The control opens more than
// that without wrun.
func TestPseudoTerminalLimit(t *testing.T) {
	if !linux.Mediates(matrixFeatures(runOpts{})) {
		t.Skip("the limit is the mediation's (seccomp user notification); without it the sandbox opens no new pairs through /dev/pts")
	}
	requireTool(t, "python3") // opens pseudo-terminals in a loop
	ws := workspace(t)
	script := `import os
fds = []
try:
    while len(fds) < 300:
        fds.append(os.openpty())
except OSError as e:
    print(len(fds), e.errno)
else:
    print(len(fds), 0)
`
	ctl := run(t, runOpts{dir: ws}, "python3", "-c", script)
	if strings.TrimSpace(ctl.stdout) != "300 0" {
		t.Fatalf("control: 300 pairs without wrun: %s", ctl)
	}
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "python3", "-c", script)
	if got := strings.TrimSpace(r.stdout); got != "256 "+strconv.Itoa(int(unix.ENOSPC)) {
		t.Errorf("under --grant verify: %q, want 256 pairs, then ENOSPC:\n%s", got, r)
	}
}

// TestEscapePseudoTerminalOutside: a terminal outside the sandbox (a pty
// pair this test opens, as another session's would be) cannot be opened
// by the child under any preset: wrun opens /dev/pts/N only for a pair
// the sandbox made, and without the mediation /dev/pts is hidden by
// Landlock. The control opens it bare.
func TestEscapePseudoTerminalOutside(t *testing.T) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	outside := "/dev/pts/" + strconv.Itoa(n)
	ws := workspace(t)
	if got := bare(t, runOpts{dir: ws}, "open-tty", outside); got != "ok" {
		t.Fatalf("control: opening %s without wrun: %s", outside, got)
	}
	for _, g := range []string{"inspect", "verify", "full"} {
		t.Run(g, func(t *testing.T) {
			escapeAttempt(t)
			got := probe(t, runOpts{dir: ws, bestEffort: true}, g, "open-tty", outside)
			want := "err EACCES"
			if !strings.HasPrefix(got, want) {
				t.Errorf("opening the outside terminal %s under --grant %s: %s, want %s", outside, g, got, want)
			}
		})
	}
}

// TestSharedMemory: POSIX shared memory and named semaphores live in
// /dev/shm. wrun gives the child a /dev/shm of its own there: it may
// create files (shm_open, sem_open) and use those, a file an outside
// process keeps in /dev/shm stays out of its reach, and what the child
// made is gone after the run. The controls read and write it bare.
func TestSharedMemory(t *testing.T) {
	if !linux.Mediates(matrixFeatures(runOpts{})) {
		t.Skip("a private /dev/shm needs the mediation (seccomp user notification); without it /dev/shm stays hidden")
	}
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	ws := workspace(t)
	outside := "/dev/shm/wrun-itest-outside-" + uniqueArg()
	if err := os.WriteFile(outside, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outside) })
	mine := "/dev/shm/wrun-itest-inside-" + uniqueArg()
	t.Cleanup(func() { os.Remove(mine) })
	if got := bare(t, runOpts{dir: ws}, "read", outside); got != "ok" {
		t.Fatalf("control: reading %s bare: %s", outside, got)
	}
	if got := bare(t, runOpts{dir: ws}, "write", mine); got != "ok" || !exists(mine) {
		t.Fatalf("control: creating %s bare: %s", mine, got)
	}
	os.Remove(mine)
	for _, g := range []string{"inspect", "verify"} {
		t.Run(g, func(t *testing.T) {
			escapeAttempt(t)
			if got := probe(t, runOpts{dir: ws}, g, "read", outside); !strings.HasPrefix(got, "err EACCES") {
				t.Errorf("reading the host's %s under --grant %s: %s, want EACCES (a /dev/shm of its own)", outside, g, got)
			}
			if got := probe(t, runOpts{dir: ws}, g, "write", mine); got != "ok" {
				t.Errorf("creating %s under --grant %s: %s, want ok", mine, g, got)
			}
			if exists(mine) {
				t.Errorf("the child's %s appeared in the host's /dev/shm", mine)
			}
		})
	}
	// A named semaphore, as Python's multiprocessing makes one.
	requireTool(t, "python3")
	lock := "import multiprocessing as m; l = m.Lock(); l.acquire(); l.release(); print('locked')"
	if ctl := run(t, runOpts{dir: ws}, "python3", "-c", lock); !strings.Contains(ctl.stdout, "locked") {
		t.Fatalf("control: a multiprocessing lock bare:\n%s", ctl)
	}
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "python3", "-c", lock)
	if !strings.Contains(r.stdout, "locked") || strings.Contains(r.stderr, "denied") {
		t.Errorf("a multiprocessing lock under verify:\n%s", r)
	}
}

// TestRandomDeviceIoctl: reading /dev/random's entropy count with an
// ioctl (golang.org/x/sys's TestIoctlGetInt does) works under every
// preset; the control does it bare. The ioctls that change the pool need
// CAP_SYS_ADMIN, which the child never has.
func TestRandomDeviceIoctl(t *testing.T) {
	ws := workspace(t)
	if got := bare(t, runOpts{dir: ws}, "rndgetentcnt", "/dev/random"); got != "ok" {
		t.Skipf("RNDGETENTCNT does not work bare here: %s", got)
	}
	for _, g := range []string{"inspect", "verify"} {
		if got := probe(t, runOpts{dir: ws}, g, "rndgetentcnt", "/dev/random"); got != "ok" {
			t.Errorf("RNDGETENTCNT on /dev/random under --grant %s: %s, want ok", g, got)
		}
	}
}
