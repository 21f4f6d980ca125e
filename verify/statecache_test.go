package verify

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEvictions(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 12, 1, 12, min, 0, 0, time.UTC) }
	k := func(key string, size int64, min int, inUse bool) StateEntry {
		return StateEntry{StateRecord: StateRecord{Key: key, Size: size, LastUsed: at(min)}, InUse: inUse}
	}
	tests := []struct {
		name string
		keys []StateEntry
		max  int64
		want []string
	}{
		{"within the bound", []StateEntry{k("a-1", 10, 1, false), k("b-1", 10, 2, false)}, 20, nil},
		{"the oldest first", []StateEntry{k("b-1", 10, 2, false), k("a-1", 10, 1, false), k("c-1", 10, 3, false)}, 20, []string{"a-1"}},
		{"as many as it takes", []StateEntry{k("a-1", 10, 1, false), k("b-1", 10, 2, false), k("c-1", 10, 3, false)}, 10, []string{"a-1", "b-1"}},
		{"never one in use", []StateEntry{k("a-1", 10, 1, true), k("b-1", 10, 2, false), k("c-1", 10, 3, false)}, 20, []string{"b-1"}},
		{"in use alone over the bound", []StateEntry{k("a-1", 50, 1, true), k("b-1", 10, 2, false)}, 20, []string{"b-1"}},
		{"a big old one makes room", []StateEntry{k("a-1", 100, 1, false), k("b-1", 10, 2, false)}, 50, []string{"a-1"}},
		{"ties by key", []StateEntry{k("b-1", 10, 1, false), k("a-1", 10, 1, false)}, 10, []string{"a-1"}},
		{"a bound of zero keeps only what is in use", []StateEntry{k("a-1", 1, 1, false), k("b-1", 1, 2, true)}, 0, []string{"a-1"}},
	}
	for _, tc := range tests {
		if got := Evictions(tc.keys, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fill makes ROOT/ws/KEY/gocache with a file of n bytes.
func fill(t *testing.T, root, key string, n int) {
	t.Helper()
	dir := filepath.Join(root, "ws", key, "gocache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStateUse: a run records whose its key is; when it ends, the least
// recently used keys beyond the bound go, never one a live run holds, and
// never anything under ws/ that is not a key.
func TestStateUse(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no private state here")
	}
	root := filepath.Join(t.TempDir(), "wrun")
	rec := func(ws string) StateRecord {
		return StateRecord{Workspace: ws, Grant: "files=read,shell=verify,network=on,desktop=off", AllowWrite: []string{"/w/out"}}
	}
	// Three earlier keys of 1 MiB, used one after the other.
	for _, key := range []string{"aa-01", "bb-01", "cc-01"} {
		u, err := UseState(root, key, rec("/w"+key), 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		fill(t, root, key, 1<<20)
		if _, err := u.Done(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Something under ws/ that is not a key stays whatever the bound.
	os.MkdirAll(filepath.Join(root, "ws", "not-a-key!"), 0o700)

	// A live run holds bb-01.
	live, err := UseState(root, "bb-01", rec("/wbb-01"), 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ListState(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		got = append(got, k.Key)
		if k.Size < 1<<20 || !k.Recorded || k.Workspace != "/w"+k.Key || k.Grant == "" || !slices.Equal(k.AllowWrite, []string{"/w/out"}) {
			t.Errorf("listed %+v", k)
		}
		if k.InUse != (k.Key == "bb-01") {
			t.Errorf("%s: in use %v", k.Key, k.InUse)
		}
	}
	// bb-01 was used last (by the live run): least recently used first.
	if strings.Join(got, " ") != "aa-01 cc-01 bb-01" {
		t.Errorf("listed %v", got)
	}
	if err := RemoveState(root, "bb-01"); !errors.Is(err, ErrStateInUse) {
		t.Errorf("removing a key a live run holds: %v", err)
	}

	// A new key under a bound of 2.5 MiB: the new key (1 MiB) and the
	// live one stay, the least recently used other goes first.
	u, err := UseState(root, "dd-01", rec("/wdd-01"), 5<<19)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, root, "dd-01", 1<<20)
	removed, err := u.Done()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"aa-01", "cc-01"}) {
		t.Errorf("removed %v", removed)
	}
	for _, k := range removed {
		if _, err := os.Lstat(filepath.Join(root, "ws", k)); err == nil {
			t.Errorf("%s is still there", k)
		}
		if _, err := os.Lstat(filepath.Join(root, "ws", k+".json")); err == nil {
			t.Errorf("%s's record is still there", k)
		}
	}
	for _, k := range []string{"bb-01", "dd-01", "not-a-key!"} {
		if _, err := os.Lstat(filepath.Join(root, "ws", k)); err != nil {
			t.Errorf("%s was removed: %v", k, err)
		}
	}
	// The control: once the live run ends, its key can go too.
	live.Done()
	if removed, err := EvictState(root, 0); err != nil || !slices.Contains(removed, "bb-01") {
		t.Errorf("with no run alive, a bound of 0: removed %v, %v", removed, err)
	}
	if err := RemoveState(root, "../x-1"); err == nil {
		t.Error("a name that is not a key was accepted")
	}
}
