//go:build linux

package integration

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// TestHostsGitFetchOverHTTP: under plain --grant verify (no
// --allow-host) git fetch over (dumb) HTTP from the remote the
// repository's .git/config names works: verify's default is
// network=hosts with the remotes' hosts. A URL on another host (not in
// .git/config) is refused with the denial naming it. The control: the
// same fetch bare.
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
	port, hits := origin(t, dir)
	ws := workspace(t)
	gitCmd(t, ws, "init", "-q", "-b", "main")
	gitCmd(t, ws, "remote", "add", "origin", fmt.Sprintf("http://repo.test:%d/r.git", port))
	env := []string{"WRUN_TEST_HOSTS=repo.test=127.0.0.1,other.test=127.0.0.1"}
	o := runOpts{dir: ws, env: env}
	if r := run(t, o, "git", "ls-remote", fmt.Sprintf("http://127.0.0.1:%d/r.git", port)); r.code != 0 || !strings.Contains(r.stdout, "refs/heads/main") {
		t.Fatalf("control: bare git ls-remote: %s", r)
	}
	if r := wrun(t, o, "explain", "--grant", "verify"); !strings.Contains(r.stdout, fmt.Sprintf("repo.test:%d", port)) || !strings.Contains(r.stdout, "remote origin in .git/config") {
		t.Fatalf("explain --grant verify does not list the remote's host with why: %s", r)
	}
	s, _, r := runJSON(t, o, "--grant", "verify", "--", "git", "fetch", "-q", "origin")
	if s.ExitCode != 0 || s.Grant != "files=read,shell=verify,network=hosts,desktop=off" {
		t.Fatalf("git fetch origin over HTTP under --grant verify: %s", r)
	}
	if got := gitCmd(t, ws, "rev-parse", "refs/remotes/origin/main"); got != gitCmd(t, src, "rev-parse", "HEAD") {
		t.Fatalf("origin/main is %s after the fetch", got)
	}
	before := hits()
	s, req, r := runJSON(t, o, "--grant", "verify", "--", "git", "fetch", "-q", fmt.Sprintf("http://other.test:%d/r.git", port), "main")
	want := fmt.Sprintf("other.test:%d", port)
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != want || req.Denials[0].Op != escalate.OpConnectHost || hits() != before ||
		!slices.Equal(req.Denials[0].Alternatives[0].Args, []string{"--allow-host", want}) {
		t.Fatalf("git fetch from another host under --grant verify was not a connect-host denial naming %s: %s", want, r)
	}
	// verify,network=on still reaches every host (no proxy: the fetch
	// dials the server itself).
	if s, _, r := runJSON(t, o, "--grant", "verify,network=on", "--", "git", "fetch", "-q", fmt.Sprintf("http://127.0.0.1:%d/r.git", port), "main"); s.ExitCode != 0 {
		t.Fatalf("git fetch under verify,network=on: %s", r)
	}
}

// goProxyDir writes a module proxy's static files (the GOPROXY protocol
// is plain files) for module mod at version v into dir.
func goProxyDir(t *testing.T, dir, mod, v string) {
	t.Helper()
	base := filepath.Join(dir, filepath.FromSlash(mod), "@v")
	mustWrite(t, filepath.Join(base, "list"), v+"\n")
	mustWrite(t, filepath.Join(base, v+".info"), `{"Version":"`+v+`","Time":"2026-01-01T00:00:00Z"}`)
	gomod := "module " + mod + "\n\ngo 1.21\n"
	mustWrite(t, filepath.Join(base, v+".mod"), gomod)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{"go.mod": gomod, "m.go": "package m\n\nconst Hello = \"hello\"\n"} {
		w, err := zw.Create(mod + "@" + v + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(base, v+".zip"), buf.String())
}

// TestHostsGoModDownload: under plain --grant verify, go mod download
// reaches the module proxy the user's GOPROXY names (a static directory
// served over HTTP on 127.0.0.1, named goproxy.test); with GOPROXY naming
// a host that is not the user's (set by the command itself) the fetch is
// a connect-host denial naming it. The control: the same download bare.
func TestHostsGoModDownload(t *testing.T) {
	requireHosts(t)
	requireTool(t, "go")
	dir := t.TempDir()
	goProxyDir(t, dir, "example.test/m", "v1.0.0")
	port, _ := origin(t, dir)
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "go.mod"), "module example.test/app\n\ngo 1.21\n\nrequire example.test/m v1.0.0\n")
	env := []string{"WRUN_TEST_HOSTS=goproxy.test=127.0.0.1,other.test=127.0.0.1",
		fmt.Sprintf("GOPROXY=http://goproxy.test:%d", port), "GOSUMDB=off", "GOFLAGS=-mod=mod -modcacherw", "GOTOOLCHAIN=local"}
	o := runOpts{dir: ws, env: env}
	dl := `GOMODCACHE="$TMPDIR/mod" go mod download -json example.test/m@v1.0.0`
	bare := fmt.Sprintf(`GOPROXY=http://127.0.0.1:%d GOMODCACHE="%s" go mod download -json example.test/m@v1.0.0`, port, filepath.Join(t.TempDir(), "mod"))
	if r := run(t, o, "sh", "-c", bare); r.code != 0 || !strings.Contains(r.stdout, `"Version": "v1.0.0"`) {
		t.Fatalf("control: bare go mod download: %s", r)
	}
	if r := wrun(t, o, "explain", "--grant", "verify"); !strings.Contains(r.stdout, fmt.Sprintf("goproxy.test:%d", port)) || !strings.Contains(r.stdout, "GOPROXY from the environment") {
		t.Fatalf("explain --grant verify does not list GOPROXY's host with why: %s", r)
	}
	if s, _, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", dl); s.ExitCode != 0 || !strings.Contains(r.stdout, `"Version": "v1.0.0"`) {
		t.Fatalf("go mod download from the user's GOPROXY under --grant verify: %s", r)
	}
	s, req, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", fmt.Sprintf("GOPROXY=http://other.test:%d ", port)+dl)
	want := fmt.Sprintf("other.test:%d", port)
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != want || req.Denials[0].Op != escalate.OpConnectHost {
		t.Fatalf("go mod download from a GOPROXY the command set was not a connect-host denial naming %s: %s", want, r)
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

// TestHostsGitProtocolAndSSH: under plain --grant verify a git:// remote
// of the repository is fetched through wrun's proxy (core.gitProxy, a
// CONNECT), a git:// URL on another host is a connect-host denial naming
// it, and an ssh remote fails with wrun's words, not a bare resolver
// error. The control: the git:// fetch bare.
func TestHostsGitProtocolAndSSH(t *testing.T) {
	requireHosts(t)
	requireTool(t, "git")
	dir := t.TempDir()
	remote := filepath.Join(dir, "r.git")
	gitCmd(t, dir, "init", "-q", "--bare", "-b", "main", remote)
	src := filepath.Join(dir, "src")
	gitCmd(t, dir, "clone", "-q", remote, src)
	gitCmd(t, src, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "one")
	gitCmd(t, src, "push", "-q", "origin", "main")
	port := gitDaemon(t, dir)
	ws := workspace(t)
	gitCmd(t, ws, "init", "-q", "-b", "main")
	gitCmd(t, ws, "remote", "add", "origin", fmt.Sprintf("git://repo.test:%d/r.git", port))
	gitCmd(t, ws, "remote", "add", "viassh", "ssh://git@ssh.test/r.git")
	o := runOpts{dir: ws, env: []string{"WRUN_TEST_HOSTS=repo.test=127.0.0.1,other.test=127.0.0.1,ssh.test=127.0.0.1"}}
	if r := run(t, o, "git", "ls-remote", fmt.Sprintf("git://127.0.0.1:%d/r.git", port)); r.code != 0 || !strings.Contains(r.stdout, "refs/heads/main") {
		t.Fatalf("control: bare git ls-remote over git://: %s", r)
	}
	if s, _, r := runJSON(t, o, "--grant", "verify", "--", "git", "fetch", "-q", "origin"); s.ExitCode != 0 {
		t.Fatalf("git fetch of a git:// remote under --grant verify: %s", r)
	}
	if got := gitCmd(t, ws, "rev-parse", "refs/remotes/origin/main"); got != gitCmd(t, src, "rev-parse", "HEAD") {
		t.Fatalf("origin/main is %s after the fetch", got)
	}
	s, req, r := runJSON(t, o, "--grant", "verify", "--", "git", "fetch", "-q", fmt.Sprintf("git://other.test:%d/r.git", port), "main")
	want := fmt.Sprintf("other.test:%d", port)
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != want || req.Denials[0].Op != escalate.OpConnectHost {
		t.Fatalf("git:// fetch from another host was not a connect-host denial naming %s: %s", want, r)
	}
	r = wrun(t, o, "--grant", "verify", "--", "git", "fetch", "-q", "viassh")
	if r.code == 0 || !strings.Contains(r.stderr, "git over ssh (git@ssh.test) does not go through wrun's proxy") {
		t.Fatalf("an ssh remote under --grant verify did not fail with wrun's words: %s", r)
	}
}

// npmRegistry is a stand-in for an npm registry on 127.0.0.1, named
// host:port in its documents: one package, wrun-demo 1.0.0, its
// packument and its tarball.
func npmRegistry(t *testing.T, name string) (port int, hits func() int) {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	pj := `{"name":"wrun-demo","version":"1.0.0"}`
	if err := tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(pj)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, pj); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sum1 := sha1.Sum(tgz.Bytes())
	sum512 := sha512.Sum512(tgz.Bytes())
	var n atomic.Int32
	var self int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		switch r.URL.Path {
		case "/wrun-demo":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"wrun-demo","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"wrun-demo","version":"1.0.0","dist":{"tarball":"http://%s:%d/wrun-demo/-/wrun-demo-1.0.0.tgz","shasum":"%x","integrity":"sha512-%s"}}}}`,
				name, self, sum1, base64.StdEncoding.EncodeToString(sum512[:]))
		case "/wrun-demo/-/wrun-demo-1.0.0.tgz":
			_, _ = w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	self = srv.Listener.Addr().(*net.TCPAddr).Port
	return self, func() int { return int(n.Load()) }
}

// TestHostsNpmRegistry: under plain --grant verify, npm fetches a
// package's document and tarball from the registry the user's
// npm_config_registry names (a stand-in on 127.0.0.1 named npm.test); a
// registry the command names itself is a connect-host denial. The
// control: the same fetch bare, from the server's address.
func TestHostsNpmRegistry(t *testing.T) {
	requireHosts(t)
	requireTool(t, "npm")
	port, hits := npmRegistry(t, "npm.test")
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "package.json"), `{"name":"app","version":"0.0.0","private":true}`)
	o := runOpts{dir: ws, env: []string{"WRUN_TEST_HOSTS=npm.test=127.0.0.1,other.test=127.0.0.1",
		fmt.Sprintf("npm_config_registry=http://npm.test:%d/", port), "npm_config_audit=false", "npm_config_fund=false"}}
	bare := fmt.Sprintf(`npm_config_registry=http://127.0.0.1:%d/ npm_config_cache="%s" npm view wrun-demo version`, port, t.TempDir())
	if r := run(t, o, "sh", "-c", bare); r.code != 0 || strings.TrimSpace(r.stdout) != "1.0.0" {
		t.Fatalf("control: bare npm view: %s", r)
	}
	before := hits()
	if s, _, r := runJSON(t, o, "--grant", "verify", "--", "npm", "cache", "add", "wrun-demo@1.0.0"); s.ExitCode != 0 || hits() < before+2 {
		t.Fatalf("npm cache add from the user's registry under --grant verify (server hits %d -> %d): %s", before, hits(), r)
	}
	s, req, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", fmt.Sprintf("npm_config_registry=http://other.test:%d/ npm view wrun-demo version", port))
	want := fmt.Sprintf("other.test:%d", port)
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != want || req.Denials[0].Op != escalate.OpConnectHost {
		t.Fatalf("npm from a registry the command named was not a connect-host denial naming %s: %s", want, r)
	}
}

// TestHostsCargoSparseRegistry: under plain --grant verify, cargo fetch
// reaches the sparse registry the user's $CARGO_HOME/config.toml puts in
// crates.io's place (a stand-in on 127.0.0.1 named cargo.test: its
// config.json, index entry and one .crate that cargo package made from a
// path-only crate); a registry only the workspace's .cargo/config.toml
// names is a connect-host denial. The command's own CARGO_HOME (cargo's
// cache is read-only under verify) holds a copy of the user's config.
// The control: the same fetch bare.
func TestHostsCargoSparseRegistry(t *testing.T) {
	requireHosts(t)
	requireTool(t, "cargo")
	// Sparse registries are cargo's since 1.68.
	var minor int
	if v := run(t, runOpts{}, "cargo", "--version").stdout; !strings.HasPrefix(v, "cargo 1.") {
		t.Fatalf("cargo --version: %q", v)
	} else if _, err := fmt.Sscanf(strings.TrimPrefix(v, "cargo 1."), "%d", &minor); err != nil || minor < 68 {
		t.Skipf("%s has no sparse registries (cargo 1.68)", strings.TrimSpace(v))
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "wdemo")
	mustWrite(t, filepath.Join(lib, "Cargo.toml"), "[package]\nname = \"wdemo\"\nversion = \"0.1.0\"\nedition = \"2021\"\ndescription = \"d\"\nlicense = \"MIT\"\n")
	mustWrite(t, filepath.Join(lib, "src", "lib.rs"), "pub fn f() -> u32 { 1 }\n")
	if r := run(t, runOpts{dir: lib, env: []string{"CARGO_TARGET_DIR=" + filepath.Join(dir, "target")}}, "cargo", "package", "--offline", "--no-verify", "--allow-dirty", "-q"); r.code != 0 {
		t.Fatalf("cargo package: %s", r)
	}
	crate, err := os.ReadFile(filepath.Join(dir, "target", "package", "wdemo-0.1.0.crate"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(crate)
	var self int
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		switch r.URL.Path {
		case "/index/config.json":
			fmt.Fprintf(w, `{"dl":"http://%s/dl"}`, r.Host)
		case "/index/wd/em/wdemo":
			fmt.Fprintf(w, `{"name":"wdemo","vers":"0.1.0","deps":[],"cksum":"%x","features":{},"yanked":false}`+"\n", sum)
		case "/dl/wdemo/0.1.0/download":
			_, _ = w.Write(crate)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	self = srv.Listener.Addr().(*net.TCPAddr).Port
	cargoConfig := func(host string) string {
		return fmt.Sprintf("[source.crates-io]\nreplace-with = \"stand\"\n[source.stand]\nregistry = \"sparse+http://%s:%d/index/\"\n", host, self)
	}
	home := t.TempDir()
	userCargo := filepath.Join(home, "cargo")
	mustWrite(t, filepath.Join(userCargo, "config.toml"), cargoConfig("cargo.test"))
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nwdemo = \"0.1\"\n")
	mustWrite(t, filepath.Join(ws, "src", "lib.rs"), "")
	o := runOpts{dir: ws, env: []string{"WRUN_TEST_HOSTS=cargo.test=127.0.0.1,other.test=127.0.0.1", "CARGO_HOME=" + userCargo}}
	bareHome := filepath.Join(t.TempDir(), "ch")
	mustWrite(t, filepath.Join(bareHome, "config.toml"), cargoConfig("127.0.0.1"))
	if r := run(t, runOpts{dir: ws, env: []string{"CARGO_HOME=" + bareHome, "CARGO_TARGET_DIR=" + filepath.Join(dir, "t2")}}, "sh", "-c",
		"cargo generate-lockfile -q && cargo fetch -q && rm Cargo.lock"); r.code != 0 {
		t.Fatalf("control: bare cargo fetch: %s", r)
	}
	// In the sandbox the workspace is read-only: the lock file goes
	// nowhere, so cargo fetch resolves it in memory (a copy of the
	// workspace in the temp dir).
	fetch := `set -e; ch="$TMPDIR/ch"; mkdir -p "$ch"; cp "$CARGO_HOME/config.toml" "$ch/"; cp -r . "$TMPDIR/app"; cd "$TMPDIR/app"; CARGO_HOME="$ch" cargo fetch -q`
	before := int(n.Load())
	if s, _, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", fetch); s.ExitCode != 0 || int(n.Load()) < before+3 {
		t.Fatalf("cargo fetch from the user's sparse registry under --grant verify (server hits %d -> %d): %s", before, n.Load(), r)
	}
	// The workspace's own config naming another registry is not the
	// user's: that host is refused.
	mustWrite(t, filepath.Join(ws, ".cargo", "config.toml"), cargoConfig("other.test"))
	s, req, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", fetch)
	want := fmt.Sprintf("other.test:%d", self)
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != want || req.Denials[0].Op != escalate.OpConnectHost {
		t.Fatalf("cargo fetch from a registry the workspace's .cargo/config.toml names was not a connect-host denial naming %s: %s", want, r)
	}
}

// TestHostsUpstreamProxy: with the user's own proxy in wrun's
// environment (HTTP_PROXY, a stand-in on 127.0.0.1), an allowed request
// of the command goes to it, in absolute form, even for a name only that
// proxy resolves; a refused host never reaches it; the command's
// HTTP_PROXY is wrun's proxy, not the user's. The control: the stand-in
// answers a request sent to it directly.
func TestHostsUpstreamProxy(t *testing.T) {
	requireHosts(t)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI)
		mu.Unlock()
		fmt.Fprint(w, "via upstream")
	}))
	t.Cleanup(srv.Close)
	up := srv.URL
	got := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
	ws := workspace(t)
	o := runOpts{dir: ws, env: []string{"HTTP_PROXY=" + up, "http_proxy=" + up, "WRUN_TEST_HOSTS="}}
	if r := run(t, o, "curl", "-sf", "--noproxy", "*", up+"/direct"); r.stdout != "via upstream" {
		t.Fatalf("control: the stand-in directly: %s", r)
	}
	r := wrun(t, o, "--grant", "verify", "--allow-host", "far.test", "--", "sh", "-c", `test "$HTTP_PROXY" != "$0" && curl -sf http://far.test/x`, up)
	if r.code != 0 || r.stdout != "via upstream" {
		t.Fatalf("an allowed request through the user's proxy: %s", r)
	}
	s, req, r := runJSON(t, o, "--grant", "verify", "--", "curl", "-sf", "http://refused.test/y")
	if s.ExitCode == 0 || req == nil || req.Denials[0].Addr != "refused.test:80" {
		t.Fatalf("a refused host: %s", r)
	}
	if g := got(); !slices.Equal(g, []string{"GET /direct", "GET http://far.test/x"}) {
		t.Fatalf("the user's proxy saw %q", g)
	}
}
