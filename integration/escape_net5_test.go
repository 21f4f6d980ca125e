//go:build linux

package integration

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Red team 5: network mediation (network=loopback, network=hosts).

// reuseportCtl sets SO_REUSEPORT on a socket before it binds.
func reuseportCtl(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

// TestNet5ReuseportHijackTCP: a host service on 127.0.0.1 whose listener
// has SO_REUSEPORT (nginx, envoy, many Go and Rust servers) and runs as
// the same user. The command joins the group with a listener of its own
// bound to the same address; sock_diag, asked "who receives at
// 127.0.0.1:P" from source 0.0.0.0:0, answers with the group member the
// hash of that source picks, while a real connect is spread by the hash
// of its real source port. If sock_diag names the command's own member,
// connects pass the check (before and after) and some of them land on
// the host's listener. Control: bare, the same probe reaches it.
func TestNet5ReuseportHijackTCP(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	lc := net.ListenConfig{Control: reuseportCtl}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			got.Add(1)
			c.Write([]byte("H"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	if r := bare(t, o, "reuseport-tcp", addr); r != "ok" || got.Swap(0) == 0 {
		t.Fatalf("control: bare reuseport-tcp %s: %s", addr, r)
	}
	r := wrun(t, o, "--grant", "verify,network=loopback", "--", bins.probe, "reuseport-tcp", addr)
	time.Sleep(20 * time.Millisecond)
	if n := got.Swap(0); n > 0 || strings.TrimSpace(r.stdout) == "ok" {
		t.Errorf("ESCAPE: under network=loopback the command joined the host listener's SO_REUSEPORT group at %s and %d of its connections reached the host's service:\n%s", addr, n, r)
	}
}

// TestNet5ReuseportHijackUDP: the same with a UDP host service: the
// command's datagrams, checked against the group member sock_diag names,
// are delivered by the hash of their real source to the host's socket.
func TestNet5ReuseportHijackUDP(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	lc := net.ListenConfig{Control: reuseportCtl}
	pc, err := lc.ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var got atomic.Int64
	go func() {
		b := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(b); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	addr := pc.LocalAddr().String()
	if r := bare(t, o, "reuseport-udp", addr); r != "ok" {
		t.Fatalf("control: bare reuseport-udp %s: %s", addr, r)
	}
	time.Sleep(50 * time.Millisecond)
	if got.Swap(0) == 0 {
		t.Fatalf("control: bare reuseport-udp %s: the host's socket got nothing", addr)
	}
	r := wrun(t, o, "--grant", "verify,network=loopback", "--", bins.probe, "reuseport-udp", addr)
	time.Sleep(50 * time.Millisecond)
	if n := got.Swap(0); n > 0 {
		t.Errorf("ESCAPE: under network=loopback %d datagrams of the command reached the host's UDP socket at %s through its SO_REUSEPORT group:\n%s", n, addr, r)
	}
}
