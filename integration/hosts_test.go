//go:build linux

package integration

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// requireHosts skips a test of network=hosts where the support matrix
// refuses it, after asserting wrun refuses it there.
func requireHosts(t *testing.T) {
	t.Helper()
	requireABI(t, 1)
	requireTool(t, "curl")
	f := matrixFeatures(runOpts{})
	g, err := grant.Parse("verify,network=hosts")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range linux.Refusals(f, g, linux.Need{}) {
		if r.Key != "network.hosts" {
			continue
		}
		if res := wrun(t, runOpts{dir: workspace(t)}, "--grant", "verify,network=hosts", "--", "true"); res.code != 125 {
			t.Fatalf("the matrix refuses network=hosts on %s, but wrun ran it: %s", f.Name(), res)
		}
		t.Skipf("network=hosts is refused on %s: %s", f.Name(), r.Refused)
	}
}

// origin is an HTTP server on 127.0.0.1 standing for a remote host,
// serving dir (a bare repository, for git's dumb HTTP) and /hello.
func origin(t *testing.T, dir string) (port int, hits func() int) {
	t.Helper()
	var n int
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if r.URL.Path == "/hello" {
			fmt.Fprint(w, "hello from "+r.Host)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, func() int { return n }
}

// TestHostsThroughTheProxy (issue 27): under network=hosts a client that
// honours HTTP_PROXY reaches the host an --allow-host names, by name,
// through wrun's proxy; another name for the same server is refused with
// a typed denial naming it, whose --allow-host alternative, applied,
// reaches it; a client that ignores the proxy variables (curl --noproxy)
// is refused by the mediation, as is a name whose address is link-local
// (a cloud metadata address) under a wildcard. The control: bare, the
// server answers on 127.0.0.1.
func TestHostsThroughTheProxy(t *testing.T) {
	requireHosts(t)
	port, hits := origin(t, t.TempDir())
	ws := workspace(t)
	o := runOpts{dir: ws, env: []string{"WRUN_TEST_HOSTS=repo.test=127.0.0.1,other.test=127.0.0.1,meta.cloud.test=169.254.169.254"}}
	if r := run(t, o, "curl", "-sf", fmt.Sprintf("http://127.0.0.1:%d/hello", port)); r.code != 0 {
		t.Fatalf("control: bare curl: %s", r)
	}
	allow := fmt.Sprintf("repo.test:%d", port)
	get := func(host string, extra ...string) (summary, *escalate.Request, result) {
		args := append([]string{"--grant", "verify,network=hosts", "--allow-host", allow}, extra...)
		return runJSON(t, o, append(args, "--", "curl", "-sf", fmt.Sprintf("http://%s:%d/hello", host, port))...)
	}
	if s, _, r := get("repo.test"); s.ExitCode != 0 || r.stdout != fmt.Sprintf("hello from repo.test:%d", port) {
		t.Fatalf("curl to the allowed host through the proxy: %s", r)
	}
	before := hits()
	s, req, r := get("other.test")
	if s.ExitCode == 0 || req == nil || hits() != before {
		t.Fatalf("another name for the same server was not refused with a request (server hits %d -> %d): %s", before, hits(), r)
	}
	d := req.Denials[0]
	want := fmt.Sprintf("other.test:%d", port)
	if d.Op != escalate.OpConnectHost || d.Addr != want || d.WithheldBy.Rule != "network-hosts" || d.Alternatives[0].Kind != escalate.KindAllowHost ||
		!slices.Equal(d.Alternatives[0].Args, []string{"--allow-host", want}) {
		t.Fatalf("denial %+v, want connect-host %s with --allow-host %s first", d, want, want)
	}
	if s, _, r := get("other.test", d.Alternatives[0].Args...); s.ExitCode != 0 || !strings.Contains(r.stdout, "hello from other.test") {
		t.Fatalf("%s applied: %s", d.Alternatives[0].ID, r)
	}
	// A client ignoring the proxy variables reaches nothing outside.
	before = hits()
	r = wrun(t, o, "--grant", "verify,network=hosts", "--allow-host", allow, "--", "curl", "-sf", "--noproxy", "*", fmt.Sprintf("http://repo.test:%d/hello", port))
	if r.code == 0 || hits() != before {
		t.Fatalf("curl --noproxy reached the server directly: %s", r)
	}
	// A link-local address (cloud metadata) only for an exact entry: a
	// wildcard does not reach it, and nothing is dialled.
	s, req, r = runJSON(t, o, "--grant", "verify,network=hosts", "--allow-host", "*.cloud.test", "--", "curl", "-sf", "-m", "5", "http://meta.cloud.test/latest")
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != "meta.cloud.test:80" || req.Denials[0].Op != escalate.OpConnectHost {
		t.Fatalf("meta.cloud.test under a wildcard: %s", r)
	}
}

// TestHostsGitFetchOverHTTP: git fetch over (dumb) HTTP from the remote
// the repository names works under verify,network=hosts with its host
// allowed; a remote on another host is refused with the denial naming
// it. The control: the same fetch bare.
func TestHostsGitFetchOverHTTP(t *testing.T) {
	requireHosts(t)
	requireTool(t, "git")
	dir := t.TempDir()
	remote := filepath.Join(dir, "r.git")
	gitCmd(t, dir, "init", "-q", "--bare", "-b", "main", remote)
	src := filepath.Join(dir, "src")
	gitCmd(t, dir, "clone", "-q", remote, src)
	gitCmd(t, src, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "one")
	gitCmd(t, src, "push", "-q", "origin", "main")
	gitCmd(t, remote, "update-server-info")
	port, _ := origin(t, dir)
	ws := workspace(t)
	gitCmd(t, ws, "init", "-q", "-b", "main")
	gitCmd(t, ws, "remote", "add", "origin", fmt.Sprintf("http://repo.test:%d/r.git", port))
	gitCmd(t, ws, "remote", "add", "elsewhere", fmt.Sprintf("http://other.test:%d/r.git", port))
	env := []string{"WRUN_TEST_HOSTS=repo.test=127.0.0.1,other.test=127.0.0.1"}
	o := runOpts{dir: ws, env: env}
	s, _, r := runJSON(t, o, "--grant", "verify,network=hosts", "--allow-host", fmt.Sprintf("repo.test:%d", port), "--", "git", "fetch", "-q", "origin")
	if s.ExitCode != 0 {
		t.Fatalf("git fetch origin over HTTP through the proxy: %s", r)
	}
	if got := gitCmd(t, ws, "rev-parse", "refs/remotes/origin/main"); got != gitCmd(t, src, "rev-parse", "HEAD") {
		t.Fatalf("origin/main is %s after the fetch", got)
	}
	s, req, r := runJSON(t, o, "--grant", "verify,network=hosts", "--allow-host", fmt.Sprintf("repo.test:%d", port), "--", "git", "fetch", "-q", "elsewhere")
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != fmt.Sprintf("other.test:%d", port) {
		t.Fatalf("git fetch from another host: %s", r)
	}
}

// TestHostsProxyServesItsSandboxOnly: while a run is live, a process
// outside it connecting to its proxy gets no answer, and after the run
// the proxy is gone. The control: the command inside reaches the allowed
// host through the same proxy.
func TestHostsProxyServesItsSandboxOnly(t *testing.T) {
	requireHosts(t)
	port, _ := origin(t, t.TempDir())
	ws := workspace(t)
	url := fmt.Sprintf("http://repo.test:%d/hello", port)
	cmd := exec.Command(bins.wrun, "--grant", "verify,network=hosts", "--allow-host", fmt.Sprintf("repo.test:%d", port), "--",
		"sh", "-c", `echo "$HTTP_PROXY"; curl -sf "$0" && echo; read x || true`, url)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "WRUN_TEST_HOSTS=repo.test=127.0.0.1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	br := bufio.NewReader(out)
	proxyURL, _ := br.ReadString('\n')
	body, _ := br.ReadString('\n')
	addr := strings.TrimPrefix(strings.TrimSpace(proxyURL), "http://")
	if !strings.HasPrefix(body, "hello from repo.test") {
		t.Fatalf("control: the command did not reach the allowed host through %q: %q", addr, body)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: repo.test\r\n\r\n", url)
		if l, err := bufio.NewReader(c).ReadString('\n'); err == nil {
			t.Errorf("a process outside the sandbox got an answer from its proxy: %q", l)
		}
		c.Close()
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the run: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the proxy at %s outlived its run", addr)
	}
}
