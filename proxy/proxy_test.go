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
	"net/url"
	"slices"
	"strings"
	"sync"
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

// upstreamProxy is a fake of the user's own proxy on 127.0.0.1: it
// records each request line, answers a CONNECT by tunnelling to to, and
// a plain request in absolute form with "via upstream".
func upstreamProxy(t *testing.T, to netip.AddrPort) (addr string, seen func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				mu.Lock()
				lines = append(lines, req.Method+" "+req.RequestURI+" auth="+req.Header.Get("Proxy-Authorization"))
				mu.Unlock()
				if req.Method != http.MethodConnect {
					fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nvia upstream")
					return
				}
				up, err := net.Dial("tcp", to.String())
				if err != nil {
					return
				}
				defer up.Close()
				fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				go func() { _, _ = io.Copy(up, br); up.Close() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String(), func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(lines) }
}

// TestUpstreamChaining: with the user's HTTPS_PROXY and HTTP_PROXY set,
// an allowed CONNECT goes to the upstream as a CONNECT (its credentials
// added), and an allowed plain request in absolute form; a NO_PROXY host
// is dialled directly; a refused host never reaches the upstream. The
// control: without the upstream the same CONNECT is dialled directly.
func TestUpstreamChaining(t *testing.T) {
	e := echo(t)
	port := fmt.Sprint(e.Port())
	up, seen := upstreamProxy(t, e)
	env := map[string]string{"HTTPS_PROXY": "http://u:pw@" + up, "http_proxy": "http://" + up, "NO_PROXY": "direct.test"}
	upstream := UpstreamFromEnv(func(k string) string { return env[k] })
	if upstream == nil {
		t.Fatal("no upstream from HTTPS_PROXY")
	}
	res := names(map[string]string{"repo.test": "127.0.0.1", "direct.test": "127.0.0.1"})
	// Named exactly, so that the loopback address is reachable directly.
	allowed := hosts(t, "repo.test", "direct.test", "unresolved.test")
	p := start(t, Config{Hosts: allowed, Resolve: res, Upstream: upstream})
	ping := func(target string) int {
		c := dial(t, p, true)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		code, br := connect(t, c, target)
		if code == http.StatusOK {
			fmt.Fprint(c, "ping\n")
			if l, _ := br.ReadString('\n'); l != "ping\n" {
				t.Errorf("CONNECT %s relayed %q", target, l)
			}
		}
		return code
	}
	if code := ping("repo.test:" + port); code != http.StatusOK {
		t.Fatalf("CONNECT through the upstream: %d", code)
	}
	// A name only the upstream resolves goes to it too.
	if code := ping("unresolved.test:" + port); code != http.StatusOK {
		t.Fatalf("CONNECT to a name only the upstream resolves: %d", code)
	}
	if code := ping("direct.test:" + port); code != http.StatusOK {
		t.Fatalf("CONNECT to a NO_PROXY host: %d", code)
	}
	if code := ping("other.test:" + port); code != http.StatusForbidden {
		t.Fatalf("CONNECT to a refused host: %d, want 403", code)
	}
	c := dial(t, p, true)
	fmt.Fprint(c, "GET http://repo.test/x HTTP/1.1\r\nHost: repo.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "via upstream" {
		t.Fatalf("plain HTTP through the upstream: %q", b)
	}
	p.Close()
	auth := "auth=Basic dTpwdw==" // u:pw
	want := []string{"CONNECT repo.test:" + port + " " + auth, "CONNECT unresolved.test:" + port + " " + auth, "GET http://repo.test/x auth="}
	if got := seen(); !slices.Equal(got, want) {
		t.Fatalf("the upstream saw %q, want %q", got, want)
	}
	// Control: no upstream in the environment, no upstream.
	if UpstreamFromEnv(func(string) string { return "" }) != nil {
		t.Fatal("an upstream from an empty environment")
	}
	if u := UpstreamFromEnv(func(k string) string { return map[string]string{"ALL_PROXY": "socks5://127.0.0.1:1080"}[k] }); u != nil {
		if v, _ := u(&url.URL{Scheme: "https", Host: "repo.test:443"}); v != nil {
			t.Fatalf("a socks5 ALL_PROXY was chained: %v", v)
		}
	}
}
