package roster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func dirs(t *testing.T) (reg, ws string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, ws = filepath.Join(base, "roster"), filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return reg, ws
}

func entry(t *testing.T, id string, share bool, writes ...string) Entry {
	t.Helper()
	e := Entry{ID: id, PID: os.Getpid(), Start: time.Now(), Argv: []string{"true"}, Grant: "write", Share: share}
	for _, w := range writes {
		s, err := NewScope(w, "test")
		if err != nil {
			t.Fatal(err)
		}
		e.Writes = append(e.Writes, s)
	}
	return e
}

func TestConflictGuard(t *testing.T) {
	reg, ws := dirs(t)
	other := filepath.Join(filepath.Dir(ws), "other")
	os.Mkdir(other, 0o755)
	link := filepath.Join(filepath.Dir(ws), "link")
	os.Symlink(filepath.Join(ws, "sub"), link)
	first, err := Register(reg, entry(t, "a", false, ws))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Release)
	for _, tc := range []struct {
		name    string
		e       Entry
		refused bool
	}{
		{"same directory", entry(t, "b1", false, ws), true},
		{"inside it", entry(t, "b2", false, filepath.Join(ws, "sub")), true},
		{"above it", entry(t, "b3", false, filepath.Dir(ws)), true},
		{"through a symbolic link", entry(t, "b4", false, link), true},
		{"elsewhere", entry(t, "b5", false, other), false},
		{"read-only", entry(t, "b6", false), false},
		{"only one shares", entry(t, "b7", true, ws), true},
	} {
		h, err := Register(reg, tc.e)
		var ce *ConflictError
		switch {
		case tc.refused && !errors.As(err, &ce):
			t.Errorf("%s: not refused (%v)", tc.name, err)
		case tc.refused && (ce.Owner.ID != "a" || ce.Owner.PID != os.Getpid()):
			t.Errorf("%s: owner %+v", tc.name, ce.Owner)
		case !tc.refused && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		h.Release()
	}
	// Both share: allowed.
	first.Release()
	s1, err := Register(reg, entry(t, "s1", true, ws))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Release()
	s2, err := Register(reg, entry(t, "s2", true, ws))
	if err != nil {
		t.Fatalf("both share: %v", err)
	}
	s2.Release()
}

// TestStaleEntryIgnored: an entry whose run is gone (its lock dropped,
// the file left behind as after SIGKILL) neither shows nor blocks.
func TestStaleEntryIgnored(t *testing.T) {
	reg, ws := dirs(t)
	h, err := Register(reg, entry(t, "dead", false, ws))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := List(reg); len(l) != 1 {
		t.Fatalf("live entry not listed: %v", l)
	}
	h.f.Close() // the process "died": the kernel dropped the lock; the file stays
	if _, err := os.Stat(h.path); err != nil {
		t.Fatal("the entry file should remain for this test")
	}
	if l, _ := List(reg); len(l) != 0 {
		t.Fatalf("dead entry listed: %v", l)
	}
	h2, err := Register(reg, entry(t, "next", false, ws))
	if err != nil {
		t.Fatalf("stale entry blocked: %v", err)
	}
	defer h2.Release()
	if _, err := os.Stat(h.path); !os.IsNotExist(err) {
		t.Error("stale entry not removed on the next registration")
	}
}

// TestSameInstant: many runs registering the same workspace at once:
// exactly one gets it.
func TestSameInstant(t *testing.T) {
	reg, ws := dirs(t)
	const n = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	held := make(chan *Held, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := entry(t, fmt.Sprint("r", i), false, ws)
			<-start
			if h, err := Register(reg, e); err == nil {
				held <- h
			}
		}()
	}
	close(start)
	wg.Wait()
	close(held)
	got := 0
	for h := range held {
		got++
		h.Release()
	}
	if got != 1 {
		t.Fatalf("%d runs got the workspace, want 1", got)
	}
}

// TestBindMount: a bind mount of the workspace is the same directory.
func TestBindMount(t *testing.T) {
	reg, ws := dirs(t)
	mnt := filepath.Join(filepath.Dir(ws), "mnt")
	os.Mkdir(mnt, 0o755)
	if err := unix.Mount(ws, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount needs CAP_SYS_ADMIN: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	a, _ := NewScope(ws, "x")
	b, _ := NewScope(filepath.Join(mnt, "sub"), "x")
	if a.Path == b.Path || within(b.Path, a.Path) {
		t.Fatalf("paths should differ: %s %s", a.Path, b.Path)
	}
	h, err := Register(reg, entry(t, "a", false, ws))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	var ce *ConflictError
	if _, err := Register(reg, entry(t, "b", false, filepath.Join(mnt, "sub"))); !errors.As(err, &ce) {
		t.Fatalf("a write scope through a bind mount was not refused: %v", err)
	}
	// Control: without the first run, it is allowed.
	h.Release()
	h2, err := Register(reg, entry(t, "c", false, filepath.Join(mnt, "sub")))
	if err != nil {
		t.Fatal(err)
	}
	h2.Release()
}

// BenchmarkRegister is what the roster adds to the launch path: taking
// the registry's lock, checking the live writers and writing the entry
// (here with 10 live runs), then removing it at exit.
func BenchmarkRegister(b *testing.B) {
	base := b.TempDir()
	reg, ws := filepath.Join(base, "roster"), filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	for i := range 10 {
		d := filepath.Join(base, fmt.Sprint("other", i))
		os.Mkdir(d, 0o755)
		s, _ := NewScope(d, "x")
		h, err := Register(reg, Entry{ID: fmt.Sprint("o", i), PID: 1, Start: time.Now(), Writes: []Scope{s}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(h.Release)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s, err := NewScope(ws, "the workspace")
		if err != nil {
			b.Fatal(err)
		}
		h, err := Register(reg, Entry{ID: fmt.Sprint("r", i), PID: 1, Start: time.Now(), Argv: []string{"true"}, Writes: []Scope{s}})
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
	}
}
