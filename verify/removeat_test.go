//go:build unix

package verify

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGuardNeverActsThroughAPlantedLink: a parent on the way to what the
// guard removes, restores or moves aside is replaced by a link to a
// victim directory (as a child still running, or one of another run, could
// do after the guard checked it); the guard leaves the victim alone. The
// control: removing by name goes through the link.
func TestGuardNeverActsThroughAPlantedLink(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, victim := filepath.Join(base, "ws"), filepath.Join(base, "victim")
	for _, d := range []string{filepath.Join(victim, ".git"), filepath.Join(ws, "real")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"commondir", ".bashrc", "keep"} {
		if err := os.WriteFile(filepath.Join(victim, f), []byte("victim\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	// Control: an act by name goes through the link.
	ctl := filepath.Join(base, "ctl")
	os.MkdirAll(ctl, 0o755)
	os.WriteFile(filepath.Join(ctl, "x"), nil, 0o644)
	os.Symlink(ctl, filepath.Join(ws, "ctl"))
	if err := os.RemoveAll(filepath.Join(ws, "ctl", "x")); err != nil || pathExists(filepath.Join(ctl, "x")) {
		t.Fatalf("control: removing by name did not go through the link: %v", err)
	}

	g := Guard{ID: "t",
		Absent: []string{filepath.Join(ws, "sub", "commondir"), filepath.Join(ws, "real", "gone")},
		Lists:  []GuardList{{Dir: filepath.Join(ws, "sub"), DotOnly: true, Why: "test"}},
		Links:  []GuardLink{{Path: filepath.Join(ws, "sub", "keep"), Target: "/elsewhere"}},
	}
	os.WriteFile(filepath.Join(ws, "real", "gone"), nil, 0o644)
	g.Check()
	for _, f := range []string{"commondir", ".bashrc", "keep", ".git"} {
		if !pathExists(filepath.Join(victim, f)) {
			t.Errorf("the guard acted through the planted link: victim/%s is gone", f)
		}
	}
	if fi, err := os.Lstat(filepath.Join(victim, "keep")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the guard replaced victim/keep through the link")
	}
	// What lies on a plain path is still removed.
	if pathExists(filepath.Join(ws, "real", "gone")) {
		t.Error("the guard did not remove a path on a plain directory path")
	}
}

func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
