//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
)

// recordedDenials are the denials a run did not ask for (--json's
// denials_ignored and denials_expected).
type recordedDenials struct {
	Ignored  []escalate.DeniedAct `json:"denials_ignored"`
	Expected []escalate.DeniedAct `json:"denials_expected"`
}

// recordedOf reads them from the --json summary on stderr.
func recordedOf(t *testing.T, r result) recordedDenials {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var rd recordedDenials
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rd); err != nil {
		t.Fatalf("--json summary: %v\n%s", err, r)
	}
	return rd
}

// deniedLines are wrun's denial lines on stderr.
func deniedLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "wrun: denied") || strings.HasPrefix(l, "wrun: expected, not asked for") {
			out = append(out, l)
		}
	}
	return out
}

// A successful run asks for nothing: its denials are recorded, said only
// with -v.
func checkSucceededQuietly(t *testing.T, dir string, argv ...string) recordedDenials {
	t.Helper()
	args := append([]string{"--grant", "verify", "--"}, argv...)
	r := wrun(t, runOpts{dir: dir}, args...)
	if r.code != 0 {
		t.Fatalf("%v: %s", argv, r)
	}
	if l := deniedLines(r.stderr); len(l) > 0 {
		t.Errorf("%v succeeded, yet denials are printed without -v: %q", argv, l)
	}
	file := filepath.Join(workspace(t), "req.json")
	s, req, r := runJSON(t, runOpts{dir: dir}, append([]string{"--escalation-file", file}, args...)...)
	if s.ExitCode != 0 || req != nil || exists(file) {
		t.Errorf("%v succeeded, yet a request was made:\n%s", argv, r)
	}
	rd := recordedOf(t, r)
	// With -v every recorded denial is said.
	v := wrun(t, runOpts{dir: dir}, append([]string{"-v"}, args...)...)
	if n := len(deniedLines(v.stderr)); v.code != 0 || n != len(rd.Ignored)+len(rd.Expected) {
		t.Errorf("%v -v: %d denial lines, want %d (%d ignored, %d expected): %s", argv, n, len(rd.Ignored)+len(rd.Expected), len(rd.Ignored), len(rd.Expected), v)
	}
	return rd
}

func TestVerifySucceededCargoTestAsksNothing(t *testing.T) {
	requireABI(t, 3)
	requireRefer(t)
	requireTool(t, "cargo")
	ws := workspace(t)
	cargoWorkspace(t, ws)
	if r := run(t, runOpts{dir: ws}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
		t.Fatalf("cargo generate-lockfile: %s", r)
	}
	removeStateOf(t, ws)
	rd := checkSucceededQuietly(t, ws, "cargo", "test", "--offline")
	// cargo locks its package cache under the read-only CARGO_HOME and
	// goes on without the lock: the refusal is an expected one, recorded,
	// never asked for (also when the run fails for another reason).
	lock := filepath.Join(cargoHomeDir(), ".package-cache")
	found := false
	for _, d := range rd.Expected {
		found = found || d.Path == lock
	}
	if !found {
		t.Errorf("cargo's package-cache lock %s is not among the recorded denials: %+v", lock, rd)
	}
}

func TestVerifySucceededGoTestAsksNothing(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	ws := workspace(t)
	goModule(t, ws, "example.com/quiet")
	removeStateOf(t, ws)
	rd := checkSucceededQuietly(t, ws, "go", "test", "./...")
	for _, d := range rd.Expected {
		if !strings.Contains(d.Path, filepath.Join("go", "telemetry")) {
			t.Errorf("expected, but not Go telemetry: %+v", d)
		}
	}
}

func TestVerifySucceededNpmTestIsDeniedNothing(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "npm", "node")
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "package.json"), `{"name":"calc","version":"1.0.0","scripts":{"test":"node test.js"}}`+"\n")
	mustWrite(t, filepath.Join(ws, "test.js"), "console.log('calc tests passed');\n")
	rd := checkSucceededQuietly(t, ws, "npm", "test")
	for _, d := range append(rd.Ignored, rd.Expected...) {
		if strings.Contains(d.Path, ".npm") {
			t.Errorf("npm was refused its cache: %+v", d)
		}
	}
}

// A refused read of a hidden path is said even when the command
// succeeded; not asked for then, asked for when it failed.
func TestDenialOfHiddenPathIsAlwaysSaid(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	home := workspace(t)
	key := filepath.Join(home, ".ssh", "x")
	mustWrite(t, key, "secret\n")
	if err := os.Chmod(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := runOpts{dir: ws, env: []string{"HOME=" + home}}
	// The path is written into the script: the child's environment is an
	// allowlist.
	script := "cat " + key + " || true"
	r := wrun(t, o, "--", "sh", "-c", script)
	if r.code != 0 || strings.Contains(r.stdout, "secret") || !strings.Contains(r.stderr, "wrun: denied") || !strings.Contains(r.stderr, key) {
		t.Fatalf("a succeeded run that was refused %s must say so: %s", key, r)
	}
	s, req, r := runJSON(t, o, "--", "sh", "-c", script)
	if s.ExitCode != 0 || req != nil {
		t.Errorf("a request for a run that succeeded:\n%s", r)
	}
	rd := recordedOf(t, r)
	if len(rd.Ignored) != 1 || rd.Ignored[0].Path != key || rd.Ignored[0].WithheldBy.Field != escalate.FieldHidden {
		t.Errorf("recorded %+v", rd)
	}
	// The same read in a run that failed is asked for.
	s, req, r = runJSON(t, o, "--", "sh", "-c", "cat "+key)
	if s.ExitCode == 0 || req == nil || len(req.Denials) != 1 || req.Denials[0].Path != key {
		t.Errorf("a failed run's request:\n%s", r)
	}
}

// An ordinary denial of a run that succeeded is recorded only; of a run
// that failed it is asked for.
func TestRequestOnlyWhenTheCommandFailed(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "result.txt")
	r := wrun(t, runOpts{dir: ws}, "--", "sh", "-c", "echo x > "+outside+" 2>/dev/null || true")
	if r.code != 0 || len(deniedLines(r.stderr)) != 0 {
		t.Errorf("a succeeded run: %s", r)
	}
	s, req, r := runJSON(t, runOpts{dir: ws}, "--", "sh", "-c", "echo x > "+outside+" 2>/dev/null || true")
	if rd := recordedOf(t, r); s.ExitCode != 0 || req != nil || len(rd.Ignored) != 1 || rd.Ignored[0].Path != outside {
		t.Errorf("a succeeded run: request %v, %s", req != nil, r)
	}
	s, req, r = runJSON(t, runOpts{dir: ws}, "--", "sh", "-c", "echo x > "+outside+"; exit 3")
	if rd := recordedOf(t, r); s.ExitCode != 3 || req == nil || len(req.Denials) != 1 || req.Denials[0].Path != outside || len(rd.Ignored) != 0 {
		t.Errorf("a failed run: %s", r)
	}
}
