package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnsafeConfigKey(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"git init", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n", ""},
		{"git clone", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", ""},
		{"submodule", "[submodule \"a\"]\n\turl = ../a\n\tactive = true\n", ""},
		{"comments and blank lines", "# x\n; y\n\n[core] # c\n\tbare = false ; c\n", ""},
		{"fsmonitor", "[core]\n\tfsmonitor = touch x\n", "core.fsmonitor"},
		{"case does not hide a key", "[CORE]\n\tFsMonitor = touch x\n", "core.fsmonitor"},
		{"key on the header line", "[core] fsmonitor = x\n", "core.fsmonitor"},
		{"dotted subsection", "[remote.origin]\n\tuploadpack = x\n", "remote.*.uploadpack"},
		{"alias", "[alias]\n\tst = !sh\n", "alias.st"},
		{"include", "[include]\n\tpath = ../x\n", "include.path"},
		{"filter", "[filter \"x\"]\n\tclean = sh\n", "filter.*.clean"},
		{"hooksPath", "[core]\n\thooksPath = h\n", "core.hookspath"},
		{"a key before any section", "fsmonitor = x\n", `a line git may read differently: "fsmonitor = x"`},
		{"a broken header", "[core\n\tbare = false\n", `a line git may read differently: "[core"`},
		{"a continued value is not a key", "[remote \"o\"]\n\turl = a\\\nfsmonitor = b\n", ""},
		{"quoted subsection with a bracket", "[remote \"a] x\"]\n\turl = u\n", ""},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "config")
			if err := os.WriteFile(p, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := unsafeConfigKey(p); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := unsafeConfigKey(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: %q", got)
	}
}

func TestUnsafeRepo(t *testing.T) {
	mk := func(t *testing.T, files map[string]string) string {
		ws := t.TempDir()
		for p, c := range files {
			p = filepath.Join(ws, p)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(ws, ".git")
	}
	safe := "[core]\n\tbare = false\n"
	tests := []struct {
		name  string
		files map[string]string
		bad   bool
	}{
		{"plain", map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": safe, ".git/hooks/pre-commit.sample": "x"}, false},
		{"fsmonitor", map[string]string{".git/HEAD": "x", ".git/config": "[core]\n\tfsmonitor = x\n"}, true},
		{"a hook", map[string]string{".git/HEAD": "x", ".git/config": safe, ".git/hooks/post-checkout": "x"}, true},
		{"rebase state", map[string]string{".git/HEAD": "x", ".git/rebase-merge/git-rebase-todo": "exec x"}, true},
		{"commondir to an unsafe dir", map[string]string{".git/HEAD": "x", ".git/commondir": "../evil", "evil/config": "[alias]\n\tx = !y\n"}, true},
		{".git file to an unsafe dir", map[string]string{".git": "gitdir: gd\n", "gd/HEAD": "x", "gd/config": "[core]\n\tpager = x\n"}, true},
		{".git file to a safe dir", map[string]string{".git": "gitdir: gd\n", "gd/HEAD": "x", "gd/config": safe}, false},
		{"an unsafe submodule git dir", map[string]string{".git/HEAD": "x", ".git/modules/a/HEAD": "x", ".git/modules/a/config": "[core]\n\teditor = x\n"}, true},
		{"worktree config", map[string]string{".git/HEAD": "x", ".git/worktrees/w/config.worktree": "[core]\n\tfsmonitor = x\n"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dg := mk(t, tc.files)
			if got := UnsafeRepo(dg); (got != "") != tc.bad {
				t.Errorf("UnsafeRepo = %q, want unsafe: %v", got, tc.bad)
			}
		})
	}
}

func TestGuardCheck(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{home + "/.config", ws + "/.git/modules/a", ws + "/src"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dotfiles/profile", home+"/.profile"); err != nil {
		t.Fatal(err)
	}
	g := Guard{ID: "r1", Absent: []string{ws + "/.git/commondir"},
		Lists: []GuardList{NewGuardList(home, true, []string{".keep"}, "x"), NewGuardList(ws+"/.git/modules", false, nil, "y")},
		Links: []GuardLink{{home + "/.profile", "/dotfiles/profile"}},
		Roots: []string{ws}, Known: []string{ws + "/.git"}}
	// What the run does.
	for p, c := range map[string]string{ws + "/.git/commondir": "../x", home + "/.zshenv": "x", home + "/.keep": "", home + "/plain": "",
		ws + "/.git/modules/b/HEAD": "x", ws + "/src/n/.git/HEAD": "x", ws + "/src/n/.git/config": "[core]\n\tfsmonitor = x\n",
		ws + "/src/ok/.git/HEAD": "x"} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(home + "/.profile")
	os.WriteFile(home+"/.profile", []byte("evil"), 0o644)

	found := g.Check()
	changed := map[string]bool{}
	for _, f := range found {
		changed[f.Path] = f.Changed
	}
	for _, p := range []string{ws + "/.git/commondir", home + "/.zshenv", ws + "/.git/modules/b", home + "/.profile", ws + "/src/n/.git"} {
		if !changed[p] {
			t.Errorf("%s was not neutralised: %+v", p, found)
		}
	}
	for _, p := range []string{home + "/.keep", home + "/plain", ws + "/.git/modules/a", ws + "/src/ok/.git", ws + "/src/n/.git.wrun-disabled-r1"} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s should be there: %v", p, err)
		}
	}
	if l, _ := os.Readlink(home + "/.profile"); l != "/dotfiles/profile" {
		t.Errorf(".profile is %q", l)
	}
	if len(found) != 5 {
		t.Errorf("%d findings, want 5: %+v", len(found), found)
	}
}

// TestGuardCheckNewBareRepository: a bare repository the run created in a
// writable tree, with a hook of its own, is moved aside after the run as a
// new .git would be; one that was there before, and a new one with only
// what git init writes, stay.
func TestGuardCheckNewBareRepository(t *testing.T) {
	ws := tree(t, map[string]string{
		"old.git/HEAD": "ref: refs/heads/main\n", "old.git/objects/": "", "old.git/refs/": "", "old.git/hooks/pre-receive": "#!/bin/sh\n",
	})
	g := Guard{ID: "r2", Roots: []string{ws}, Known: FindRepos([]string{ws}).DotGits}
	for p, c := range map[string]string{
		"evil.git/HEAD": "ref: refs/heads/main\n", "evil.git/objects/": "", "evil.git/refs/": "", "evil.git/hooks/pre-receive": "#!/bin/sh\ntouch /tmp/pwned\n",
		"fine.git/HEAD": "ref: refs/heads/main\n", "fine.git/objects/": "", "fine.git/refs/": "", "fine.git/config": "[core]\n\tbare = true\n",
	} {
		full := filepath.Join(ws, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if !strings.HasSuffix(p, "/") {
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			os.MkdirAll(full, 0o755)
		}
	}
	found := g.Check()
	if len(found) != 1 || found[0].Path != filepath.Join(ws, "evil.git") || !found[0].Changed {
		t.Fatalf("findings %+v, want evil.git moved aside", found)
	}
	for _, p := range []string{"old.git/hooks/pre-receive", "fine.git/HEAD", "evil.git.wrun-disabled-r2/HEAD"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err != nil {
			t.Errorf("%s should be there: %v", p, err)
		}
	}
}

// TestGuardCheckNamed: in a directory whose entries of some names must
// not appear (sitecustomize, .pth files), a new one is removed after the
// run; the others, and those that were there, stay.
func TestGuardCheckNamed(t *testing.T) {
	dir := tree(t, map[string]string{"old.pth": "", "app.py": ""})
	pats := []string{"sitecustomize*", "*.pth"}
	g := Guard{Named: []GuardNamed{NewGuardNamed(dir, pats, "x"), NewGuardNamed(filepath.Join(dir, "__pycache__"), pats, "x")}}
	if g.Empty() {
		t.Fatal("a guard with named entries is empty")
	}
	for _, f := range []string{"new.pth", "sitecustomize.py", "sitecustomize/__init__.py", "mod.py", "__pycache__/sitecustomize.cpython-311.pyc"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found := g.Check()
	if len(found) != 4 {
		t.Errorf("%d findings, want 4: %+v", len(found), found)
	}
	for f, want := range map[string]bool{"old.pth": true, "app.py": true, "mod.py": true, "new.pth": false,
		"sitecustomize.py": false, "sitecustomize": false, "__pycache__/sitecustomize.cpython-311.pyc": false} {
		if _, err := os.Lstat(filepath.Join(dir, f)); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", f, err == nil, want)
		}
	}
}
