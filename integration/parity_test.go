//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The parity subset: a few projects of scripts/parity's corpus
// (scripts/parity.d/corpus.tsv) whose test suites must give the same
// result under --grant verify as bare, so that CI catches a regression
// without running the whole corpus. Each runs its suite bare first (the
// control: it passes there) and then under verify.

// parityEnv is added to both sides: modules come from the cache only.
var parityEnv = []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "CGO_ENABLED=0"}

// fromProxy downloads mod@ver through the go command into the module cache
// and copies it into a fresh writable workspace with everything its tests
// import downloaded. It skips, saying so, only when the proxy cannot be
// reached.
func fromProxy(t *testing.T, modVer string, pkgs ...string) string {
	t.Helper()
	requireTool(t, "go")
	cmd := exec.Command("go", "mod", "download", "-json", modVer)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var dl struct{ Dir, Error string }
	_ = json.Unmarshal(out, &dl)
	if err != nil || dl.Dir == "" {
		msg := dl.Error
		if msg == "" {
			msg = string(out)
		}
		if ee, ok := err.(*exec.ExitError); ok {
			msg += string(ee.Stderr)
		}
		for _, s := range []string{"dial tcp", "lookup ", "no such host", "connection refused", "i/o timeout", "TLS handshake", "GOPROXY=off", "network is unreachable"} {
			if strings.Contains(msg, s) {
				t.Skipf("the Go module proxy is unreachable, so %s cannot be fetched: %s", modVer, strings.TrimSpace(msg))
			}
		}
		t.Fatalf("go mod download %s: %v: %s", modVer, err, msg)
	}
	ws := filepath.Join(workspace(t), "m")
	copyTree(t, dl.Dir, ws)
	if out, err := exec.Command("chmod", "-R", "u+w", ws).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	list := exec.Command("go", append([]string{"list", "-deps", "-test"}, pkgs...)...)
	list.Dir = ws
	list.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("downloading what the tests of %s import: %v\n%s", modVer, err, lastN(string(out), 20))
	}
	removeStateOf(t, ws)
	return ws
}

// goTestResults maps each test (package.Test/sub) of `go test -json`
// output to pass, fail or skip.
func goTestResults(out string) map[string]string {
	res := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Package, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			res[ev.Package+"."+ev.Test] = ev.Action
		}
	}
	return res
}

func lastN(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// verifySummary is the part of wrun's --json-fd summary these tests read.
type verifySummary struct {
	ExitCode int `json:"exit_code"`
	Request  *struct {
		Denials []struct {
			Op, Path, Right string
			WithheldBy      struct{ Field, Rule string } `json:"withheld_by"`
			Summary         string
			Alternatives    []struct{ ID, Kind string }
		}
	}
}

// underVerify runs argv in dir under --grant verify,network=on and
// returns the result and wrun's summary. The network is named: verify's
// default on Linux is network=hosts, whose loopback rules refuse a
// wildcard bind (oklog/run's ExampleGroup_Add_listener listens on
// [::]:0), while this suite measures what verify's files and shell limits
// change, as PARITY.md reports it.
func underVerify(t *testing.T, dir string, argv ...string) (result, verifySummary) {
	t.Helper()
	sumPath := filepath.Join(t.TempDir(), "summary.json")
	f, err := os.Create(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := runLong(t, runOpts{dir: dir, env: parityEnv, files: []*os.File{f}}, append([]string{bins.wrun, "--grant", "verify,network=on", "--json-fd", "3", "--"}, argv...)...)
	var s verifySummary
	b, _ := os.ReadFile(sumPath)
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("wrun's summary: %v: %q\n%s", err, b, r)
	}
	return r, s
}

// runLong is run with a longer limit: a real test suite compiles.
func runLong(t *testing.T, o runOpts, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), o.env...)
	cmd.ExtraFiles = o.files
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(8 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not finish in 8 minutes", argv)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

func passing(res map[string]string) []string {
	var out []string
	for n, a := range res {
		if a == "pass" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// sameTestResults fails unless both sides ran the same tests with the
// same outcomes, all passing or skipped, and at least one passed.
func sameTestResults(t *testing.T, what string, bare, ver map[string]string) {
	t.Helper()
	if len(passing(bare)) == 0 {
		t.Fatalf("%s: no test passed bare: %v", what, bare)
	}
	for n, a := range bare {
		if a == "fail" {
			t.Fatalf("%s: %s fails bare (the control), so parity cannot be judged", what, n)
		}
		if ver[n] != a {
			t.Errorf("%s: %s: %s bare, %q under verify", what, n, a, ver[n])
		}
	}
	for n, a := range ver {
		if _, ok := bare[n]; !ok {
			t.Errorf("%s: %s ran only under verify (%s)", what, n, a)
		}
	}
}

// TestParityGoModules: three modules of the corpus without dependencies
// (so they build fast), whose tests do what real suites do (temp files
// renamed over and symlinked, signals to the process itself, HTTP
// handlers), pass bare and under verify alike.
func TestParityGoModules(t *testing.T) {
	requireABI(t, 3)
	for _, c := range []struct{ mod, skip string }{
		// renameio's TestTempDir mounts tmpfs when it can (as root): bare
		// it can, and under verify mount(2) is refused, as it must be (it
		// skips itself then); the full corpus reports it.
		{"github.com/google/renameio/v2@v2.0.2", "^TestTempDir$"},
		{"github.com/oklog/run@v1.2.0", ""},                // SIGINT/SIGTERM handlers
		{"github.com/julienschmidt/httprouter@v1.3.0", ""}, // HTTP handlers
	} {
		mod := c.mod
		t.Run(filepath.Base(strings.Split(mod, "@")[0]), func(t *testing.T) {
			ws := fromProxy(t, mod, "./...")
			argv := []string{"go", "test", "-json", "-count=1", "./..."}
			if c.skip != "" {
				argv = append(argv, "-skip", c.skip)
			}
			bare := runLong(t, runOpts{dir: ws, env: parityEnv}, argv...)
			if bare.code != 0 {
				t.Fatalf("%s fails bare (the control): %s", mod, lastN(bare.stdout+bare.stderr, 30))
			}
			r, s := underVerify(t, ws, argv...)
			if r.code != 0 {
				t.Errorf("%s under verify: exit %d; denials: %+v\n%s", mod, r.code, s.Request, lastN(r.stdout+r.stderr, 30))
			}
			sameTestResults(t, mod, goTestResults(bare.stdout), goTestResults(r.stdout))
		})
	}
}

// TestParityGoldenUpdateIsATrueDenial: a golden-file test run with
// -update rewrites testdata in its own source tree. Bare that works (the
// control); under verify the tree is read-only, the suite fails, the
// files are untouched, and the denial says why and names the way out.
func TestParityGoldenUpdateIsATrueDenial(t *testing.T) {
	requireABI(t, 3)
	const mod = "gotest.tools/v3@v3.5.2"
	ws := fromProxy(t, mod, "./internal/format/")
	twin := filepath.Join(filepath.Dir(ws), "twin")
	copyTree(t, ws, twin)
	argv := []string{"go", "test", "-json", "-count=1", "./internal/format/", "-args", "-update"}
	golden := filepath.Join("internal", "format", "testdata", "many-diff.golden")
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{ws, twin} {
		if err := os.Chtimes(filepath.Join(d, golden), old, old); err != nil {
			t.Fatal(err)
		}
	}
	bare := runLong(t, runOpts{dir: twin, env: parityEnv}, argv...)
	if bare.code != 0 {
		t.Fatalf("-update fails bare (the control): %s", lastN(bare.stdout+bare.stderr, 30))
	}
	if fi, err := os.Stat(filepath.Join(twin, golden)); err != nil || !fi.ModTime().After(old) {
		t.Fatalf("the control did not rewrite %s: %v", golden, err)
	}

	r, s := underVerify(t, ws, argv...)
	if r.code == 0 {
		t.Fatalf("-update under verify succeeded; the source tree must stay read-only: %s", r)
	}
	if fi, err := os.Stat(filepath.Join(ws, golden)); err != nil || fi.ModTime().After(old) {
		t.Errorf("%s was written under verify: %v", golden, err)
	}
	if s.Request == nil {
		t.Fatalf("no request in the summary: %s", r)
	}
	found := false
	for _, d := range s.Request.Denials {
		if d.Path != filepath.Join(ws, golden) {
			continue
		}
		found = true
		if d.WithheldBy.Rule != "workspace-read-only" || !strings.Contains(d.Summary, "read-only") {
			t.Errorf("the denial does not say the workspace is read-only: %+v", d)
		}
		ids := map[string]bool{}
		for _, a := range d.Alternatives {
			ids[strings.TrimPrefix(a.ID, strings.SplitN(a.ID, ".", 2)[0]+".")] = true
		}
		if !ids["use-tmpdir"] || !ids["allow-write"] {
			t.Errorf("the denial does not name the alternatives (write under $TMPDIR; --allow-write): %+v", d.Alternatives)
		}
	}
	if !found {
		t.Errorf("no denial names %s: %+v", golden, s.Request.Denials)
	}
}

// TestParityCrate: a crate from Debian's librust-walkdir-dev (directory
// walks over symlinks in temp dirs), built offline through a directory
// source, passes the same tests bare and under verify. Its unit tests
// only: the doctests (one rustc each) are in the full corpus.
func TestParityCrate(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "cargo")
	const src = "/usr/share/cargo/registry/walkdir-2.3.2"
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("needs Debian's librust-walkdir-dev (%s), which scripts/setup installs", src)
	}
	base := workspace(t)
	mustWrite(t, filepath.Join(base, ".cargo", "config.toml"),
		"[source.crates-io]\nreplace-with = \"debian\"\n\n[source.debian]\ndirectory = \"/usr/share/cargo/registry\"\n\n[net]\noffline = true\n")
	ws := filepath.Join(base, "walkdir")
	copyTree(t, src, ws)
	if out, err := exec.Command("chmod", "-R", "u+w", ws).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	removeStateOf(t, ws)
	env := []string{"CARGO_HOME=" + filepath.Join(base, "cargo-home")}
	if r := runLong(t, runOpts{dir: ws, env: env}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
		// A crate the lock file needs is not in Debian's registry: say
		// which package scripts/setup must install.
		if m := regexp.MustCompile("no matching package named `([^`]+)`").FindStringSubmatch(r.stderr); m != nil {
			t.Fatalf("cargo generate-lockfile: the crate %s is not in /usr/share/cargo/registry: scripts/setup must install librust-%s-dev\n%s",
				m[1], strings.ReplaceAll(m[1], "_", "-"), r)
		}
		t.Fatalf("cargo generate-lockfile: %s", r)
	}
	twin := filepath.Join(base, "twin")
	copyTree(t, ws, twin)
	// walkdir's tests use fixed names under the temp dir: a TMPDIR of this
	// test's own (under verify wrun gives the child a private one).
	bare := runLong(t, runOpts{dir: twin, env: append(env, "TMPDIR="+t.TempDir())}, "cargo", "test", "--offline", "--lib")
	if bare.code != 0 {
		t.Fatalf("cargo test fails bare (the control): %s", lastN(bare.stdout+bare.stderr, 30))
	}
	sum := filepath.Join(base, "summary.json")
	f, err := os.Create(sum)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := runLong(t, runOpts{dir: ws, env: env, files: []*os.File{f}}, bins.wrun, "--grant", "verify,network=on", "--json-fd", "3", "--", "cargo", "test", "--offline", "--lib")
	if r.code != 0 {
		t.Fatalf("cargo test under verify: exit %d; summary: %s\n%s", r.code, mustRead(t, sum), lastN(r.stdout+r.stderr, 30))
	}
	b, v := testLines(bare.stdout), testLines(r.stdout)
	if len(b) == 0 || strings.Join(b, "\n") != strings.Join(v, "\n") {
		t.Errorf("different tests:\nbare:\n%s\nverify:\n%s", strings.Join(b, "\n"), strings.Join(v, "\n"))
	}
	if exists(filepath.Join(ws, "target")) {
		t.Errorf("verify built into the crate's own target/")
	}
}

// TestParityUnixSockets: a Go test suite that serves and connects on
// pathname UNIX sockets (stream and datagram) in t.TempDir(), as many real
// suites do, passes under verify as bare.
func TestParityUnixSockets(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	ws := filepath.Join(workspace(t), "unixsock")
	copyTree(t, "testdata/unixsock", ws)
	removeStateOf(t, ws)
	argv := []string{"go", "test", "-json", "-count=1", "."}
	bare := runLong(t, runOpts{dir: ws, env: parityEnv}, argv...)
	if bare.code != 0 {
		t.Fatalf("fails bare (the control): %s", lastN(bare.stdout+bare.stderr, 30))
	}
	r, s := underVerify(t, ws, argv...)
	if r.code != 0 && s.Request != nil {
		// The probe: today's refusal of every AF_UNIX socket under
		// desktop=off, before issue 9's mediation of UNIX sockets.
		for _, d := range s.Request.Denials {
			if d.Op == "socket" && d.Right == "socket_unix" && d.WithheldBy.Rule == "unix-sockets-unconfined" {
				t.Skipf("issue 9: UNIX sockets in the sandbox's own directories are not mediated yet on this kernel (%s); remove this skip when that lands", d.Summary)
			}
		}
	}
	if r.code != 0 {
		t.Fatalf("under verify: exit %d; denials: %+v\n%s", r.code, s.Request, lastN(r.stdout+r.stderr, 30))
	}
	sameTestResults(t, "unixsock", goTestResults(bare.stdout), goTestResults(r.stdout))
}
