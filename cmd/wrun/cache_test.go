package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/internal/schematest"
	"github.com/wrun-dev/wrun/verify"
)

func runCache(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd := newCacheCmd(&out)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.code
	case errors.As(err, &ue):
		return out.String() + "usage: " + ue.msg, exitWrunFailed
	}
	return out.String() + "error: " + err.Error(), exitWrunFailed
}

// TestCacheCommand: wrun cache lists every key with its workspace and
// grant (--json against its schema), removes by key, by workspace and all,
// and never a key a live run holds.
func TestCacheCommand(t *testing.T) {
	cache, cfg := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	root := filepath.Join(cache, "wrun")
	mk := func(key, ws string) *verify.StateUse {
		u, err := verify.UseState(root, key, verify.StateRecord{Workspace: ws, Grant: "files=read,shell=verify,network=on,desktop=off"}, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, "ws", key, "gocache"), 0o700)
		os.WriteFile(filepath.Join(root, "ws", key, "gocache", "f"), make([]byte, 8192), 0o600)
		return u
	}
	for key, ws := range map[string]string{"aa-01": "/w/a", "bb-01": "/w/b", "cc-01": "/w/a"} {
		mk(key, ws).Done()
	}
	live := mk("dd-01", "/w/d")
	defer live.Done()

	out, code := runCache(t, "list", "--json")
	if code != 0 {
		t.Fatalf("list --json: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "escalate", "schema", "cache-list.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := schematest.Validate(b, []byte(out)); err != nil {
		t.Errorf("list --json does not match its schema: %v\n%s", err, out)
	}
	var rep cacheReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Keys) != 4 || rep.MaxSize != 2<<30 {
		t.Fatalf("list --json: %v %+v", err, rep)
	}
	for _, k := range rep.Keys {
		if !k.Recorded || k.Workspace == "" || k.Grant == "" || k.Size < 8192 || k.InUse != (k.Key == "dd-01") {
			t.Errorf("listed %+v", k)
		}
	}
	if out, _ := runCache(t, "list"); !strings.Contains(out, "4 cache(s)") || !strings.Contains(out, "/w/b") || !strings.Contains(out, "(in use)") || !strings.Contains(out, "verify") {
		t.Errorf("list:\n%s", out)
	}
	// The user's bound shows.
	os.MkdirAll(filepath.Join(cfg, "wrun"), 0o700)
	os.WriteFile(filepath.Join(cfg, "wrun", "config.toml"), []byte("[cache]\nmax_size = \"64MiB\"\n"), 0o600)
	if out, _ := runCache(t, "list"); !strings.Contains(out, "at most 64.0 MiB (cache.max_size, user config") {
		t.Errorf("the user's bound is not shown:\n%s", out)
	}

	if out, code := runCache(t, "rm", "--workspace", "/w/a"); code != 0 || !strings.Contains(out, "removed aa-01") || !strings.Contains(out, "removed cc-01") {
		t.Errorf("rm --workspace: exit %d\n%s", code, out)
	}
	if out, code := runCache(t, "rm", "dd-01"); code != 1 || !strings.Contains(out, "kept dd-01: in use") {
		t.Errorf("rm of a key a live run holds: exit %d\n%s", code, out)
	}
	if out, code := runCache(t, "rm", "ee-01"); code != exitWrunFailed {
		t.Errorf("rm of no such key: exit %d\n%s", code, out)
	}
	if out, code := runCache(t, "rm"); code != exitWrunFailed {
		t.Errorf("rm of nothing: exit %d\n%s", code, out)
	}
	if out, code := runCache(t, "rm", "--all"); code != 1 || !strings.Contains(out, "removed bb-01") {
		t.Errorf("rm --all: exit %d\n%s", code, out)
	}
	live.Done()
	if out, code := runCache(t, "rm", "--all"); code != 0 || !strings.Contains(out, "removed dd-01") {
		t.Errorf("rm --all once the run ended: exit %d\n%s", code, out)
	}
	if keys, _ := verify.ListState(root); len(keys) != 0 {
		t.Errorf("left %+v", keys)
	}
}
