//go:build linux

package integration

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// outsideTCP is a TCP server the test (outside any sandbox) runs on
// addr, counting the connections it accepts until the test ends.
type outsideTCP struct {
	addr netip.AddrPort
	got  atomic.Int64
}

func listenTCPOutside(t *testing.T, addr string) *outsideTCP {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &outsideTCP{addr: ln.Addr().(*net.TCPAddr).AddrPort()}
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
	return s
}

// reached reports whether anything connected since the last call.
func (s *outsideTCP) reached() bool {
	time.Sleep(20 * time.Millisecond)
	return s.got.Swap(0) > 0
}

// outsideUDP counts the datagrams a UDP socket the test bound receives.
type outsideUDP struct {
	addr netip.AddrPort
	got  atomic.Int64
}

func listenUDPOutside(t *testing.T, addr string) *outsideUDP {
	t.Helper()
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &outsideUDP{addr: c.LocalAddr().(*net.UDPAddr).AddrPort()}
	go func() {
		b := make([]byte, 64)
		for {
			if _, _, err := c.ReadFrom(b); err != nil {
				return
			}
			s.got.Add(1)
		}
	}()
	return s
}

func (s *outsideUDP) reached() bool {
	time.Sleep(50 * time.Millisecond)
	return s.got.Swap(0) > 0
}

// requireLoopback skips a test of network=loopback on a row of the
// support matrix that refuses it (no user notification, no pidfd_getfd),
// after asserting that wrun refuses it there (exit 125) rather than
// running it as something else.
func requireLoopback(t *testing.T) {
	t.Helper()
	requireABI(t, 1)
	f := matrixFeatures(runOpts{})
	g, err := grant.Parse("verify,network=loopback")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range linux.Refusals(f, g, linux.Need{}) {
		if r.Key != "network.loopback" {
			continue
		}
		if res := wrun(t, runOpts{dir: workspace(t)}, "--grant", "verify,network=loopback", "--", "true"); res.code != 125 {
			t.Fatalf("the matrix refuses network=loopback on %s, but wrun ran it: %s", f.Name(), res)
		}
		t.Skipf("network=loopback is refused on %s: %s", f.Name(), r.Refused)
	}
}

// TestLoopbackOwnSockets: under network=loopback the command's own
// loopback servers work (TCP over IPv4, IPv6 and IPv4-mapped IPv6, UDP),
// and what would bind every address is bound to loopback. The control:
// network=off refuses the same programs.
func TestLoopbackOwnSockets(t *testing.T) {
	requireLoopback(t)
	ws := workspace(t)
	o := runOpts{dir: ws}
	for _, op := range []string{"loop-self", "loop-self6", "loop-mapped", "listen-unbound", "udp-self"} {
		if got := probe(t, o, "verify,network=loopback", op); got != "ok" {
			t.Errorf("%s under network=loopback: %s", op, got)
		}
		if got := probe(t, o, "verify,network=off", op); got == "ok" {
			t.Errorf("control: %s under network=off: ok", op)
		}
	}
	// Bare, an unbound socket's listen and first datagram bind to every
	// address: the control that the loopback checks above can fail.
	for _, op := range []string{"listen-unbound", "udp-self"} {
		if got := bare(t, o, op); !strings.Contains(got, "not loopback") {
			t.Errorf("control: %s bare: %s", op, got)
		}
	}
	// A bind to every address is made on loopback instead (a test
	// server's ":0"); bare, it is not on loopback (the control).
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "[::ffff:0.0.0.0]:0"} {
		if got := probe(t, o, "verify,network=loopback", "bind-loopback", addr); got != "ok" {
			t.Errorf("bind %s under network=loopback: %s, want it on loopback", addr, got)
		}
		if got := bare(t, o, "bind-loopback", addr); !strings.Contains(got, "not loopback") {
			t.Errorf("control: bind %s bare: %s", addr, got)
		}
	}
	if got := probe(t, o, "verify", "listen-any"); got != "ok" {
		t.Errorf("a Go test server on \":0\" under plain verify: %s", got)
	}
	if got := bare(t, o, "listen-any"); !strings.Contains(got, "not loopback") {
		t.Errorf("control: a Go test server on \":0\" bare: %s", got)
	}
	for _, tc := range []struct{ args, want string }{
		{"bind-unspec", "ok"}, // AF_UNSPEC with INADDR_ANY: made loopback
		{"bind 127.0.0.2:0", "ok"},
		{"bind [::1]:0", "ok"},
	} {
		args := strings.Fields(tc.args)
		if got := probe(t, o, "verify,network=loopback", args...); !strings.Contains(got, tc.want) {
			t.Errorf("%s under network=loopback: %s, want %s", tc.args, got, tc.want)
		}
		if got := bare(t, o, args...); got != "ok" {
			t.Errorf("control: %s bare: %s", tc.args, got)
		}
	}
}

// TestLoopbackHostService: a service of the host on loopback, outside the
// sandbox, is refused under network=loopback (over IPv4 and as an
// IPv4-mapped IPv6 address, TCP and UDP), with a denial naming its
// address and the --allow-host that reaches it; --allow-host with its
// port reaches it, with another port does not. Controls: the bare probe
// and network=on reach it.
func TestLoopbackHostService(t *testing.T) {
	requireLoopback(t)
	ws := workspace(t)
	o := runOpts{dir: ws}
	srv := listenTCPOutside(t, "127.0.0.1:0")
	udp := listenUDPOutside(t, "127.0.0.1:0")
	addr := srv.addr.String()
	if got := bare(t, o, "tcp-raw", addr); got != "ok" || !srv.reached() {
		t.Fatalf("control: bare connect to %s: %s", addr, got)
	}
	if got := probe(t, o, "verify,network=on", "tcp-raw", addr); got != "ok" || !srv.reached() {
		t.Fatalf("control: network=on connect to %s: %s", addr, got)
	}
	for _, op := range []string{"tcp-raw", "tcp6-mapped"} {
		r := wrun(t, o, "--grant", "verify,network=loopback", "--", bins.probe, op, addr)
		if !strings.Contains(r.stdout, "EACCES") || srv.reached() {
			t.Errorf("%s %s under network=loopback reached the host's service:\n%s", op, addr, r)
		}
		if !strings.Contains(r.stderr, "denied connect to "+addr) || !strings.Contains(r.stderr, "--allow-host "+addr) {
			t.Errorf("%s: the denial does not name %s and its --allow-host:\n%s", op, addr, r)
		}
	}
	if got := probe(t, o, "verify,network=loopback", "udp", udp.addr.String()); !strings.Contains(got, "EACCES") || udp.reached() {
		t.Errorf("UDP to the host's %s under network=loopback: %s", udp.addr, got)
	}
	other := "127.0.0.1:" + strconv.Itoa(int(srv.addr.Port())+1)
	for _, tc := range []struct {
		allow []string
		want  bool
	}{
		{[]string{addr}, true},
		{[]string{"localhost:" + strconv.Itoa(int(srv.addr.Port()))}, true},
		{[]string{other}, false},
		{[]string{"127.0.0.1:" + strconv.Itoa(int(udp.addr.Port()))}, false},
	} {
		args := []string{"--grant", "verify,network=loopback"}
		for _, a := range tc.allow {
			args = append(args, "--allow-host", a)
		}
		for _, op := range []string{"tcp-raw", "tcp6-mapped"} {
			r := wrun(t, o, append(args, "--", bins.probe, op, addr)...)
			if got := strings.TrimSpace(r.stdout) == "ok" && srv.reached(); got != tc.want {
				t.Errorf("%s %s with --allow-host %v: reached %v, want %v\n%s", op, addr, tc.allow, got, tc.want, r)
			}
		}
	}
	r := wrun(t, o, "--grant", "verify,network=loopback", "--allow-host", udp.addr.String(), "--", bins.probe, "udp", udp.addr.String())
	if strings.TrimSpace(r.stdout) != "ok" || !udp.reached() {
		t.Errorf("UDP with --allow-host %s: not reached\n%s", udp.addr, r)
	}
	// A port nobody listens on answers as it would without wrun.
	if got := probe(t, o, "verify,network=loopback", "tcp-raw", other); !strings.Contains(got, "ECONNREFUSED") {
		t.Errorf("connect to %s, where nothing listens: %s, want ECONNREFUSED", other, got)
	}
	// An --allow-host beyond loopback needs network=hosts.
	r = wrun(t, o, "--grant", "verify,network=loopback", "--allow-host", "crates.io", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "needs network=hosts") {
		t.Errorf("--allow-host crates.io under network=loopback: %s", r)
	}
}

// TestLoopbackRawConnect: an address of this machine that is not
// loopback (a server the test binds to every address) is refused under
// network=loopback; bare and under network=on it is reached. The traffic
// never leaves the machine.
func TestLoopbackRawConnect(t *testing.T) {
	requireLoopback(t)
	ip := localNonLoopback(t)
	ws := workspace(t)
	o := runOpts{dir: ws}
	srv := listenTCPOutside(t, "0.0.0.0:0")
	addr := netip.AddrPortFrom(ip, srv.addr.Port()).String()
	if got := bare(t, o, "tcp-raw", addr); got != "ok" || !srv.reached() {
		t.Fatalf("control: bare connect to %s: %s", addr, got)
	}
	if got := probe(t, o, "verify,network=on", "tcp-raw", addr); got != "ok" || !srv.reached() {
		t.Fatalf("control: network=on connect to %s: %s", addr, got)
	}
	for _, allow := range [][]string{nil, {"127.0.0.1:" + strconv.Itoa(int(srv.addr.Port()))}} {
		args := []string{"--grant", "verify,network=loopback"}
		for _, a := range allow {
			args = append(args, "--allow-host", a)
		}
		r := wrun(t, o, append(args, "--", bins.probe, "tcp-raw", addr)...)
		if !strings.Contains(r.stdout, "EACCES") || srv.reached() {
			t.Errorf("connect to %s under network=loopback %v:\n%s", addr, allow, r)
		}
		if !strings.Contains(r.stderr, "denied connect to "+addr) {
			t.Errorf("the denial does not name %s:\n%s", addr, r)
		}
	}
}

// localNonLoopback is an IPv4 address of this machine that is not a
// loopback one; the test is skipped without one.
func localNonLoopback(t *testing.T) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.Unmap()
			}
		}
	}
	t.Skip("this machine has no IPv4 address but loopback")
	return netip.Addr{}
}
