package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Tunnel connects to the proxy at proxyURL (http://HOST:PORT, as wrun
// sets HTTPS_PROXY for the command), asks it for a CONNECT to target
// (HOST:PORT), and then relays in to the tunnel and the tunnel to out
// until both directions end: what git's core.gitProxy command does for a
// git:// remote. A refusal is an error carrying the proxy's words (which
// name the host and the --allow-host that reaches it).
func Tunnel(proxyURL, target string, in io.Reader, out io.Writer) error {
	u, err := url.Parse(proxyURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("no http:// proxy to tunnel through (%q)", proxyURL)
	}
	c, err := net.DialTimeout("tcp", u.Host, 15*time.Second)
	if err != nil {
		return fmt.Errorf("connecting to the proxy %s: %w", u.Host, err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		return fmt.Errorf("asking the proxy for %s: %w", target, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fmt.Errorf("the proxy's answer for %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return errors.New(string(bytesTrim(b)))
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, in)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, err = io.Copy(out, br)
	if w, ok := out.(interface{ Close() error }); ok {
		_ = w.Close()
	}
	// The other direction ends when the caller's input does (git closes
	// it once it has what it asked for); the relay does not wait for it.
	select {
	case <-done:
	case <-time.After(100 * time.Millisecond):
	}
	return err
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
