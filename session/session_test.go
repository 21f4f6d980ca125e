package session

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
)

func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	for _, bad := range []string{"", "short", "has space in it here", strings.Repeat("x", 129), "../../../../etc/passwd"} {
		if _, err := Open(dir, bad); err == nil {
			t.Errorf("Open(%q) accepted", bad)
		}
	}
	id := "harness-7f3a9c0e1d2b4a56"
	s, err := Open(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Remembered()) != 0 {
		t.Fatalf("a new session remembers %v", s.Remembered())
	}
	r := escalate.Remembered{Workdir: "/w", Kind: escalate.KindAllowWrite, Args: []string{"--allow-write", "/w/out"}}
	if err := s.Remember([]escalate.Remembered{r, r}); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir, id)
	if err != nil || len(again.Remembered()) != 1 {
		t.Fatalf("reopened: %v, %v", again, err)
	}
	other, err := Open(dir, "harness-0000000000000000")
	if err != nil || len(other.Remembered()) != 0 {
		t.Fatalf("another session sees %v (%v)", other.Remembered(), err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), id) {
			t.Errorf("the id is written in a file name: %s", e.Name())
		}
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store directory mode %v, %v", fi.Mode(), err)
	}
	// Expired: nothing remembered.
	old := time.Now().Add(-MaxAge - time.Minute)
	if err := os.Chtimes(s.path, old, old); err != nil {
		t.Fatal(err)
	}
	if exp, err := Open(dir, id); err != nil || len(exp.Remembered()) != 0 {
		t.Errorf("an expired session remembers %v (%v)", exp.Remembered(), err)
	}
}

// TestValidID: the id check is the regexp ^[A-Za-z0-9._-]{16,128}$ it
// replaced, at its bounds and for each class of character.
func TestValidID(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._-]{16,128}$`)
	for _, id := range []string{
		"", "short", strings.Repeat("a", 15), strings.Repeat("a", 16), strings.Repeat("Z", 128), strings.Repeat("9", 129),
		"harness-0000000000000000", "a.b_c-d.e_f-g.h_i", "0123456789abcdef/", "0123456789abcdef\n", "0123456789abcdéf",
		"0123456789 abcdef", "0123456789abcdef\x00", "0123456789ABCDEF+",
	} {
		if got, want := validID(id), re.MatchString(id); got != want {
			t.Errorf("validID(%q) = %v, the regexp says %v", id, got, want)
		}
	}
}
