package receipt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/run"
)

func sample(i int) *Receipt {
	start := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	r := New(Facts{ID: fmt.Sprintf("r%d", i), Start: start, End: start.Add(time.Second), Argv: []string{"true", strings.Repeat("x", 300)},
		Workdir: "/w", GrantRequested: "inspect", GrantSource: "built-in", CeilingSrc: "built-in"}, &run.Summary{Grant: "files=read,shell=inspect,network=off,desktop=off", Sandbox: "landlock"})
	return &r
}

func TestAppendConcurrentLinesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "receipts.jsonl")
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Append(path, 0, sample(i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, bad, err := Read(path)
	if err != nil || bad != 0 || len(rs) != n {
		t.Fatalf("read %d receipts, %d bad, %v; want %d, 0", len(rs), bad, err, n)
	}
	fi, _ := os.Stat(path)
	di, _ := os.Stat(filepath.Dir(path))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v %v, want 0600 in 0700", fi.Mode(), di.Mode())
	}
}

func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	line, _ := sample(0).Line()
	max := int64(len(line)) * 5
	for i := range 12 {
		if err := Append(path, max, sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	cur, _, _ := readOne(path)
	old, _, _ := readOne(path + ".1")
	if len(cur) == 0 || len(cur) > 5 || len(old) != 5 {
		t.Fatalf("after rotation: %d current, %d old; want 1-5 and 5", len(cur), len(old))
	}
	all, bad, _ := Read(path)
	if bad != 0 || all[len(all)-1].ID != "r11" {
		t.Errorf("newest last: got %s (%d bad)", all[len(all)-1].ID, bad)
	}
}

func TestAppendRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, nil, 0o644)
	path := filepath.Join(dir, "receipts.jsonl")
	os.Symlink(target, path)
	if err := Append(path, 0, sample(0)); err == nil {
		t.Fatal("appended through a symbolic link")
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Fatal("the link's target was written")
	}
}

// BenchmarkAppend is the cost of writing one receipt (after the command
// ended, never before it starts).
func BenchmarkAppend(b *testing.B) {
	path := filepath.Join(b.TempDir(), "receipts.jsonl")
	r := sample(0)
	b.ReportAllocs()
	for b.Loop() {
		if err := Append(path, 16<<20, r); err != nil {
			b.Fatal(err)
		}
	}
}
