package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// protectFixture: a ~/src layout (two repositories, one with a linked
// worktree) inside a home directory with dot files, a symlinked one, and
// a cache.
func protectFixture(t *testing.T) (home string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	home = t.TempDir()
	home, _ = filepath.EvalSymlinks(home)
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, r := range []string{"src/a", "src/b"} {
		d := filepath.Join(home, r)
		os.MkdirAll(d, 0o755)
		git(d, "init", "-q", "-b", "main")
		git(d, "commit", "-q", "--allow-empty", "-m", "x")
	}
	git(filepath.Join(home, "src/a"), "worktree", "add", "-q", filepath.Join(home, "src/a-wt"), "-b", "wt")
	for p, c := range map[string]string{".bashrc": "#", ".ssh/config": "", ".cache/x": "", ".cargo/registry/x": "", ".cargo/config.toml": ""} {
		os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755)
		os.WriteFile(filepath.Join(home, p), []byte(c), 0o644)
	}
	os.Symlink("/nonexistent/profile", filepath.Join(home, ".profile"))
	os.MkdirAll(filepath.Join(home, "src/a/.wrun"), 0o755)
	os.WriteFile(filepath.Join(home, "src/a/.wrun/tools.toml"), []byte("[tools]\nBash = [\"edit\"]\n"), 0o644)
	return home
}

func TestProtectedPaths(t *testing.T) {
	home := protectFixture(t)
	src := filepath.Join(home, "src")
	type want struct {
		path   string
		exists bool
		create Create
		pin    bool
	}
	tests := []struct {
		name    string
		grant   string
		workdir string
		env     []string
		want    []want
		not     []string
	}{
		{name: "write in ~/src: every repository and worktree", grant: "write", workdir: src,
			want: []want{
				{path: src + "/a/.git", exists: true, pin: true},
				{path: src + "/a/.git/config", exists: true},
				{path: src + "/a/.git/hooks", exists: true},
				{path: src + "/a/.git/info", exists: true},
				{path: src + "/a/.git/commondir"},
				{path: src + "/a/.git/rebase-merge"},
				{path: src + "/a/.git/modules"},
				{path: src + "/a/.git/worktrees/a-wt", exists: true, pin: true},
				{path: src + "/a/.git/worktrees/a-wt/commondir", exists: true},
				{path: src + "/a/.git/worktrees/a-wt/gitdir", exists: true},
				{path: src + "/a-wt/.git", exists: true},
				{path: src + "/b/.git/config", exists: true},
				{path: src + "/b/.git/hooks", exists: true},
				{path: src + "/b/.git/sequencer"},
				// wrun's own files in the workspace and each work tree:
				// .wrun.toml and .wrun/ (the repository's tool labels),
				// existing or not.
				{path: src + "/.wrun.toml"},
				{path: src + "/.wrun"},
				{path: src + "/a/.wrun", exists: true},
				{path: src + "/b/.wrun.toml"},
				{path: src + "/a-wt/.wrun"},
			},
			not: []string{home + "/.bashrc", src + "/a/.git/objects", src + "/a/.git/refs", src + "/a/.git/index", src + "/a/.git/HEAD"}},
		{name: "write with the home as workspace: every dot entry", grant: "write", workdir: home,
			want: []want{
				{path: home + "/.bashrc", exists: true},
				{path: home + "/.ssh", exists: true},
				{path: home + "/.cache", exists: true},
				{path: home + "/.cargo", exists: true},
				{path: home + "/.config", create: CreateDir},
				{path: home + "/.local", create: CreateDir},
				{path: home + "/.zshenv"},
				{path: src + "/b/.git/config", exists: true},
			},
			not: []string{home + "/.profile", home + "/src"}},
		{name: "full with the home as workspace: the caches stay writable", grant: "full", workdir: home,
			env: []string{"XDG_CACHE_HOME=" + home + "/.cache", "CARGO_HOME=" + home + "/.cargo"},
			want: []want{
				{path: home + "/.cargo/config.toml", exists: true},
				{path: home + "/.bashrc", exists: true},
			},
			not: []string{home + "/.cache", home + "/.cargo", home + "/.cargo/registry"}},
		{name: "XDG_CONFIG_HOME and PATH inside the workspace", grant: "write", workdir: src,
			env: []string{"XDG_CONFIG_HOME=" + src + "/cfg", "PATH=" + src + "/a:/usr/bin"},
			want: []want{
				{path: src + "/cfg", create: CreateDir},
				{path: src + "/a", exists: true},
			},
			not: []string{src + "/b"}},
		{name: "verify: nothing in the repository's git dir but through verify's rules", grant: "verify", workdir: src + "/a",
			not: []string{src + "/a/.git", src + "/a/.git/config", home + "/.bashrc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := grant.Parse(tc.grant)
			if err != nil {
				t.Fatal(err)
			}
			env := append([]string{"HOME=" + home, "PATH=/usr/bin:/bin"}, tc.env...)
			p, err := Compute(g, Host{Workdir: tc.workdir, Home: home, Env: env, TempDir: t.TempDir()}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Protected{}
			for _, pr := range p.Protected {
				got[pr.Path] = pr
			}
			for _, w := range tc.want {
				pr, ok := got[w.path]
				if !ok {
					t.Errorf("%s is not protected", w.path)
					continue
				}
				if pr.Exists != w.exists || pr.Create != w.create || pr.Pin != w.pin {
					t.Errorf("%s: exists %v create %q pin %v, want %v %q %v", w.path, pr.Exists, pr.Create, pr.Pin, w.exists, w.create, w.pin)
				}
			}
			for _, n := range tc.not {
				if pr, ok := got[n]; ok {
					t.Errorf("%s should not be protected: %+v", n, pr)
				}
			}
		})
	}
}

// TestProtectedGitDirsWhateverTheirName: a bare repository in a writable
// tree, a separate git dir and the git directory GIT_DIR names are
// protected as a .git is (config, hooks, info, commondir, ...), and
// GIT_DIR naming a directory that is not (yet) a git directory keeps the
// child from making it one.
func TestProtectedGitDirsWhateverTheirName(t *testing.T) {
	home := protectFixture(t)
	src := filepath.Join(home, "src")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(src, "init", "-q", "--bare", "origin.git")
	os.MkdirAll(filepath.Join(src, "meta"), 0o755)
	git(src, "init", "-q", "--separate-git-dir="+filepath.Join(src, "meta", "c-git"), filepath.Join(home, "c"))
	os.MkdirAll(filepath.Join(src, "plain"), 0o755)
	for _, tc := range []struct {
		name string
		env  []string
		want []string
		not  []string
	}{
		{name: "bare and separate", want: []string{
			src + "/origin.git", src + "/origin.git/config", src + "/origin.git/hooks", src + "/origin.git/info",
			src + "/origin.git/commondir", src + "/origin.git/worktrees",
			src + "/meta/c-git", src + "/meta/c-git/config", src + "/meta/c-git/hooks"},
			not: []string{src + "/origin.git/objects", src + "/origin.git/refs", src + "/origin.git/HEAD", src + "/origin.git/.wrun.toml"}},
		{name: "GIT_DIR names a git dir", env: []string{"GIT_DIR=" + src + "/a/.git"},
			want: []string{src + "/a/.git/config", src + "/a/.git/hooks"}},
		{name: "GIT_DIR names a plain directory", env: []string{"GIT_DIR=plain"},
			want: []string{src + "/plain/HEAD", src + "/plain/config", src + "/plain/hooks"},
			not:  []string{src + "/plain"}},
		{name: "GIT_DIR names nothing yet", env: []string{"GIT_DIR=" + src + "/new.git"},
			want: []string{src + "/new.git"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"HOME=" + home, "PATH=/usr/bin:/bin"}, tc.env...)
			g, err := grant.Parse("write")
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compute(g, Host{Workdir: src, Home: home, Env: env, TempDir: t.TempDir()}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Protected{}
			for _, pr := range p.Protected {
				got[pr.Path] = pr
			}
			for _, w := range tc.want {
				if _, ok := got[w]; !ok {
					t.Errorf("%s is not protected", w)
				}
			}
			for _, n := range tc.not {
				if _, ok := got[n]; ok {
					t.Errorf("%s should not be protected", n)
				}
			}
			if pr := got[src+"/origin.git"]; !pr.Pin {
				t.Errorf("the bare repository is not pinned: %+v", pr)
			}
		})
	}
}
