//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// freshHome returns the environment of a user on a machine where wrun has
// never run: an empty HOME and no XDG directories. The go command keeps
// the test's own caches (named explicitly, as a user's go env would), so
// that nothing is downloaded or compiled twice.
func freshHome(t *testing.T) (home string, env []string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env = []string{"HOME=" + home, "XDG_CACHE_HOME=", "XDG_STATE_HOME=", "XDG_CONFIG_HOME=", "XDG_DATA_HOME="}
	for _, name := range []string{"GOCACHE", "GOMODCACHE"} {
		v := strings.TrimSpace(run(t, runOpts{}, "go", "env", name).stdout)
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	return home, env
}

// The first run on a machine where wrun has never run: wrun makes the
// state directory it needs (mode 0700) and the command succeeds.
func TestFirstRunInAnEmptyHome(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	home, env := freshHome(t)
	ws := workspace(t)
	goModule(t, ws, "example.com/firstrun")
	for _, args := range [][]string{
		{"--grant", "verify", "--", "go", "version"},
		{"--grant", "verify", "--", "go", "vet", "./..."},
		{"--grant", "inspect", "--", "true"},
	} {
		r := wrun(t, runOpts{dir: ws, env: env}, args...)
		if r.code != 0 {
			t.Fatalf("wrun %s in an empty HOME: %s", strings.Join(args, " "), r)
		}
	}
	root := filepath.Join(home, ".cache", "wrun")
	fi, err := os.Lstat(root)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory %s: %v %v; want a directory of mode 0700", root, fi, err)
	}
}

// A state directory that is a symbolic link is refused (exit 125) rather
// than followed: everything wrun keeps beneath it would be redirected.
func TestStateDirectoryLinkIsRefused(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	home, env := freshHome(t)
	ws := workspace(t)
	goModule(t, ws, "example.com/firstrun")
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(home, ".cache", "wrun")); err != nil {
		t.Fatal(err)
	}
	r := wrun(t, runOpts{dir: ws, env: env}, "--grant", "verify", "--", "go", "version")
	if r.code != 125 || !strings.Contains(r.stderr, "symbolic link") {
		t.Fatalf("a linked state directory: want exit 125 naming the link: %s", r)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("wrun wrote through the link: %v", entries)
	}
	// Control: with the link gone, the same run works.
	os.Remove(filepath.Join(home, ".cache", "wrun"))
	if r := wrun(t, runOpts{dir: ws, env: env}, "--grant", "verify", "--", "go", "version"); r.code != 0 {
		t.Fatalf("control: %s", r)
	}
}
