package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/grant"
)

// names resolves the test's names to addresses, as a hosts file would.
func names(m map[string]string) Resolver {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := m[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, errors.New("no such host")
	}
}

func hosts(t *testing.T, specs ...string) []grant.Host {
	t.Helper()
	var out []grant.Host
	for _, s := range specs {
		h, err := grant.ParseHost(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// echo is a TCP server that writes back what it reads.
func echo(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
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
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

func start(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dial connects to p as the mediation would: bound first, announced,
// then connected.
func dial(t *testing.T, p *Proxy, announce bool) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	// The local port is known only after bind: take one, announce it,
	// then connect from it.
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	local := ln.Addr().(*net.TCPAddr)
	ln.Close()
	d.LocalAddr = local
	if announce {
		p.Expect(local.AddrPort())
	}
	c, err := d.Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func connect(t *testing.T, c net.Conn, target string) (int, *bufio.Reader) {
	t.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, br
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, br
}

func TestConnectDecidesOnTheName(t *testing.T) {
	e := echo(t)
	port := fmt.Sprint(e.Port())
	p := start(t, Config{Hosts: hosts(t, "repo.test:"+port, "*.wild.test"), Resolve: names(map[string]string{
		"repo.test": "127.0.0.1", "other.test": "127.0.0.1", "a.wild.test": "127.0.0.1", "meta.test": "169.254.169.254"})})
	c := dial(t, p, true)
	code, br := connect(t, c, "repo.test:"+port)
	if code != http.StatusOK {
		t.Fatalf("CONNECT to an allowed host: %d", code)
	}
	fmt.Fprint(c, "ping\n")
	if l, _ := br.ReadString('\n'); l != "ping\n" {
		t.Fatalf("relayed %q", l)
	}
	for _, tc := range []struct{ target, why string }{
		{"other.test:" + port, "no --allow-host entry"},            // same address, another name
		{"repo.test:1", "no --allow-host entry"},                   // another port
		{"a.wild.test:" + port, "loopback, private or link-local"}, // a wildcard never reaches loopback
		{"127.0.0.1:" + port, "no --allow-host entry"},
	} {
		if code, _ := connect(t, dial(t, p, true), tc.target); code != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d, want 403", tc.target, code)
		}
	}
	ds := p.Close()
	if len(ds) != 4 || ds[0].Addr() != "other.test:"+port || !strings.Contains(ds[2].Why, "loopback, private or link-local") {
		t.Errorf("denials %+v", ds)
	}
}

func TestUnannouncedClientsAreRefused(t *testing.T) {
	e := echo(t)
	p := start(t, Config{Hosts: hosts(t, e.String())})
	// Control: announced, the same CONNECT is relayed.
	if code, _ := connect(t, dial(t, p, true), e.String()); code != http.StatusOK {
		t.Fatalf("control: announced CONNECT: %d", code)
	}
	c := dial(t, p, false)
	if code, _ := connect(t, c, e.String()); code != 0 {
		t.Fatalf("an unannounced client got an answer %d", code)
	}
}

func TestPlainHTTPGoesToTheOriginOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.IsAbs() || r.Header.Get("Proxy-Authorization") != "" {
			http.Error(w, "proxy form leaked", 500)
			return
		}
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://elsewhere.test/", http.StatusFound)
			return
		}
		fmt.Fprint(w, "hello "+r.Host)
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p := start(t, Config{Hosts: hosts(t, fmt.Sprintf("origin.test:%d", port)), Resolve: names(map[string]string{"origin.test": "127.0.0.1", "elsewhere.test": "127.0.0.1"})})
	get := func(path string) (*http.Response, string) {
		c := dial(t, p, true)
		fmt.Fprintf(c, "GET http://origin.test:%d%s HTTP/1.1\r\nHost: origin.test:%d\r\nProxy-Authorization: x\r\n\r\n", port, path, port)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get("/"); resp.StatusCode != 200 || body != fmt.Sprintf("hello origin.test:%d", port) {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	// A Host header naming another virtual host on the allowed address is
	// not what the origin sees.
	c := dial(t, p, true)
	fmt.Fprintf(c, "GET http://origin.test:%d/ HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != fmt.Sprintf("hello origin.test:%d", port) {
		t.Fatalf("a Host header reached the origin: %q", b)
	}
	// A redirect is the client's to follow, through the proxy again.
	if resp, _ := get("/away"); resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect: %d", resp.StatusCode)
	}
	if ds := p.Close(); len(ds) != 0 {
		t.Errorf("denials %+v", ds)
	}
}

func TestConnectionsAreBoundedAndEndWithTheProxy(t *testing.T) {
	e := echo(t)
	p, err := Start(Config{Hosts: hosts(t, e.String()), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	var open []net.Conn
	for range 10 {
		c := dial(t, p, true)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if code, _ := connect(t, c, e.String()); code == http.StatusOK {
			held++
			open = append(open, c)
		}
	}
	if held != 4 {
		t.Fatalf("%d connections served at once, want the bound 4", held)
	}
	p.Close()
	for _, c := range open {
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("a connection outlived the proxy")
		}
	}
}
