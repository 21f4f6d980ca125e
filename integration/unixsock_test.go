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
	for _, m := range []escapeMode{modeRoot, modeUserNS, modeCarved} {
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
					}
				})
			}
		})
	}
}
