package verify

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestValidHeadContent(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{
		{"ref: refs/heads/main\n", true},
		{"ref:refs/heads/main", true},
		{"ref: \trefs/heads/.invalid\n", true}, // reftable
		{"0123456789abcdef0123456789abcdef01234567\n", true},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true}, // sha256
		{"ref: heads/main\n", false},
		{"0123456789abcdef\n", false},
		{"0123456789ABCDEF0123456789ABCDEF01234567\n", false},
		{"Makefile target HEAD\n", false},
		{"", false},
	} {
		if got := validHeadContent(tc.head); got != tc.want {
			t.Errorf("validHeadContent(%q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}

func TestIsGitDir(t *testing.T) {
	root := tree(t, map[string]string{
		"bare.git/HEAD": "ref: refs/heads/main\n", "bare.git/objects/": "", "bare.git/refs/": "", "bare.git/config": "[core]\n\tbare = true\n",
		"noobjects/HEAD": "ref: refs/heads/main\n", "noobjects/refs/": "",
		"badhead/HEAD": "not a head\n", "badhead/objects/": "", "badhead/refs/": "",
		"wt/HEAD": "ref: refs/heads/x\n", "wt/commondir": "../bare.git\n",
		"wtbad/HEAD": "ref: refs/heads/x\n", "wtbad/commondir": "../missing\n",
		"headdir/HEAD/": "", "headdir/objects/": "", "headdir/refs/": "",
	})
	if err := os.MkdirAll(filepath.Join(root, "linkhead", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "linkhead", "refs"), 0o755)
	os.Symlink("refs/heads/main", filepath.Join(root, "linkhead", "HEAD"))
	for name, want := range map[string]bool{
		"bare.git": true, "wt": true, "linkhead": true,
		"noobjects": false, "badhead": false, "wtbad": false, "headdir": false, "missing": false,
	} {
		if got := IsGitDir(filepath.Join(root, name)); got != want {
			t.Errorf("IsGitDir(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestFindReposFindsGitDirsByWhatTheyHold: a bare repository, a separate
// git dir and a linked worktree's git dir in a writable tree are found
// whatever their names; a working tree that merely has a file named HEAD
// is not one; nothing inside a git directory is searched.
func TestFindReposFindsGitDirsByWhatTheyHold(t *testing.T) {
	root := tree(t, map[string]string{
		"srv/origin.git/HEAD": "ref: refs/heads/main\n", "srv/origin.git/objects/": "", "srv/origin.git/refs/": "",
		"srv/origin.git/hooks/pre-receive": "#!/bin/sh\n",
		// a repository inside a bare one's objects is never looked at
		"srv/origin.git/objects/x/.git/HEAD": "ref: refs/heads/main\n",
		"docs/HEAD":                          "the HEAD of the docs\n", "docs/objects/": "", "docs/refs/": "",
		"app/.git/HEAD": "ref: refs/heads/main\n", "app/.git/objects/": "", "app/.git/refs/": "",
	})
	f := FindRepos([]string{root})
	want := []string{filepath.Join(root, "app", ".git"), filepath.Join(root, "srv", "origin.git")}
	if !slices.Equal(f.DotGits, want) {
		t.Fatalf("found %v, want %v", f.DotGits, want)
	}
	var bare *Repo
	for _, r := range f.Repos {
		if r.Bare {
			bare = r
		}
	}
	if bare == nil || bare.GitDir != filepath.Join(root, "srv", "origin.git") || bare.CommonDir != bare.GitDir {
		t.Fatalf("the bare repository: %+v", bare)
	}
	// The workspace may itself be a git directory, or lie in one.
	f = FindRepos([]string{filepath.Join(root, "srv", "origin.git")})
	if len(f.DotGits) != 1 || len(f.Repos) != 1 || !f.Repos[0].Bare {
		t.Errorf("a root that is a git directory: %+v", f)
	}
	r, err := FindRepo(filepath.Join(root, "srv", "origin.git", "hooks"))
	if err != nil || r == nil || !r.Bare || r.GitDir != filepath.Join(root, "srv", "origin.git") {
		t.Errorf("FindRepo inside a bare repository: %+v, %v", r, err)
	}
	if r, err := FindRepo(filepath.Join(root, "docs")); err != nil || r != nil {
		t.Errorf("FindRepo in a directory with a HEAD file: %+v, %v", r, err)
	}
}

// TestIsGitDirAgreesWithGit: what git itself takes for a repository, by
// GIT_DIR, is what IsGitDir says.
func TestIsGitDirAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	root := t.TempDir()
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
		return cmd.Run()
	}
	if err := git(root, "init", "-q", "--bare", "b.git"); err != nil {
		t.Fatal(err)
	}
	if err := git(root, "init", "-q", "--separate-git-dir="+filepath.Join(root, "sep"), filepath.Join(root, "work")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"b.git", "sep", "work", "."} {
		d := filepath.Join(root, dir)
		byGit := exec.Command("git", "--git-dir="+d, "rev-parse", "--git-dir")
		byGit.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
		gitSays := byGit.Run() == nil
		if got := IsGitDir(d); got != gitSays {
			t.Errorf("%s: IsGitDir %v, git says %v", dir, got, gitSays)
		}
	}
}
