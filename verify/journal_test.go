package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestJournalPublishedLocked: the journal appears under its name only
// whole and locked (written aside, renamed), so another run settling
// stale journals leaves it alone while its run lasts and checks it once
// the lock is free; a journal never published is removed once unlocked.
func TestJournalPublishedLocked(t *testing.T) {
	dir := t.TempDir()
	absent := filepath.Join(t.TempDir(), "must-not-exist")
	g := &Guard{ID: "run1", Journal: dir, Absent: []string{absent}}
	f, err := g.writeJournal()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Guard
	if err := json.Unmarshal(b, &back); err != nil || back.ID != "run1" {
		t.Fatalf("the journal is not whole: %q (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".run1.new")); !os.IsNotExist(err) {
		t.Fatalf("the unpublished name is left: %v", err)
	}
	if got := settleStaleGuards(dir, "other"); len(got) != 0 {
		t.Fatalf("a locked journal was settled: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "run1.json")); err != nil {
		t.Fatalf("a locked journal was removed: %v", err)
	}
	// The run ends without its check (its lock goes with it); meanwhile
	// the command made what must not exist.
	f.Close()
	if err := os.WriteFile(absent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := settleStaleGuards(dir, "other"); len(got) == 0 {
		t.Fatal("the stale journal's check found nothing")
	}
	if _, err := os.Stat(filepath.Join(dir, "run1.json")); !os.IsNotExist(err) {
		t.Fatalf("a settled journal was kept: %v", err)
	}

	// Unpublished: kept while locked, removed once free.
	half := filepath.Join(dir, ".run2.new")
	h, err := os.OpenFile(half, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockFile(h, false); err != nil {
		t.Fatal(err)
	}
	settleStaleGuards(dir, "other")
	if _, err := os.Stat(half); err != nil {
		t.Fatalf("a journal being written was removed: %v", err)
	}
	h.Close()
	settleStaleGuards(dir, "other")
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Fatalf("an abandoned unpublished journal was kept: %v", err)
	}
}
