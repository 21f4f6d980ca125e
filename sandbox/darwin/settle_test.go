package darwin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// A Seatbelt rule names a path, resolved: a symbolic link planted on the
// way from a rule's Beneath directory (the workspace) must not carry the
// grant elsewhere. Optional rules that cannot be reached so get no rule,
// as on Linux; others stop the run. The control: the same rule through
// real directories is kept.
func TestSettle(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	secret := filepath.Join(dir, "secret")
	for _, d := range []string{ws + "/real/target", secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(ws, "planted")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	rule := func(path string, opt bool) policy.Rule {
		return policy.Rule{Path: path, Access: policy.ReadWrite, Beneath: ws, Optional: opt}
	}
	p := &policy.Policy{Rules: []policy.Rule{
		rule(ws+"/real/target", false),
		rule(ws+"/planted/target", true),
		{Path: ws + "/link", Access: policy.Read, NoFollow: true},
		{Path: dir + "/missing", Access: policy.Read, Optional: true},
		{Path: ws + "/made", Access: policy.ReadWrite, Beneath: ws, Create: policy.CreateDir},
	}}
	got, skipped, err := Settle(p, os.Lstat)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range got.Rules {
		kept = append(kept, r.Path)
	}
	if strings.Join(kept, " ") != ws+"/real/target "+ws+"/made" {
		t.Errorf("kept %q", kept)
	}
	if len(skipped) != 3 {
		t.Errorf("skipped %q, want the planted link, the NoFollow link and the missing path", skipped)
	}
	if len(p.Rules) != 5 {
		t.Error("Settle changed its input")
	}
	// Not optional: the run stops, naming the link.
	p.Rules = []policy.Rule{rule(ws+"/planted/target", false)}
	if _, _, err := Settle(p, os.Lstat); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("planted link, not optional: %v", err)
	}
	p.Rules = []policy.Rule{{Path: dir + "/missing", Access: policy.Read}}
	if _, _, err := Settle(p, os.Lstat); err == nil {
		t.Error("a missing path that is not optional was accepted")
	}
}

// A protected path that is a symbolic link is protected as the link (it
// cannot be removed or replaced) and as what it points to (nothing is
// written through it).
func TestProtectedLink(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	elsewhere := filepath.Join(dir, "ws", "other") // inside the writable tree: only the protection refuses it
	for _, d := range []string{ws + "/.git", elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hooks := ws + "/.git/hooks"
	if err := os.Symlink(elsewhere, hooks); err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{
		Rules:     []policy.Rule{{Path: ws, Access: policy.ReadWrite}},
		Protected: []policy.Protected{{Path: hooks, Dir: true, Exists: true, Within: ws}},
	}
	prof, err := Generate(Input{Policy: p, RunID: "R", Canon: ResolveExisting})
	if err != nil {
		t.Fatal(err)
	}
	e := newEval(t, prof)
	c := func(p string) string { return Canonical(p, ResolveExisting) }
	cdir := c(ws + "/.git")
	for _, r := range []request{
		{op: "file-write-unlink", path: cdir + "/hooks"},
		{op: "file-write-create", path: cdir + "/hooks"},
		{op: "file-write-create", path: c(elsewhere) + "/pre-commit"},
	} {
		if ok, _ := e.decide(t, r); ok {
			t.Errorf("%s %s allowed", r.op, r.path)
		}
	}
	if ok, _ := e.decide(t, request{op: "file-write-create", path: cdir + "/HEAD.lock"}); !ok {
		t.Error("control: creating beside the protected link refused")
	}
}
