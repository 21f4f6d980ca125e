//go:build linux

package integration

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/sandbox/linux"
)

// outsideSocket is a UNIX socket an unsandboxed process (the test)
// bound, counting what reaches it.
type outsideSocket struct {
	path string
	got  atomic.Int64
}

// listenOutside binds a socket of type typ ("unix", "unixpacket" or
// "unixgram") at dir/name, open to every user (so that a refusal is the
// sandbox's, not the file mode's), and counts the connections accepted or
// datagrams received until the test ends.
func listenOutside(t *testing.T, dir, name, typ string) *outsideSocket {
	t.Helper()
	s := &outsideSocket{path: filepath.Join(dir, name)}
	if typ == "unixgram" {
		c, err := net.ListenUnixgram(typ, &net.UnixAddr{Name: s.path, Net: typ})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			b := make([]byte, 256)
			for {
				if _, _, err := c.ReadFrom(b); err != nil {
					return
				}
				s.got.Add(1)
			}
		}()
	} else {
		ln, err := net.Listen(typ, s.path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				s.got.Add(1)
				c.Close()
			}
		}()
	}
	if err := os.Chmod(s.path, 0o777); err != nil {
		t.Fatal(err)
	}
	return s
}

// reached waits briefly for what is in flight and reports whether
// anything reached the socket since the last call, and resets the count.
func (s *outsideSocket) reached() bool {
	time.Sleep(20 * time.Millisecond)
	return s.got.Swap(0) > 0
}

// unixOutsideActs are the ways a child may try to reach a pathname socket
// bound outside the sandbox: the probe's op and the socket type it needs.
var unixOutsideActs = []struct{ op, typ string }{
	{"unix", "unix"},
	{"unix-seqpacket", "unixpacket"},
	{"unixgram-sendto", "unixgram"},
	{"unixgram-sendmsg", "unixgram"},
	{"dgram-pair-sendto", "unixgram"},
	{"dgram-pair-sendmsg", "unixgram"},
	{"dgram-pair-connect", "unixgram"},
}

// TestEscapeUnixSocketsOutside: a pathname socket an outside process bound
// in a directory the child can reach (its workspace, writable under the
// write grant) is not reachable from the sandbox by any act: connect of
// each type, sendto and sendmsg with an address from an unbound datagram
// socket, and the same from a datagram socketpair, which needs no socket()
// call at all. Control: the same act, as the same user without wrun,
// reaches it.
func TestEscapeUnixSocketsOutside(t *testing.T) {
	requireABI(t, 1)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			for _, act := range unixOutsideActs {
				t.Run(act.op, func(t *testing.T) {
					escapeAttempt(t)
					ws := modeDir(t, m)
					s := listenOutside(t, ws, "outside.sock", act.typ)
					o := modeOpts(m, ws)
					if got := bare(t, o, act.op, s.path); got != "ok" || !s.reached() {
						t.Fatalf("control: without wrun, %s %s: %s (reached: false)", act.op, s.path, got)
					}
					for _, g := range []string{"verify", "write"} {
						r := wrun(t, o, "--grant", g, "--", bins.probe, act.op, s.path)
						if s.reached() {
							t.Errorf("%s: %s reached the socket outside %s\n%s", g, act.op, s.path, r)
						}
						if strings.TrimSpace(r.stdout) == "ok" {
							t.Errorf("%s: %s reported success\n%s", g, act.op, r)
						}
						// Mediated, the denial names the socket and the
						// narrow alternative.
						if mediated(m) && (!strings.Contains(r.stderr, s.path) || !strings.Contains(r.stderr, "--allow-unix")) {
							t.Errorf("%s: %s: the denial does not name %s and --allow-unix\n%s", g, act.op, s.path, r)
						}
					}
					if !mediated(m) {
						return // AF_UNIX is refused: neither flag below reaches it
					}
					// The narrow alternative and desktop=on reach it.
					for _, args := range [][]string{{"--grant", "verify", "--allow-unix", s.path}, {"--grant", "verify,desktop=on"}} {
						r := wrun(t, o, append(args, "--", bins.probe, act.op, s.path)...)
						if strings.TrimSpace(r.stdout) != "ok" || !s.reached() {
							t.Errorf("%v: %s did not reach %s\n%s", args, act.op, s.path, r)
						}
					}
				})
			}
		})
	}
}

// mediated reports whether wrun, run as mode m, mediates UNIX sockets
// (seccomp user notification and pidfd_getfd, below Landlock ABI 9)
// rather than refusing them.
func mediated(m escapeMode) bool {
	o := runOpts{cred: m.cred, env: m.env}
	f := matrixFeatures(o)
	return f.LandlockABI < 9 && linux.MediatesSockets(f)
}

// TestUnixSocketsInsideSandbox: a Go program under --grant verify listens
// on UNIX sockets of each type in its TMPDIR (and, under write, in the
// workspace), connects and sends to them, with absolute and relative
// paths; a server checking its peer's uid (SO_PEERCRED) sees the
// program's own. Control: the same program without wrun.
func TestUnixSocketsInsideSandbox(t *testing.T) {
	requireABI(t, 1)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			ws := modeDir(t, m)
			o := modeOpts(m, ws)
			if got := bare(t, o, "unix-self", ws); got != "ok" {
				t.Fatalf("control: %s", got)
			}
			os.RemoveAll(filepath.Join(ws, "rel.sock"))
			sh := bins.probe + ` unix-self "$TMPDIR" && ` + bins.probe + ` unix-peercred "$TMPDIR"`
			for _, g := range []string{"verify", "verify --observe=off"} {
				args := append(strings.Fields("--grant "+g), "--", "sh", "-c", sh)
				r := wrun(t, o, args...)
				if !mediated(m) {
					// AF_UNIX sockets are refused here (no mediation):
					// the program fails, and says why.
					if r.code == 0 {
						t.Errorf("%s: UNIX sockets worked without mediation\n%s", g, r)
					}
					continue
				}
				if r.code != 0 || !strings.Contains(r.stdout, "server sees pid") {
					t.Errorf("%s: UNIX sockets inside the sandbox\n%s", g, r)
				}
			}
			if !mediated(m) {
				return
			}
			// Under write: in the workspace.
			sub := filepath.Join(ws, "socks")
			if err := os.Mkdir(sub, 0o777); err != nil || os.Chmod(sub, 0o777) != nil {
				t.Fatal(err)
			}
			r := wrun(t, o, "--grant", "write", "--", bins.probe, "unix-self", sub)
			if strings.TrimSpace(r.stdout) != "ok" {
				t.Errorf("write: UNIX sockets in the workspace\n%s", r)
			}
		})
	}
}

// TestEscapeUnixSocketRace: threads of the child rewrite the address of a
// connect and of a sendto between a socket of its own and one bound
// outside, and swap the descriptor the calls name (dup2), many times
// while other threads connect and send. A check of the address in the
// child's memory followed by letting the call continue would lose this
// race; the mediation performs the call with the address it copied, on
// the socket it took. Control: without wrun the same program reaches the
// outside sockets.
func TestEscapeUnixSocketRace(t *testing.T) {
	requireABI(t, 1)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			escapeAttempt(t)
			ws := modeDir(t, m)
			st := listenOutside(t, ws, "out-stream.sock", "unix")
			dg := listenOutside(t, ws, "out-dgram.sock", "unixgram")
			o := modeOpts(m, ws)
			own := filepath.Join(ws, "own")
			if err := os.Mkdir(own, 0o777); err != nil || os.Chmod(own, 0o777) != nil {
				t.Fatal(err)
			}
			if got := bare(t, o, "unix-race", st.path, dg.path, own, "300"); !strings.HasSuffix(got, "ok") || !st.reached() && !dg.reached() {
				t.Fatalf("control: the race never reached the outside sockets without wrun: %s", got)
			}
			st.reached()
			dg.reached()
			sh := bins.probe + " unix-race " + st.path + " " + dg.path + ` "$TMPDIR" 300`
			r := wrun(t, o, "--grant", "verify", "--", "sh", "-c", sh)
			if st.reached() || dg.reached() {
				t.Errorf("the race reached a socket outside\n%s", r)
			}
			if mediated(m) && !strings.Contains(r.stdout, "calls succeeded") {
				t.Errorf("the race did not run\n%s", r)
			}
		})
	}
}

// TestEscapeUnixSocketsNested: a wrun inside another cannot hold the
// listener (the kernel allows one): the inner refuses AF_UNIX sockets,
// and the outer's mediation still sees what reaches the kernel. Neither
// a connect nor a datagram from the inner sandbox reaches a socket
// outside both.
func TestEscapeUnixSocketsNested(t *testing.T) {
	requireABI(t, 1)
	for _, act := range []struct{ op, typ string }{{"unix", "unix"}, {"dgram-pair-sendto", "unixgram"}, {"unixgram-sendmsg", "unixgram"}} {
		t.Run(act.op, func(t *testing.T) {
			escapeAttempt(t)
			ws := workspace(t)
			s := listenOutside(t, ws, "outside.sock", act.typ)
			if got := bare(t, runOpts{dir: ws}, act.op, s.path); got != "ok" || !s.reached() {
				t.Fatalf("control: %s", got)
			}
			r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", bins.wrun, "--grant", "verify", "--", bins.probe, act.op, s.path)
			if s.reached() || strings.Contains(r.stdout, "ok") {
				t.Errorf("a nested run reached the socket outside\n%s", r)
			}
		})
	}
}

// TestEscapeUnixSocketsKeepBackground: a process kept in the background
// connects to a socket outside after wrun has exited, and makes a file
// beside .git. wrun's keeper goes on mediating what the run left: the
// connect is refused (EACCES), not let through, and the file is made; the
// keeper ends once the last kept process has. Control: the same act
// without wrun reaches the socket.
func TestEscapeUnixSocketsKeepBackground(t *testing.T) {
	requireABI(t, 1)
	if !mediated(modeRoot) {
		t.Skip("UNIX sockets are refused, not mediated, here (TestEscapeUnixSocketsOutside covers it)")
	}
	escapeAttempt(t)
	ws := workspace(t)
	newRepo(t, ws)
	s := listenOutside(t, workspace(t), "outside.sock", "unix")
	if got := bare(t, runOpts{dir: ws}, "unix", s.path); got != "ok" || !s.reached() {
		t.Fatalf("control: %s", got)
	}
	out := filepath.Join(ws, "bg.out")
	sh := "(sleep 1; echo made > made-later; " + bins.probe + " unix " + s.path + " > " + out + " 2>&1; exec sleep 0.3) </dev/null >/dev/null 2>&1 &"
	start := time.Now()
	r := wrun(t, runOpts{dir: ws}, "--keep-background", "--grant", "write", "--", "sh", "-c", sh)
	if r.code != 0 {
		t.Fatalf("wrun: %s", r)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("wrun waited %s for the background process, which it was asked to keep", d)
	}
	var b []byte
	for i := 0; i < 200 && len(b) == 0; i++ {
		time.Sleep(50 * time.Millisecond)
		b, _ = os.ReadFile(out)
	}
	time.Sleep(100 * time.Millisecond)
	b, _ = os.ReadFile(out)
	if s.reached() {
		t.Errorf("ESCAPE: a background process reached the socket outside after wrun exited: %s", b)
	}
	if !strings.HasPrefix(string(b), "err EACCES") {
		t.Errorf("the background connect after wrun exited: %q, want EACCES (still mediated)", b)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "made-later")); string(got) != "made\n" {
		t.Errorf("a file made beside .git after wrun exited: %q, want it made (still mediated)", got)
	}
	// The keeper ends with the last kept process.
	for i := 0; i < 200; i++ {
		if len(keepers(ws)) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("wrun's keeper outlived the last kept process: %v", keepers(ws))
}

// keepers are the wrun processes whose working directory is ws.
func keepers(ws string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		exe, _ := os.Readlink(p + "/exe")
		cwd, _ := os.Readlink(p + "/cwd")
		if filepath.Base(exe) == "wrun" && cwd == ws {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}
