//go:build linux

package integration

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// unixListener listens on a UNIX socket (abstract when name starts with
// "@") outside the sandbox, for the test's life, and reports each
// connection it accepts.
func unixListener(t *testing.T, name string) chan struct{} {
	t.Helper()
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if !strings.HasPrefix(name, "@") {
		// Reachable by the mode bits: only the sandbox may stand between.
		if err := os.Chmod(name, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	return accepted
}

func arrived(ch chan struct{}, wait time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(wait):
		return false
	}
}

// TestDesktopSockets: the sockets a desktop tool would use — an X11
// display's abstract socket, the session bus, a docker.sock-style socket
// that would hand out the host — are refused to a child whose grant has
// desktop=off and reachable with desktop=on (the control that shows the
// refusal is the grant's). Today desktop=off refuses creating any UNIX
// socket; with UNIX-socket mediation it refuses reaching these; either
// way the listener must see nothing.
func TestDesktopSockets(t *testing.T) {
	if !bins.features.Seccomp {
		t.Skip("needs seccomp: desktop=off refuses UNIX sockets with it")
	}
	ws := workspace(t)
	dir := sharedWorkspace(t) // 0755: the mode bits let the child reach it
	id := strconv.Itoa(os.Getpid())
	sockets := []struct {
		name, probe, addr string
	}{
		{"X11 display (abstract socket)", "abstract", "/tmp/.X11-unix/X" + id},
		{"session bus (pathname socket)", "unix", filepath.Join(dir, "bus")},
		{"docker.sock-style socket", "unix", filepath.Join(dir, "docker.sock")},
	}
	for _, s := range sockets {
		t.Run(s.name, func(t *testing.T) {
			escapeAttempt(t)
			listenOn := s.addr
			if s.probe == "abstract" {
				listenOn = "@" + s.addr
			}
			accepted := unixListener(t, listenOn)
			if got := bare(t, runOpts{dir: ws}, s.probe, s.addr); got != "ok" || !arrived(accepted, 5*time.Second) {
				t.Fatalf("control without wrun: %s", got)
			}
			for _, g := range []string{"inspect", "full", "full,tools=read+search+edit+shell+web+spawn+mcp"} {
				got := probe(t, runOpts{dir: ws}, g, s.probe, s.addr)
				if arrived(accepted, 100*time.Millisecond) {
					t.Errorf("ESCAPE under --grant %s: the connection arrived (%s)", g, got)
				}
				if !strings.HasPrefix(got, "err ") {
					t.Errorf("--grant %s: %s, want a refusal", g, got)
				}
			}
			// The control under wrun: with desktop=on the same socket is
			// reachable, so the refusal above is desktop=off's.
			g := "inspect,desktop=on,tools=read+search+shell+desktop"
			if got := probe(t, runOpts{dir: ws}, g, s.probe, s.addr); got != "ok" || !arrived(accepted, 5*time.Second) {
				t.Errorf("--grant %s: %s, want the socket reachable", g, got)
			}
		})
	}
	// A child without desktop cannot type into the terminal either
	// (TIOCSTI); it stays refused with desktop=on.
	t.Run("TIOCSTI", func(t *testing.T) {
		escapeAttempt(t)
		requireTool(t, "script") // a terminal on stdin
		if r := run(t, runOpts{dir: ws}, "script", "-qec", bins.probe+" tiocsti", "/dev/null"); !strings.Contains(r.stdout, "ok") {
			t.Fatalf("control TIOCSTI without wrun: %s", r)
		}
		for _, g := range []string{"full", "inspect,desktop=on,tools=read+desktop"} {
			r := run(t, runOpts{dir: ws}, "script", "-qec", bins.wrun+" --grant "+g+" -- "+bins.probe+" tiocsti", "/dev/null")
			if !strings.Contains(r.stdout, "err EPERM") {
				t.Errorf("TIOCSTI under --grant %s: %s", g, r)
			}
		}
	})
}

// TestToolsDecisionMatchesTheGrant: the built wrun answers a harness with
// the same grant it runs children under, bounded by the same ceiling and
// by an enclosing wrun's grant.
func TestToolsDecisionMatchesTheGrant(t *testing.T) {
	ws := workspace(t)
	o := runOpts{dir: ws, env: []string{"XDG_CONFIG_HOME=" + t.TempDir(), "WRUN_GRANT=", "WRUN_CEILING="}}
	check := func(o runOpts, args ...string) result {
		return wrun(t, o, append([]string{"tools", "check"}, args...)...)
	}
	if r := check(o, "--grant", "inspect", "Read", "Grep", "Bash"); r.code != 0 {
		t.Errorf("inspect's families: %s", r)
	}
	if r := check(o, "--grant", "inspect", "computer"); r.code != 1 || !strings.Contains(r.stdout, "not-granted") {
		t.Errorf("a desktop tool under inspect: %s", r)
	}
	if r := check(o, "--grant", "inspect,desktop=on,tools=read+desktop", "computer"); r.code != 1 || !strings.Contains(r.stdout, "desktop-requires-reason") {
		t.Errorf("a desktop tool without a reason: %s", r)
	}
	if r := check(o, "--grant", "inspect,desktop=on,tools=read+desktop", "--reason", "the test", "computer"); r.code != 0 {
		t.Errorf("a desktop tool with desktop=on, the family and a reason: %s", r)
	}
	if r := check(o, "--grant", "inspect", "mcp__anything__x"); r.code != 1 || !strings.Contains(r.stdout, "unknown") {
		t.Errorf("an unlabelled MCP tool: %s", r)
	}
	if r := check(o, "--grant", "inspect,shell=none,tools=shell", "Bash"); r.code != 125 {
		t.Errorf("the shell family with shell=none: %s", r)
	}
	// Inside a wrun whose grant has no edit family, a harness asking for
	// write gets inspect's families: a nested wrun only narrows.
	nested := o
	nested.env = append(append([]string{}, o.env...), "WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off")
	if r := check(nested, "--grant", "write", "Edit"); r.code != 1 || !strings.Contains(r.stdout, "narrowed to the enclosing wrun's WRUN_GRANT") {
		t.Errorf("Edit inside an inspect wrun: %s", r)
	}
	// And a grant's tools= reaches the child: a nested wrun there can
	// only narrow it.
	r := wrun(t, o, "--grant", "inspect,tools=read", "--", bins.wrun, "tools", "check", "--grant", "inspect", "Read", "Bash")
	if r.code != 1 || !strings.Contains(r.stdout, "Read: allowed") || !strings.Contains(r.stdout, "Bash: denied, not-granted") {
		t.Errorf("tools=read inside the sandbox: %s", r)
	}
}

// TestEscapeAbstractSocketBelowScope: below Landlock ABI 6 nothing in the
// kernel scopes abstract UNIX sockets; wrun's socket mediation, which
// makes the command's connects, reaches only abstract names the
// sandbox's own sockets hold. Simulated with WRUN_LANDLOCK_ABI=5; the
// same at this kernel's own ABI as a second row, with desktop=on as the
// control.
func TestEscapeAbstractSocketBelowScope(t *testing.T) {
	if !bins.features.Seccomp {
		t.Skip("needs seccomp user notification: the socket mediation")
	}
	ws := workspace(t)
	name := "/wrun-test-abstract-" + strconv.Itoa(os.Getpid())
	accepted := unixListener(t, "@"+name)
	if got := bare(t, runOpts{dir: ws}, "abstract", name); got != "ok" || !arrived(accepted, 5*time.Second) {
		t.Fatalf("control without wrun: %s", got)
	}
	for _, abi := range []string{"5", ""} {
		o := runOpts{dir: ws}
		if abi != "" {
			o.env = []string{"WRUN_LANDLOCK_ABI=" + abi}
		}
		for _, g := range []string{"inspect,network=on", "full"} {
			t.Run("ABI "+abi+" "+g, func(t *testing.T) {
				escapeAttempt(t)
				got := probe(t, o, g, "abstract", name)
				if arrived(accepted, 200*time.Millisecond) {
					t.Fatalf("ESCAPE under --grant %s: the connection arrived (%s)", g, got)
				}
				if !strings.HasPrefix(got, "err ") {
					t.Errorf("--grant %s: %s, want a refusal", g, got)
				}
			})
		}
		g := "inspect,network=on,desktop=on"
		if got := probe(t, o, g, "abstract", name); got != "ok" || !arrived(accepted, 5*time.Second) {
			t.Errorf("ABI %q --grant %s: %s, want the socket reachable", abi, g, got)
		}
	}
}
