package darwin

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sandbox/darwin -run %s -update to create it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the generated text (run with -update after reviewing the change):\n%s", path, diff(string(want), got))
	}
}

// diff shows the first differing line of want and got.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + a + "\n  got:  " + b
		}
	}
	return ""
}

// stateKey is the hash naming a workspace's private state, which depends
// on the workspace's path.
var stateKey = regexp.MustCompile(`[0-9a-f]{16}-[0-9a-f]{16}`)

// paramsText lists the -D parameters, the test's temp root written $ROOT.
func paramsText(prof Profile, root string) string {
	var b strings.Builder
	croot := Canonical(root, nil)
	for _, p := range prof.Params {
		v := stateKey.ReplaceAllString(strings.ReplaceAll(p.Value, croot, "$ROOT"), "$$KEY")
		b.WriteString(p.Name + "=" + v + "\n")
	}
	return b.String()
}

func fileName(spec string) string {
	return strings.NewReplacer(",", "_", "=", "-").Replace(spec)
}

// The profile text and the -D parameters of each grant, reviewed once and
// kept: any change to what a grant means on macOS shows up as a diff.
func TestGoldenPresets(t *testing.T) {
	root := t.TempDir()
	h := host(t, root)
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			prof, err := Generate(Input{Policy: compute(t, spec, h), RunID: "RUNID"})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "golden/"+fileName(spec)+".sb", prof.Text)
			golden(t, "golden/"+fileName(spec)+".params", paramsText(prof, root))
		})
	}
}

// A workspace that is a linked worktree: its .git is a file naming a
// directory in the main repository, whose config and hooks are protected
// (they run programs for every worktree).
func TestGoldenLinkedWorktree(t *testing.T) {
	root := t.TempDir()
	h := host(t, root)
	main := filepath.Join(h.Home, "main")
	wt := filepath.Join(h.Home, "wt")
	gd := filepath.Join(main, ".git")
	for _, d := range []string{gd + "/hooks", gd + "/objects", gd + "/refs/heads", gd + "/worktrees/wt", wt + "/src"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{
		gd + "/config":                 "[core]\n",
		gd + "/HEAD":                   "ref: refs/heads/main\n",
		gd + "/worktrees/wt/HEAD":      "ref: refs/heads/wt\n",
		gd + "/worktrees/wt/commondir": "../..\n",
		gd + "/worktrees/wt/gitdir":    wt + "/.git\n",
		wt + "/.git":                   "gitdir: " + gd + "/worktrees/wt\n",
		wt + "/src/a.go":               "package a\n",
	} {
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.Workdir = wt
	p := compute(t, "write", h)
	prof, err := Generate(Input{Policy: p, RunID: "RUNID"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "golden/worktree.sb", prof.Text)
	golden(t, "golden/worktree.params", paramsText(prof, root))
	e := newEval(t, prof)
	for _, c := range []struct {
		r    request
		want bool
	}{
		{request{op: "file-write-data", path: Canonical(wt+"/src/a.go", nil)}, true},
		{request{op: "file-write-data", path: Canonical(gd+"/config", nil)}, false},
		{request{op: "file-write-create", path: Canonical(gd+"/hooks/post-checkout", nil)}, false},
		{request{op: "file-write-unlink", path: Canonical(wt+"/.git", nil)}, false},
	} {
		if got, _ := e.decide(t, c.r); got != c.want {
			t.Errorf("%s %s: allowed %v, want %v", c.r.op, c.r.path, got, c.want)
		}
	}
}

// Awkward names change the parameters only: a workspace whose name holds
// quotes, parentheses, backslashes, a newline and a semicolon makes the
// same profile text as a plain one, and its parameters hold the name as
// it is.
func TestAwkwardPathNames(t *testing.T) {
	plainRoot := filepath.Join(t.TempDir(), "plain")
	plain := host(t, plainRoot)
	awkward := "we\"ird (p) \\ x\n;(allow default)"
	awkRoot := filepath.Join(t.TempDir(), awkward)
	awk := host(t, awkRoot)
	for _, spec := range specs {
		a, err := Generate(Input{Policy: compute(t, spec, plain), RunID: "RUNID"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Generate(Input{Policy: compute(t, spec, awk), RunID: "RUNID"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Text != b.Text {
			t.Errorf("%s: the awkward name changed the profile text:\n%s", spec, diff(a.Text, b.Text))
		}
		found := false
		for _, p := range b.Params {
			if strings.Contains(p.Value, awkward) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no parameter holds the awkward name as it is", spec)
		}
		if strings.Contains(b.Text, "we\"ird") {
			t.Errorf("%s: the name reached the profile text", spec)
		}
	}
}

// Canonical names what the sandbox matches: /tmp, /var and /etc live in
// /private, and symbolic links are resolved (a workspace reached through a
// link is granted where it really is).
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp":              "/private/tmp",
		"/tmp/x/../y":       "/private/tmp/y",
		"/var/folders/ab/T": "/private/var/folders/ab/T",
		"/etc/hosts":        "/private/etc/hosts",
		"/private/tmp/a":    "/private/tmp/a",
		"/tmpx":             "/tmpx",
		"/Users/u/proj":     "/Users/u/proj",
	} {
		if got := Canonical(in, nil); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	if got := ResolveExisting(filepath.Join(dir, "link", "not", "yet")); got != filepath.Join(realDir, "not", "yet") {
		t.Errorf("ResolveExisting through a link: %q, want beneath %q", got, realDir)
	}
	// A policy whose workspace is a link grants the resolved path.
	p := &policy.Policy{Rules: []policy.Rule{{Path: filepath.Join(dir, "link"), Access: policy.ReadWrite}}}
	prof, err := Generate(Input{Policy: p, RunID: "R", Canon: ResolveExisting})
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.Params) == 0 || prof.Params[0].Value != Canonical(realDir, nil) {
		t.Errorf("params %+v, want the resolved %s", prof.Params, realDir)
	}
}

// Bad input is refused, never spliced: a run id outside [0-9A-Za-z-], a
// socket that is not an absolute path.
func TestGenerateRefuses(t *testing.T) {
	p := &policy.Policy{}
	for _, id := range []string{"", `a"b`, "a)b", "a\nb", strings.Repeat("a", 65)} {
		if _, err := Generate(Input{Policy: p, RunID: id}); err == nil {
			t.Errorf("run id %q accepted", id)
		}
	}
	rel := &policy.Policy{IPC: policy.IPC{UnixSockets: []string{"rel.sock"}}}
	if _, err := Generate(Input{Policy: rel, RunID: "R"}); err == nil {
		t.Error("relative socket accepted")
	}
	if _, err := Generate(Input{RunID: "R"}); err == nil {
		t.Error("nil policy accepted")
	}
}
