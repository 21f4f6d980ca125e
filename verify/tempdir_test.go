//go:build unix

package verify

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
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
	// The slot stays for the next run, empty.
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s after Close: %v, %v; want an empty directory, mode 0700", path, fi, err)
	}
	if ents, _ := os.ReadDir(path); len(ents) != 0 {
		t.Errorf("%s is not empty after Close: %v", path, ents)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("removal followed a link: %v", err)
	}
	// Taken again as it is: the same directory.
	held := holdDir(t, path)
	again, err := OpenTempDir(ws)
	if err != nil || again.Path != path {
		t.Fatalf("the next run: %+v, %v; want %s", again, err, path)
	}
	if removedSince(t, held) {
		t.Errorf("an untouched slot was made anew")
	}
	again.Close()
	// The slot is free again: the next run gets the same path, empty,
	// even when something was planted there meanwhile (a link).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
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

// TestOpenTempDirReusedOnlyAsMade: a slot directory is taken again only
// as wrun left it; one the child changed (its mode, an extended attribute
// such as a default ACL) is made anew, mode 0700, empty.
func TestOpenTempDirReusedOnlyAsMade(t *testing.T) {
	tests := []struct {
		name   string
		change func(path string) error
		anew   bool
	}{
		{"untouched", func(string) error { return nil }, false},
		{"a file left", func(p string) error { return os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600) }, false},
		{"mode 0777", func(p string) error { return os.Chmod(p, 0o777) }, true},
		{"mode 0750", func(p string) error { return os.Chmod(p, 0o750) }, true},
		{"setgid", func(p string) error { return unix.Chmod(p, 0o2700) }, true},
		{"sticky", func(p string) error { return unix.Chmod(p, 0o1700) }, true},
		{"mode 0500", func(p string) error { return os.Chmod(p, 0o500) }, true},
		{"a user xattr", func(p string) error { return unix.Setxattr(p, "user.wrun-test", []byte("x"), 0) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			t.Setenv("TMPDIR", root)
			a, err := OpenTempDir("/ws")
			if err != nil || !a.Stable {
				t.Fatalf("OpenTempDir: %+v, %v", a, err)
			}
			path := a.Path
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			held := holdDir(t, path)
			if err := tc.change(path); err != nil {
				if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM) {
					t.Skipf("this file system: %v", err)
				}
				t.Fatal(err)
			}
			b, err := OpenTempDir("/ws")
			if err != nil || b.Path != path {
				t.Fatalf("the next run: %+v, %v; want %s", b, err, path)
			}
			defer b.Close()
			if anew := removedSince(t, held); anew != tc.anew {
				t.Errorf("made anew: %v, want %v", anew, tc.anew)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.IsDir() || fi.Mode()&os.ModeType != os.ModeDir || fi.Mode().Perm() != 0o700 || fi.Mode()&(os.ModeSetgid|os.ModeSticky) != 0 {
				t.Errorf("%s: %v, %v; want a directory, mode 0700", path, fi, err)
			}
			if ents, _ := os.ReadDir(path); len(ents) != 0 {
				t.Errorf("not empty: %v", ents)
			}
			if sz, _ := unix.Listxattr(path, make([]byte, 256)); sz != 0 {
				t.Errorf("extended attributes left: %d bytes of names", sz)
			}
		})
	}
}

// holdDir opens path; removedSince reports whether that directory was
// removed since (a new one may have the same inode number).
func holdDir(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func removedSince(t *testing.T, f *os.File) bool {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Nlink == 0
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
