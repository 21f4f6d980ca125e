package verify

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// The private state of sandboxed runs (their go build cache, cargo's
// target dir) lives in wrun's state directory, one directory per key
// (policy.StateKey: a workspace and the authority a run had there):
// ROOT/ws/KEY. Every set of --allow-write paths, every grant, every
// workspace starts a key of its own, so the state would grow without
// bound: beside each key, ROOT/ws/KEY.json records the workspace and grant
// it belongs to, when it was last used and its size, and the keys are
// kept within a size bound (DefaultStateMax, the user config's
// cache.max_size), the least recently used removed first. A run holds its
// key (a shared lock on ROOT/ws/KEY.lock) from before its state is made
// until it ends, so no key a live run uses is ever removed.

// DefaultStateMax is the built-in bound on the private state of all keys.
const DefaultStateMax int64 = 2 << 30

// StateRecordSchema names the form of a key's record.
const StateRecordSchema = "https://wrun.dev/schema/state-key.v1.json"

// stateEvictEvery is how often, at most, a run that made no new key
// measures every key and removes what is over the bound: measuring walks
// every file of every key. A run that made a new key always does.
const stateEvictEvery = 10 * time.Minute

// StateRecord is what is recorded beside a key: whose it is and how it was
// used.
type StateRecord struct {
	Schema string `json:"schema"`
	// Key is the key (the directory's name).
	Key string `json:"key"`
	// Workspace is the workspace the key belongs to; Grant the canonical
	// grant; AllowWrite, AllowRead, AllowUnix and KeepEnv the rest of
	// the authority the key stands for.
	Workspace  string   `json:"workspace"`
	Grant      string   `json:"grant"`
	AllowWrite []string `json:"allow_write,omitempty"`
	AllowRead  []string `json:"allow_read,omitempty"`
	AllowUnix  []string `json:"allow_unix,omitempty"`
	KeepEnv    []string `json:"keep_env,omitempty"`
	// Created is when the key was first used, LastUsed when a run last
	// started with it.
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Size is the disk space the key's directory took (bytes, blocks
	// counted) when measured at Measured.
	Size     int64     `json:"size"`
	Measured time.Time `json:"measured,omitzero"`
}

// StateEntry is one key as wrun cache lists it.
type StateEntry struct {
	StateRecord
	// Path is the key's directory.
	Path string `json:"path"`
	// InUse is set while a live run holds the key.
	InUse bool `json:"in_use"`
	// Recorded is false for a key with no record (made by an older wrun):
	// then only Key, Path, Size and LastUsed (the directory's time) are
	// known.
	Recorded bool `json:"recorded"`
}

// Evictions returns the keys to remove, in order, so that the keys not in
// use fit within max bytes with those in use: the least recently used
// first (ties by key). Keys in use are never removed, even when they alone
// exceed max.
func Evictions(keys []StateEntry, max int64) []string {
	var total int64
	for _, k := range keys {
		total += k.Size
	}
	if total <= max {
		return nil
	}
	order := slices.Clone(keys)
	slices.SortStableFunc(order, func(a, b StateEntry) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	var out []string
	for _, k := range order {
		if total <= max {
			break
		}
		if k.InUse {
			continue
		}
		out = append(out, k.Key)
		total -= k.Size
	}
	return out
}

// validStateKey says whether name is a key policy.StateKey makes (hex, a
// dash, hex): nothing else under ROOT/ws is ever removed as a key.
func validStateKey(name string) bool {
	a, b, ok := strings.Cut(name, "-")
	isHex := func(s string) bool {
		return s != "" && strings.Trim(s, "0123456789abcdef") == ""
	}
	return ok && isHex(a) && isHex(b)
}

func encodeRecord(r StateRecord) ([]byte, error) {
	r.Schema = StateRecordSchema
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
