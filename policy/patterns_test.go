package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// TestProtectedAtMatchesCompute: every path Compute protects is one
// ProtectedAt recognizes, with the same reason, so that what a widening
// would meet is what the policy would do.
func TestProtectedAtMatchesCompute(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home/u")
	ws := filepath.Join(home, "proj")
	tmp := filepath.Join(root, "tmp/wrun-1")
	for _, d := range []string{tmp, ws + "/.git/hooks", ws + "/.git/objects", ws + "/src", home + "/.ssh",
		home + "/.cargo/registry", home + "/.cache", home + "/.config/git"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{ws + "/.git/HEAD", ws + "/.git/config", ws + "/Cargo.toml", ws + "/src/main.rs",
		home + "/.bashrc", home + "/.gitconfig", home + "/.ssh/id_ed25519"} {
		if err := os.WriteFile(f, []byte("[package]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := grant.Parse("write")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compute(g, Host{Workdir: ws, Home: home, Env: []string{"HOME=" + home, "PATH=/usr/bin"}, TempDir: tmp}, Options{AllowWrite: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Protected) < 10 {
		t.Fatalf("the policy protects only %d paths; the test tree is wrong", len(p.Protected))
	}
	for _, pr := range p.Protected {
		if pr.Pin {
			continue // the gitdir itself: matched through the policy, it is pinned, not patterned
		}
		path, why := ProtectedAt(pr.Path, WriteFile, ws, home, exists)
		if path != pr.Path || why != pr.Why {
			t.Errorf("policy protects %s (%s); ProtectedAt says %q (%q)", pr.Path, pr.Why, path, why)
		}
	}
}

func TestGitDirsOf(t *testing.T) {
	tests := map[string][]string{
		"/r/.git/config":                        {"/r/.git"},
		"/r/.git":                               {"/r/.git"},
		"/r/.github/workflows/x":                nil,
		"/m/.git/worktrees/w/config":            {"/m/.git", "/m/.git/worktrees/w"},
		"/m/.git/modules/a/modules/b/hooks/x":   {"/m/.git", "/m/.git/modules/a", "/m/.git/modules/a/modules/b"},
		"/m/.git/modules/a/config":              {"/m/.git", "/m/.git/modules/a"},
		"/home/u/proj/src/.git-credentials-ish": nil,
	}
	for in, want := range tests {
		got := gitDirsOf(in)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("gitDirsOf(%q) = %q, want %q", in, got, want)
		}
	}
}
