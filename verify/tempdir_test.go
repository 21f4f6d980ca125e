//go:build unix

package verify

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestOpenTempDir(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", root)
	ws := "/some/workspace"
	a, err := OpenTempDir(ws)
	if err != nil || !a.Stable {
		t.Fatalf("OpenTempDir: %+v, %v", a, err)
	}
	b, err := OpenTempDir(ws)
	if err != nil || !b.Stable || b.Path == a.Path {
		t.Fatalf("a second run at once: %+v (first %s), %v", b, a.Path, err)
	}
	other, err := OpenTempDir("/another/workspace")
	if err != nil || other.Path == a.Path || other.Path == b.Path {
		t.Fatalf("another workspace: %+v, %v", other, err)
	}
	other.Close()
	// What a hostile child leaves: a file, a directory it locked, a link
	// out of the temp dir.
	outside := filepath.Join(root, "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(a.Path, "left"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(a.Path, "locked", "deep"), 0o755)
	os.Chmod(filepath.Join(a.Path, "locked"), 0)
	os.Symlink(outside, filepath.Join(a.Path, "link"))
	path := a.Path
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Close: %v", path, err)
	}
	if _, err := os.Lstat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("its lock file is still there after Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("removal followed a link: %v", err)
	}
	// The slot is free again: the next run gets the same path, empty,
	// even when something was planted there meanwhile (a link).
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	c, err := OpenTempDir(ws)
	if err != nil || c.Path != path {
		t.Fatalf("the next run: %+v, %v; want %s", c, err, path)
	}
	if fi, err := os.Lstat(c.Path); err != nil || !fi.IsDir() {
		t.Fatalf("%s is not a directory: %v", c.Path, err)
	}
	if ents, _ := os.ReadDir(c.Path); len(ents) != 0 {
		t.Errorf("the next run's temp dir is not empty: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("emptying the slot followed a planted link: %v", err)
	}
	c.Close()
	b.Close()
}

// TestOpenTempDirUnsafeParent: a per-user directory that others may write
// is not used; the run gets a temp dir of its own.
func TestOpenTempDirUnsafeParent(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", root)
	base := filepath.Join(root, "wrun-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(base, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o777)
	d, err := OpenTempDir("/ws")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Stable || filepath.Dir(d.Path) != root {
		t.Errorf("got %+v, want a temp dir of this run only in %s", d, root)
	}
}

func TestTempRoot(t *testing.T) {
	for dir, want := range map[string]string{
		"/tmp/wrun-1000/0a1b2c3d-0":    "/tmp/wrun-1000",
		"/work/tmp/wrun-0/0a1b2c3d-7/": "/work/tmp/wrun-0",
		"/tmp/wrun-abc123":             "", // a temp dir of its run only: its parent is /tmp
		"/tmp/wrun-x/0a1b-0":           "",
		"/tmp/wrun-/0a1b-0":            "",
		"":                             "",
	} {
		if got := TempRoot(dir); got != want {
			t.Errorf("TempRoot(%q) = %q, want %q", dir, got, want)
		}
	}
}
