//go:build linux

package integration

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
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

// TestNet5DestinationForms: a host service listening on every address
// ([::], dual stack) is reached bare through each of these destination
// forms (0.0.0.0 and :: as a destination mean "this host" to Linux);
// under network=loopback every one is refused.
func TestNet5DestinationForms(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	srv := listenTCPOutside(t, "[::]:0")
	p := strconv.Itoa(int(srv.addr.Port()))
	for _, dst := range []string{"127.0.0.1:" + p, "127.0.0.2:" + p, "0.0.0.0:" + p, "[::1]:" + p, "[::]:" + p} {
		if got := bare(t, o, "tcp-raw", dst); got != "ok" || !srv.reached() {
			t.Errorf("control: bare tcp-raw %s: %s", dst, got)
			continue
		}
		for _, op := range []string{"tcp-raw", "tcp6-mapped"} {
			if strings.HasPrefix(dst, "[") && op == "tcp6-mapped" {
				continue
			}
			if got := probe(t, o, "verify,network=loopback", op, dst); got == "ok" || srv.reached() {
				t.Errorf("ESCAPE: %s %s under network=loopback reached the host's service: %s", op, dst, got)
			}
		}
	}
}

// TestNet5ProxyNameTricks: under network=hosts, forms of a request that
// might make the proxy's decision differ from where it dials: a name
// under a wildcard whose address is loopback (in upper case, with a
// trailing dot), an IP literal or an IPv4-mapped literal under a
// wildcard, userinfo naming the allowed host before the real one. Each
// is refused and the origin (on 127.0.0.1) sees nothing; the control is
// an exact entry for the same name, which reaches it.
func TestNet5ProxyNameTricks(t *testing.T) {
	requireHosts(t)
	port, hits := origin(t, t.TempDir())
	ps := strconv.Itoa(port)
	o := runOpts{dir: workspace(t), env: []string{"WRUN_TEST_HOSTS=a.wild.test=127.0.0.1,repo.test=127.0.0.1,other.test=127.0.0.1"}}
	curl := func(allow, url string, tunnel bool) result {
		args := []string{"--grant", "verify,network=hosts", "--allow-host", allow, "--", "curl", "-sf", "-m", "10", "--noproxy", "none.invalid"}
		if tunnel {
			args = append(args, "-p")
		}
		return wrun(t, o, append(args, url)...)
	}
	// Controls: an exact entry reaches the origin, tunnelled and plain.
	for _, tunnel := range []bool{false, true} {
		before := hits()
		if r := curl("a.wild.test:"+ps, "http://a.wild.test:"+ps+"/hello", tunnel); r.code != 0 || hits() == before {
			t.Fatalf("control: exact entry (tunnel %v): %s", tunnel, r)
		}
		before = hits()
		if r := curl("127.0.0.1:"+ps, "http://127.0.0.1:"+ps+"/hello", tunnel); r.code != 0 || hits() == before {
			t.Fatalf("control: exact IP entry (tunnel %v): %s", tunnel, r)
		}
	}
	for _, tc := range []struct{ allow, url string }{
		{"*.wild.test:" + ps, "http://a.wild.test:" + ps + "/hello"},
		{"*.wild.test:" + ps, "http://A.WILD.TEST.:" + ps + "/hello"},
		{"*.wild.test:" + ps, "http://127.0.0.1:" + ps + "/hello"},
		{"*.wild.test:" + ps, "http://[::ffff:127.0.0.1]:" + ps + "/hello"},
		{"*.wild.test:" + ps, "http://127.0.0.1.a.wild.test:" + ps + "/hello"},
		{"repo.test:" + ps, "http://repo.test:" + ps + "@other.test:" + ps + "/hello"},
		{"repo.test:" + ps, "http://other.test:" + ps + "/hello#@repo.test:" + ps},
		{"repo.test:" + ps, "http://REPO.test:" + strconv.Itoa(port+1) + "/hello"},
	} {
		for _, tunnel := range []bool{false, true} {
			before := hits()
			if r := curl(tc.allow, tc.url, tunnel); r.code == 0 || hits() != before {
				t.Errorf("ESCAPE: %s with --allow-host %s (tunnel %v) reached the origin:\n%s", tc.url, tc.allow, tunnel, r)
			}
		}
	}
}

// TestNet5OtherSends: datagrams to a host UDP service on 127.0.0.1 (and
// a TCP fast-open SYN to a host TCP one) by every other way of sending:
// each reaches it bare and is refused under network=loopback.
func TestNet5OtherSends(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	udp := listenUDPOutside(t, "127.0.0.1:0")
	tcp := listenTCPOutside(t, "127.0.0.1:0")
	for _, op := range []string{"udp-connect-send", "udp-sendmmsg", "udp6-mapped", "raw-udp", "raw-udp-connect", "tcp-fastopen"} {
		if strings.HasPrefix(op, "raw-") && os.Geteuid() != 0 {
			continue // a raw socket needs CAP_NET_RAW even bare
		}
		addr, reached := udp.addr.String(), udp.reached
		if op == "tcp-fastopen" {
			addr, reached = tcp.addr.String(), tcp.reached
		}
		if got := bare(t, o, op, addr); got != "ok" || !reached() {
			t.Errorf("control: bare %s %s: %s", op, addr, got)
			continue
		}
		if got := probe(t, o, "verify,network=loopback", op, addr); got == "ok" || reached() {
			t.Errorf("ESCAPE: %s %s under network=loopback reached the host's service: %s", op, addr, got)
		}
	}
}

// TestNet5Nested: a wrun inside a network=loopback sandbox, asked for
// network=on, does not widen it: it narrows to the enclosing grant and,
// unable to hold network=loopback nested, refuses (125); with
// --best-effort its command's connect to a host service (TCP and UDP) is
// refused. Control: the same inner wrun outside reaches it.
func TestNet5Nested(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	srv := listenTCPOutside(t, "127.0.0.1:0")
	udp := listenUDPOutside(t, "127.0.0.1:0")
	inner := []string{bins.wrun, "--best-effort", "--grant", "verify,network=on", "--", bins.probe}
	if r := run(t, o, append(inner, "tcp-raw", srv.addr.String())...); strings.TrimSpace(r.stdout) != "ok" || !srv.reached() {
		t.Fatalf("control: inner wrun alone: %s", r)
	}
	outer := []string{"--grant", "verify,network=loopback", "--"}
	if r := wrun(t, o, append(outer, bins.wrun, "--grant", "verify,network=on", "--", bins.probe, "tcp-raw", srv.addr.String())...); r.code != 125 || srv.reached() {
		t.Errorf("a nested wrun without --best-effort: %s", r)
	}
	r := wrun(t, o, append(append(outer, inner...), "tcp-raw", srv.addr.String())...)
	if strings.TrimSpace(r.stdout) == "ok" || srv.reached() {
		t.Errorf("ESCAPE: a nested wrun with network=on reached the host's TCP service:\n%s", r)
	}
	r = wrun(t, o, append(append(outer, inner...), "udp", udp.addr.String())...)
	if strings.TrimSpace(r.stdout) == "ok" || udp.reached() {
		t.Errorf("ESCAPE: a nested wrun with network=on reached the host's UDP service:\n%s", r)
	}
}

// TestNet5ReuseaddrStealUDP: a host UDP service on 127.0.0.1 with
// SO_REUSEADDR; the command binds the same address with SO_REUSEADDR
// (a loopback bind, which wrun performs) and, as the newest socket
// there, receives the datagrams the host's clients send to the service.
// Control: bare, the same.
func TestNet5ReuseaddrStealUDP(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	addr := pc.LocalAddr().String()
	// stolen runs the probe and, meanwhile, sends datagrams to addr as a
	// client of the host's service would.
	stolen := func(argv func() result) result {
		done := make(chan result, 1)
		go func() { done <- argv() }()
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for {
			select {
			case r := <-done:
				return r
			case <-time.After(20 * time.Millisecond):
				c.Write([]byte("secret"))
			}
		}
	}
	if r := stolen(func() result { return run(t, o, bins.probe, "reuseaddr-udp-recv", addr) }); strings.TrimSpace(r.stdout) != "ok" {
		t.Fatalf("control: bare reuseaddr-udp-recv %s: %s", addr, r)
	}
	r := stolen(func() result {
		return wrun(t, o, "--grant", "verify,network=loopback", "--", bins.probe, "reuseaddr-udp-recv", addr)
	})
	if strings.TrimSpace(r.stdout) == "ok" {
		t.Errorf("ESCAPE: under network=loopback the command bound the host UDP service's address %s beside it (SO_REUSEADDR) and received a datagram a host client sent the service:\n%s", addr, r)
	}
}

// TestNet5ReuseportLate: the command binds a loopback port, sets
// SO_REUSEPORT after the bind and listens; a host service that starts
// later on that port with SO_REUSEPORT (same user) joins the command's
// group, and the command takes connections the host's clients make to
// it. Under network=loopback the host's listen must fail or the command
// must take none. Control: bare, it takes one.
func TestNet5ReuseportLate(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	try := func(argv ...string) (joined, stolen bool, out string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = o.dir
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		addr := "127.0.0.1:" + strings.TrimSpace(line)
		lc := net.ListenConfig{Control: reuseportCtl}
		ln, err := lc.Listen(context.Background(), "tcp", addr)
		if err != nil {
			return false, false, line + err.Error()
		}
		defer ln.Close()
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
		for i := 0; i < 200 && !stolen; i++ {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				break
			}
			c.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 1)
			if n, _ := c.Read(b); n == 1 && b[0] == 'S' {
				stolen = true
			}
			c.Close()
		}
		return true, stolen, line + stderr.String()
	}
	if joined, stolen, out := try(bins.probe, "reuseport-late"); !joined || !stolen {
		t.Fatalf("control: bare, joined %v stolen %v: %s", joined, stolen, out)
	}
	if _, stolen, out := try(bins.wrun, "--grant", "verify,network=loopback", "--", bins.probe, "reuseport-late"); stolen {
		t.Errorf("ESCAPE: under network=loopback a host service starting on the command's port with SO_REUSEPORT shared its connections with the command: %s", out)
	}
}

// TestNet5HostsDirect: under network=hosts, an address of this machine
// that is not loopback (standing for a resolver or a remote host), even
// named by --allow-host, is reached only through the proxy: a direct UDP
// datagram (DNS to an outside resolver) or TCP connect is refused.
// Control: bare, both reach it.
func TestNet5HostsDirect(t *testing.T) {
	requireHosts(t)
	ip := localNonLoopback(t)
	o := runOpts{dir: workspace(t)}
	udp := listenUDPOutside(t, "0.0.0.0:0")
	tcp := listenTCPOutside(t, "0.0.0.0:0")
	uaddr := netip.AddrPortFrom(ip, udp.addr.Port()).String()
	taddr := netip.AddrPortFrom(ip, tcp.addr.Port()).String()
	if got := bare(t, o, "udp", uaddr); got != "ok" || !udp.reached() {
		t.Fatalf("control: bare udp %s: %s", uaddr, got)
	}
	if got := bare(t, o, "tcp-raw", taddr); got != "ok" || !tcp.reached() {
		t.Fatalf("control: bare tcp-raw %s: %s", taddr, got)
	}
	for _, c := range []struct {
		op, addr string
		reached  func() bool
	}{{"udp", uaddr, udp.reached}, {"udp-connect-send", uaddr, udp.reached}, {"tcp-raw", taddr, tcp.reached}, {"tcp-fastopen", taddr, tcp.reached}} {
		r := wrun(t, o, "--grant", "verify,network=hosts", "--allow-host", c.addr, "--", bins.probe, c.op, c.addr)
		if strings.TrimSpace(r.stdout) == "ok" || c.reached() {
			t.Errorf("ESCAPE: %s %s under network=hosts with --allow-host %s went direct:\n%s", c.op, c.addr, c.addr, r)
		}
	}
}

// TestNet5BindForms: a bind that would take every IPv4 address in
// disguise (the IPv4-mapped unspecified address on an IPv6 socket) ends
// on loopback, as every wildcard bind does; mapped loopback ones are
// allowed, another address is refused. Control: bare, each binds, and the
// disguised one is not on loopback.
func TestNet5BindForms(t *testing.T) {
	requireLoopback(t)
	o := runOpts{dir: workspace(t)}
	for _, tc := range []struct{ addr, want string }{
		{"[::ffff:0.0.0.0]:0", "ok"},
		{"[::ffff:127.0.0.1]:0", "ok"},
		{"[::ffff:127.1.2.3]:0", "ok"},
	} {
		if got := bare(t, o, "bind", tc.addr); got != "ok" {
			t.Errorf("control: bare bind %s: %s", tc.addr, got)
		}
		if got := probe(t, o, "verify,network=loopback", "bind-loopback", tc.addr); !strings.Contains(got, tc.want) {
			t.Errorf("bind %s under network=loopback: %s, want %s", tc.addr, got, tc.want)
		}
	}
	if got := bare(t, o, "bind-loopback", "[::ffff:0.0.0.0]:0"); !strings.Contains(got, "not loopback") {
		t.Errorf("control: bare bind [::ffff:0.0.0.0]:0: %s", got)
	}
}
