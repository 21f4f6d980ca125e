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

// TestNet5ReuseportStealInbound: the other direction. The command joins
// the SO_REUSEPORT group of a host service's listener on 127.0.0.1 (its
// bind is to loopback, so wrun performs it) and the kernel hands it a
// share of the connections the host's own clients make to that service
// (whatever they send: tokens, requests). Control: bare, the same.
func TestNet5ReuseportStealInbound(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	lc := net.ListenConfig{Control: reuseportCtl}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
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
			c.Write([]byte("H"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	// stolen runs argv and, meanwhile, connects to addr as a client of
	// the host would, until one connection is answered by the command.
	stolen := func(argv func() result) (bool, result) {
		done := make(chan result, 1)
		go func() { done <- argv() }()
		deadline := time.Now().Add(8 * time.Second)
		var hit bool
		for !hit && time.Now().Before(deadline) {
			select {
			case r := <-done:
				return hit, r
			default:
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				continue
			}
			c.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 1)
			if n, _ := c.Read(b); n == 1 && b[0] == 'S' {
				hit = true
			}
			c.Close()
			time.Sleep(5 * time.Millisecond)
		}
		return hit, <-done
	}
	if hit, r := stolen(func() result { return run(t, o, bins.probe, "reuseport-accept", addr) }); !hit {
		t.Fatalf("control: bare reuseport-accept %s took no connection: %s", addr, r)
	}
	hit, r := stolen(func() result {
		return wrun(t, o, "--grant", "verify,network=loopback", "--", bins.probe, "reuseport-accept", addr)
	})
	if hit {
		t.Errorf("ESCAPE: under network=loopback the command joined the host listener's SO_REUSEPORT group at %s and accepted a connection a host client made to the host's service:\n%s", addr, r)
	}
}
