package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

func TestShared(t *testing.T) {
	homes := []string{"/export/home/u"}
	for p, want := range map[string]bool{"/": true, "/tmp": true, "/home": true, "/tmp/": true, "/var": true, "/export": true, "/export/home": true,
		"/tmp/x": false, "/home/u": false, "/usr/local": false, "/go": false, "/app": false, "/export/home/u/go": false} {
		if got := shared(p, homes); got != want {
			t.Errorf("shared(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestSystemRoots(t *testing.T) {
	var paths []string
	for _, r := range SystemRoots("linux") {
		paths = append(paths, r.Path)
	}
	for _, want := range []string{"/usr", "/bin", "/lib", "/etc", "/opt", "/proc", "/sys"} {
		if !slices.Contains(paths, want) {
			t.Errorf("linux: %s is not readable", want)
		}
	}
	for _, not := range []string{"/", "/tmp", "/var/tmp", "/home", "/root", "/srv", "/mnt", "/media", "/var", "/run", "/dev", "/boot"} {
		if slices.Contains(paths, not) {
			t.Errorf("linux: %s is readable whole", not)
		}
	}
	if d := SystemRoots("darwin"); len(d) != 1 || d[0].Path != "/" {
		t.Errorf("darwin: %v (the macOS backend keeps the whole file system for now)", d)
	}
}

func TestResolverRoot(t *testing.T) {
	root := t.TempDir()
	etc, run := filepath.Join(root, "etc"), filepath.Join(root, "run", "systemd", "resolve")
	write(t, filepath.Join(run, "stub-resolv.conf"), "nameserver 127.0.0.53\n", 0o644)
	write(t, filepath.Join(etc, "hosts"), "", 0o644)
	if err := os.Symlink(filepath.Join(run, "stub-resolv.conf"), filepath.Join(etc, "resolv.conf")); err != nil {
		t.Fatal(err)
	}
	roots := []ReadRoot{{Path: etc}}
	if got := resolverRoot(filepath.Join(etc, "resolv.conf"), roots); got != run {
		t.Errorf("a link to systemd-resolved's file: %q, want %q", got, run)
	}
	write(t, filepath.Join(etc, "plain.conf"), "", 0o644)
	if got := resolverRoot(filepath.Join(etc, "plain.conf"), roots); got != "" {
		t.Errorf("a file in /etc: %q, want nothing more", got)
	}
	if got := resolverRoot(filepath.Join(etc, "missing"), roots); got != "" {
		t.Errorf("a missing file: %q", got)
	}
}

// readsHost: the system's directories (sys), a home with a toolchain on
// PATH, a toolchain and a program outside both, the temp dirs of this run
// and of another, and what lies elsewhere: the layout of /tmp, /srv and
// /home, where nothing is readable but what is named.
func readsHost(t *testing.T) (Host, string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for f, mode := range map[string]os.FileMode{
		"sys/usr/bin/cc": 0o755, "sys/etc/passwd": 0o644,
		"home/u/.cargo/bin/cargo": 0o755, "home/u/.pgpass": 0o600,
		"ws/main.go":                0o644,
		"srv/gopath/pkg/mod/m/x.go": 0o644, "work/tools/bin/tool": 0o755, "work/tools/lib/libt.so": 0o644, "work/tools/secret": 0o600,
		"builds/app": 0o755, "builds/other": 0o755,
		"tmp/krb5cc_0": 0o600, "tmp/dir/private.key": 0o600, "tmp/dir/public.txt": 0o644,
		"tmp/wrun-0/aaaa-0/mine": 0o600, "tmp/wrun-0/bbbb-0/theirs": 0o600, "tmp/wrun-0/bbbb-0.lock": 0o600,
		"other/home/secret": 0o644,
	} {
		write(t, filepath.Join(root, f), "x\n", mode)
	}
	home := filepath.Join(root, "home/u")
	return Host{Workdir: filepath.Join(root, "ws"), Home: home, TempDir: filepath.Join(root, "tmp/wrun-0/aaaa-0"),
		Roots:   []ReadRoot{{Path: filepath.Join(root, "sys"), Why: "the system"}},
		Program: filepath.Join(root, "builds/app"),
		Env: []string{"HOME=" + home, "GOPATH=" + filepath.Join(root, "srv/gopath"),
			"PATH=" + filepath.Join(root, "sys/usr/bin") + ":" + filepath.Join(home, ".cargo/bin") + ":" + filepath.Join(root, "work/tools/bin")}}, root
}

// TestReadableByConstruction: what the child reads does not depend on
// where a search looked: a private file one directory below the shared
// temp dir is as unreadable as one directly in it, and so is every other
// file there, whatever its mode.
func TestReadableByConstruction(t *testing.T) {
	h, root := readsHost(t)
	for _, spec := range []string{"inspect", "verify", "write", "full"} {
		g, err := grant.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compute(g, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for f, want := range map[string]bool{
			"sys/usr/bin/cc": true, "sys/etc/passwd": true, "ws/main.go": true,
			"home/u/.cargo/bin/cargo": true, "srv/gopath/pkg/mod/m/x.go": true, // toolchains, wherever they lie
			"work/tools/bin/tool": true, "work/tools/lib/libt.so": true, // on PATH, and the install prefix of its bin
			"builds/app":               true,                                   // the command itself
			"builds/other":             false,                                  // not its directory
			"tmp/wrun-0/aaaa-0/mine":   true,                                   // this run's temp dir
			"tmp/wrun-0/bbbb-0/theirs": false, "tmp/wrun-0/bbbb-0.lock": false, // another run's
			"tmp/krb5cc_0": false, "tmp/dir/private.key": false, "tmp/dir/public.txt": false,
			"home/u/.pgpass": false, "other/home/secret": false,
		} {
			if got := readable(p, filepath.Join(root, f)); got != want {
				t.Errorf("%s: %s readable %v, want %v", spec, f, got, want)
			}
		}
		// --allow-read opens what it names, and that only.
		p, err = Compute(g, h, Options{AllowRead: []string{filepath.Join(root, "tmp/dir")}})
		if err != nil {
			t.Fatal(err)
		}
		if !readable(p, filepath.Join(root, "tmp/dir/public.txt")) || readable(p, filepath.Join(root, "tmp/krb5cc_0")) {
			t.Errorf("%s: --allow-read tmp/dir opens %v, and beside it %v", spec,
				readable(p, filepath.Join(root, "tmp/dir/public.txt")), readable(p, filepath.Join(root, "tmp/krb5cc_0")))
		}
	}
}

// TestOtherRunsTempDirsHiddenInAReadableTree: where the per-user directory
// of temp dirs lies in a readable tree (TMPDIR inside the workspace, an
// --allow-read above it), the other runs' temp dirs stay unreadable.
func TestOtherRunsTempDirsHiddenInAReadableTree(t *testing.T) {
	h, root := readsHost(t)
	g, _ := grant.Parse("inspect")
	p, err := Compute(g, h, Options{AllowRead: []string{filepath.Join(root, "tmp")}})
	if err != nil {
		t.Fatal(err)
	}
	if !readable(p, filepath.Join(root, "tmp/wrun-0/aaaa-0/mine")) || readable(p, filepath.Join(root, "tmp/wrun-0/bbbb-0/theirs")) {
		t.Errorf("--allow-read of the temp dirs' parent: own readable %v, another run's %v",
			readable(p, filepath.Join(root, "tmp/wrun-0/aaaa-0/mine")), readable(p, filepath.Join(root, "tmp/wrun-0/bbbb-0/theirs")))
	}
	if !readable(p, filepath.Join(root, "tmp/dir/public.txt")) {
		t.Errorf("--allow-read %s/tmp does not open the rest of it", root)
	}
}

// TestTheProjectAroundTheWorkspaceIsReadable: a workspace below the top
// of its repository, a cargo workspace or a Go module gets that top
// readable (git, cargo and go read their manifests there), and a linked
// worktree its repository's git dirs; a .git file naming another
// repository, a member naming a directory that is no cargo workspace,
// and a repository holding the home directory open nothing.
func TestTheProjectAroundTheWorkspaceIsReadable(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for f, c := range map[string]string{
		"repo/.git/HEAD": "ref: refs/heads/main\n", "repo/.git/objects/x": "", "repo/.git/refs/heads/main": "",
		"repo/go.mod": "module m\n", "repo/pkg/a.go": "package a\n",
		"repo/.git/worktrees/wt/HEAD": "ref: refs/heads/wt\n", "repo/.git/worktrees/wt/commondir": "../..\n",
		"wt/.git": "gitdir: " + root + "/repo/.git/worktrees/wt\n", "wt/x.go": "",
		"other/.git/HEAD": "ref: refs/heads/main\n", "other/.git/objects/secret": "", "other/.git/refs/x": "",
		"evil/.git":        "gitdir: " + root + "/other/.git\n",
		"cargo/Cargo.toml": "[workspace]\nmembers = [\"app\"]\n", "cargo/Cargo.lock": "", "cargo/app/Cargo.toml": "[package]\nname = \"app\"\n",
		"notws/Cargo.toml": "[package]\nname = \"x\"\n", "notws/secret": "", "notws/m/Cargo.toml": "[package]\nname = \"m\"\nworkspace = \"..\"\n",
		"home/.git/HEAD": "ref: refs/heads/main\n", "home/.git/objects/x": "", "home/.git/refs/x": "", "home/.netrc": "", "home/src/p/a": "",
	} {
		write(t, filepath.Join(root, f), c, 0o644)
	}
	write(t, filepath.Join(root, "repo/.git/worktrees/wt/gitdir"), root+"/wt/.git\n", 0o644)
	g, _ := grant.Parse("inspect")
	for _, tc := range []struct {
		ws        string
		readable  []string
		invisible []string
	}{
		{"repo/pkg", []string{"repo/go.mod", "repo/.git/HEAD"}, nil},
		{"wt", []string{"repo/.git/objects/x", "repo/.git/worktrees/wt/HEAD"}, []string{"repo/go.mod"}},
		{"evil", nil, []string{"other/.git/objects/secret"}},
		{"cargo/app", []string{"cargo/Cargo.lock"}, nil},
		{"notws/m", nil, []string{"notws/secret"}},
		{"home/src/p", nil, []string{"home/.netrc", "home/.git/objects/x"}},
	} {
		h := Host{Workdir: filepath.Join(root, tc.ws), Home: filepath.Join(root, "home"), Env: []string{"HOME=" + filepath.Join(root, "home")}}
		p, err := Compute(g, h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tc.readable {
			if !readable(p, filepath.Join(root, f)) {
				t.Errorf("workspace %s: %s is not readable", tc.ws, f)
			}
		}
		for _, f := range tc.invisible {
			if readable(p, filepath.Join(root, f)) {
				t.Errorf("workspace %s: %s is readable", tc.ws, f)
			}
		}
	}
}

func TestUnnamedTopLevelDirectoriesAreHoles(t *testing.T) {
	holes := unnamedTop([]Rule{{Path: "/usr", Access: ReadExec}, {Path: "/tmp/x", Access: ReadExec}}, []Hole{{Path: "/dev"}})
	var paths []string
	for _, h := range holes {
		paths = append(paths, h.Path)
		if h.Withheld&ReadFile == 0 {
			t.Errorf("%s: withholds %v", h.Path, h.Withheld)
		}
	}
	if _, err := os.Stat("/tmp"); err == nil && !slices.Contains(paths, "/tmp") {
		t.Errorf("/tmp, which only a rule inside names, is no hole: %v", paths)
	}
	for _, not := range []string{"/usr", "/dev", "/bin"} {
		if slices.Contains(paths, not) {
			t.Errorf("%s is a hole: %v", not, paths)
		}
	}
}
