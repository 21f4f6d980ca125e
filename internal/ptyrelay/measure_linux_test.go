//go:build linux

package ptyrelay

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestThroughput measures 300 MB written by a command through the relay
// (pty, relay, the user's pty) against the same bytes through a pipe and
// through one pty with no relay. It only measures (set
// PTYRELAY_MEASURE=1); the run's numbers go to the log.
func TestThroughput(t *testing.T) {
	if os.Getenv("PTYRELAY_MEASURE") == "" {
		t.Skip("set PTYRELAY_MEASURE=1 to measure 300 MB through the relay, a pipe and a bare pty")
	}
	const n = 300_000_000
	mbps := func(d time.Duration) float64 { return n / d.Seconds() / 1e6 }
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	flood := func(stdout *os.File) *exec.Cmd {
		cmd := exec.Command(self, "flood", strconv.Itoa(n))
		cmd.Env = withEnv(os.Environ(), "PTYRELAY_ROLE", "child")
		cmd.Stdout = stdout
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { devnull.Close() })
		cmd.ExtraFiles = []*os.File{devnull}
		return cmd
	}
	direct := func(name string, r io.Reader, w *os.File) time.Duration {
		cmd := flood(w)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		got, _ := io.CopyBuffer(io.Discard, io.LimitReader(r, n), make([]byte, 64<<10))
		d := time.Since(start)
		if err := cmd.Wait(); err != nil || got != n {
			t.Fatalf("%s: %d bytes, %v", name, got, err)
		}
		return d
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pipe := direct("pipe", pr, pw)
	pr.Close()
	m, sl := openOuter(t)
	pty := direct("pty", m, sl)
	m.Close()

	s := newSession(t, opts{mode: "monitor", child: "flood " + strconv.Itoa(n), countOnly: true})
	start := time.Now()
	for s.out.bytes() < n {
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("relay: %d of %d bytes in 5 minutes", s.out.bytes(), n)
		}
		time.Sleep(time.Millisecond)
	}
	relay := time.Since(start)
	end := s.expect("launcher child exited 0")
	t.Logf("300 MB: pipe %v (%.0f MB/s), one pty %v (%.0f MB/s), relay %v (%.0f MB/s): the relay takes %.2fx the pipe's time, %.2fx one pty's; launcher at the end: %s",
		pipe.Round(time.Millisecond), mbps(pipe), pty.Round(time.Millisecond), mbps(pty), relay.Round(time.Millisecond), mbps(relay),
		relay.Seconds()/pipe.Seconds(), relay.Seconds()/pty.Seconds(), end)
}
