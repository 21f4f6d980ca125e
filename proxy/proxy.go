package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/grant"
	"golang.org/x/net/http/httpproxy"
)

// Resolver resolves a host name to its addresses.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Config is what a proxy allows.
type Config struct {
	// Hosts are the --allow-host entries.
	Hosts []grant.Host
	// Resolve resolves names; nil is the system's resolver.
	Resolve Resolver
	// MaxConns bounds the connections served at once (0: 256); one more
	// is closed as it is accepted.
	MaxConns int
	// Upstream is the user's own proxy for a request (nil, or a nil
	// answer: dial directly): an allowed CONNECT goes through it as a
	// CONNECT, an allowed plain HTTP request as a request in absolute
	// form. The decision stays the proxy's, on the name asked for.
	Upstream Upstream
}

// Upstream answers the user's proxy for a request: target is
// https://HOST:PORT for a CONNECT, the request's URL for plain HTTP. An
// http:// proxy URL is the only kind used (UpstreamFromEnv).
type Upstream func(target *url.URL) (*url.URL, error)

// UpstreamFromEnv is the upstream the user's environment names
// (HTTPS_PROXY, HTTP_PROXY, and ALL_PROXY for both when they are unset;
// either case; NO_PROXY honoured), or nil when it names none. getenv is
// the environment wrun was started in, never the command's. Only an
// http:// proxy is chained (a socks5:// ALL_PROXY is not: the proxy then
// dials directly).
func UpstreamFromEnv(getenv func(string) string) Upstream {
	get := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	all := get("ALL_PROXY", "all_proxy")
	c := httpproxy.Config{HTTPProxy: get("HTTP_PROXY", "http_proxy"), HTTPSProxy: get("HTTPS_PROXY", "https_proxy"), NoProxy: get("NO_PROXY", "no_proxy")}
	if c.HTTPProxy == "" {
		c.HTTPProxy = all
	}
	if c.HTTPSProxy == "" {
		c.HTTPSProxy = all
	}
	if c.HTTPProxy == "" && c.HTTPSProxy == "" {
		return nil
	}
	f := c.ProxyFunc()
	return func(target *url.URL) (*url.URL, error) {
		u, err := f(target)
		if err != nil || u == nil {
			return nil, err
		}
		if u.Scheme != "http" {
			return nil, nil
		}
		return u, nil
	}
}

// Denial is a host the proxy refused, with how often.
type Denial struct {
	Host  string
	Port  int
	Why   string
	Count int
	Time  time.Time
}

// Addr is the host and port as the client asked for them.
func (d Denial) Addr() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// maxHeader bounds what a request's line and headers may take.
const maxHeader = 64 << 10

// maxDenials bounds the distinct refusals kept (more are counted in the
// last one's Count only when they repeat one of these).
const maxDenials = 256

// Proxy is one run's proxy.
type Proxy struct {
	ln      *net.TCPListener
	cfg     Config
	sem     chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	expect  map[netip.AddrPort]time.Time
	conns   map[net.Conn]struct{}
	denials map[string]*Denial
	order   []string
	closed  bool
}

// Start listens on a fresh loopback port and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("starting the proxy for network=hosts: %w", err)
	}
	p := &Proxy{ln: ln, cfg: cfg, sem: make(chan struct{}, cfg.MaxConns),
		expect: map[netip.AddrPort]time.Time{}, conns: map[net.Conn]struct{}{}, denials: map[string]*Denial{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() netip.AddrPort { return p.ln.Addr().(*net.TCPAddr).AddrPort() }

// expectFor is how long an announcement admits its connection: a connect
// on loopback reaches the listener in far less; one that never completes
// (EINPROGRESS, then abandoned) does not leave its address admitted.
const expectFor = 10 * time.Second

// Expect admits one connection from client: the mediation calls it with
// the command's socket's own address just before it connects it here.
func (p *Proxy) Expect(client netip.AddrPort) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, t := range p.expect {
		if now.Sub(t) > expectFor {
			delete(p.expect, a)
		}
	}
	p.expect[unmap(client)] = now
}

// Forget withdraws an Expect whose connect failed.
func (p *Proxy) Forget(client netip.AddrPort) {
	p.mu.Lock()
	delete(p.expect, unmap(client))
	p.mu.Unlock()
}

// Close stops the proxy, closes every connection it serves, waits for
// them and returns what it refused, in the order first seen.
func (p *Proxy) Close() []Denial {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Denial, 0, len(p.order))
	for _, k := range p.order {
		out = append(out, *p.denials[k])
	}
	return out
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !p.admit(c) {
			c.Close()
			continue
		}
		select {
		case p.sem <- struct{}{}:
		default:
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.sem }()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// admit takes c's announced client address, and tracks c, or reports
// that nobody announced it (another process, another run).
func (p *Proxy) admit(c *net.TCPConn) bool {
	ra, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return false
	}
	key := unmap(ra.AddrPort())
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.expect[key]
	if !ok || p.closed || time.Since(t) > expectFor {
		return false
	}
	delete(p.expect, key)
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// capped reads at most left bytes until it is lifted.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("request headers too large")
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	lim := &capped{r: c, left: maxHeader}
	br := bufio.NewReader(lim)
	req, err := http.ReadRequest(br)
	if err != nil {
		reply(c, http.StatusBadRequest, "wrun's proxy: "+err.Error())
		return
	}
	lim.left = math.MaxInt64
	_ = c.SetReadDeadline(time.Time{})
	var host string
	var port int
	switch {
	case req.Method == http.MethodConnect:
		h, ps, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			reply(c, http.StatusBadRequest, "wrun's proxy: CONNECT needs HOST:PORT")
			return
		}
		host, port = h, atoiPort(ps)
	case req.URL != nil && req.URL.Scheme == "http" && req.URL.Host != "":
		host, port = req.URL.Hostname(), 80
		if ps := req.URL.Port(); ps != "" {
			port = atoiPort(ps)
		}
	default:
		reply(c, http.StatusBadRequest, "wrun's proxy serves CONNECT HOST:PORT and http:// requests in absolute form")
		return
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if port <= 0 || host == "" {
		reply(c, http.StatusBadRequest, "wrun's proxy: no host or port")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	hostPort := net.JoinHostPort(host, strconv.Itoa(port))
	var via *url.URL
	if p.cfg.Upstream != nil {
		target := &url.URL{Scheme: "https", Host: hostPort}
		if req.Method != http.MethodConnect {
			target = req.URL
		}
		via, _ = p.cfg.Upstream(target)
	}
	addr, why := p.decide(ctx, host, port, via != nil)
	if why != "" {
		cancel()
		p.refused(host, port, why)
		reply(c, http.StatusForbidden, fmt.Sprintf("wrun: network=hosts does not reach %s: %s (--allow-host %s reaches it)", hostPort, why, hostPort))
		return
	}
	var d net.Dialer
	dialTo := addr.String()
	if via != nil {
		dialTo = via.Host
		if via.Port() == "" {
			dialTo = net.JoinHostPort(via.Hostname(), "80")
		}
	}
	up, err := d.DialContext(ctx, "tcp", dialTo)
	cancel()
	if err != nil {
		reply(c, http.StatusBadGateway, "wrun's proxy: "+err.Error())
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	if req.Method == http.MethodConnect {
		upr := io.Reader(up)
		if via != nil {
			if upr, err = connectVia(up, via, hostPort); err != nil {
				reply(c, http.StatusBadGateway, "wrun's proxy: the upstream proxy "+via.Redacted()+": "+err.Error())
				return
			}
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		relay(c, br, up, upr)
		return
	}
	// Plain HTTP: one request a connection, in origin form, for the host
	// decided on: a Host header naming another (a virtual host sharing
	// the allowed one's address) is replaced.
	req.RequestURI = ""
	req.Host = req.URL.Host
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	write := req.Write
	if via != nil {
		// In absolute form, to the user's proxy, with its credentials
		// (the command's own Proxy-Authorization went above).
		if u := via.User; u != nil {
			pw, _ := u.Password()
			req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
		}
		write = req.WriteProxy
	}
	if err := write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

// connectVia asks the upstream proxy via, over up, for a tunnel to
// hostPort, and returns what reads the tunnel (the reader may hold bytes
// the upstream sent after its answer).
func connectVia(up net.Conn, via *url.URL, hostPort string) (io.Reader, error) {
	_ = up.SetDeadline(time.Now().Add(30 * time.Second))
	defer func() { _ = up.SetDeadline(time.Time{}) }()
	auth := ""
	if u := via.User; u != nil {
		pw, _ := u.Password()
		auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)) + "\r\n"
	}
	if _, err := fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", hostPort, hostPort, auth); err != nil {
		return nil, err
	}
	br := bufio.NewReader(io.LimitReader(up, maxHeader))
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("CONNECT %s: %s", hostPort, resp.Status)
	}
	// What the upstream sent beyond its answer is the tunnel's first
	// bytes; the rest is read from up itself.
	return io.MultiReader(bytes.NewReader(peekAll(br)), up), nil
}

// peekAll is what br holds already.
func peekAll(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return bytes.Clone(b)
}

// decide says where a connection to host:port goes, or why it does not:
// only hosts an --allow-host entry matches, and a loopback, private or
// link-local address only for an entry naming the host exactly (never a
// wildcard).
func (p *Proxy) decide(ctx context.Context, host string, port int, upstream bool) (netip.AddrPort, string) {
	allowed, named := false, false
	for _, h := range p.cfg.Hosts {
		if h.Matches(host, port) {
			allowed = true
			named = named || !strings.HasPrefix(h.Name, "*.")
		}
	}
	if !allowed {
		return netip.AddrPort{}, "no --allow-host entry names it"
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = p.cfg.Resolve(ctx, host)
		if err != nil && upstream {
			// Through the user's proxy, which resolves it (a network
			// where only the proxy resolves outside names).
			return netip.AddrPort{}, ""
		}
		if err != nil {
			return netip.AddrPort{}, "resolving it: " + err.Error()
		}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if special(a) && !named {
			continue
		}
		return netip.AddrPortFrom(a, uint16(port)), ""
	}
	return netip.AddrPort{}, "its addresses are loopback, private or link-local, which only an --allow-host naming the host exactly reaches"
}

// special is an address of this host or its networks rather than the
// internet's: what a cloud metadata service or an intranet answers on.
func special(a netip.Addr) bool {
	cgnat := netip.MustParsePrefix("100.64.0.0/10")
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || cgnat.Contains(a)
}

func atoiPort(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 65535 {
		return 0
	}
	return n
}

func (p *Proxy) refused(host string, port int, why string) {
	key := net.JoinHostPort(host, strconv.Itoa(port))
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.denials[key]; ok {
		d.Count++
		return
	}
	if len(p.order) >= maxDenials {
		return
	}
	p.denials[key] = &Denial{Host: host, Port: port, Why: why, Count: 1, Time: time.Now()}
	p.order = append(p.order, key)
}

// reply writes a short plain-text response and ends the exchange.
func reply(c net.Conn, code int, text string) {
	text += "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(text), text)
}

// relay copies both ways until both ends are done; what the client sent
// after its CONNECT and the reader holds goes first, and what fromUp (up,
// or a reader holding what the upstream proxy sent after its answer)
// reads goes to the client.
func relay(c net.Conn, fromClient io.Reader, up net.Conn, fromUp io.Reader) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, fromClient)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, fromUp)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-done
}
