//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// What a sandboxed run writes and wrun keeps (private build caches, cargo's
// target dir) is trusted by later runs under the same authority only, and
// never by unsandboxed ones; wrun's own resources stay bounded whatever
// the child does.

// removeStateOf removes, when the test ends, the private state wrun keeps
// for the workspace ws under any grant (<state>/ws/<workspace hash>-*).
func removeStateOf(t *testing.T, ws string) {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		return
	}
	prefix, _, _ := strings.Cut(policy.StateKey(grant.Grant{}, policy.Host{Workdir: ws}, policy.Options{}), "-")
	t.Cleanup(func() {
		dirs, _ := filepath.Glob(filepath.Join(cache, "wrun", "ws", prefix+"-*"))
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	})
}

// privateRule asks wrun explain which path the rule of source (verify:go,
// verify:cargo) makes writable for dir under grant g.
func privateRule(t *testing.T, dir, g, source string) string {
	t.Helper()
	r := wrun(t, runOpts{dir: dir}, "explain", "--grant", g, "--json")
	var out struct {
		Policy struct {
			Rules []struct {
				Path, Source string
			} `json:"rules"`
		} `json:"policy"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("explain --json: %v\n%s", err, r)
	}
	for _, rule := range out.Policy.Rules {
		if rule.Source == source {
			return rule.Path
		}
	}
	t.Fatalf("no %s rule in the policy of %s:\n%s", source, g, r.stdout)
	return ""
}

// privateCargoTarget is the sandbox's own cargo target dir of ws under g.
func privateCargoTarget(t *testing.T, ws, g string) string {
	t.Helper()
	return privateRule(t, ws, g, "verify:cargo")
}

// TestStateIsKeptPerGrant: a verify child plants a file in its private go
// build cache; a later run under the same grant sees it (the control: the
// cache is kept), a later run under any other grant does not, and its
// cache is another directory.
func TestStateIsKeptPerGrant(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	goModule(t, ws, "example.com/state")
	removeStateOf(t, ws)
	plant := `echo 'echo EXECUTED-PLANTED' > "$GOCACHE/planted.sh" && echo "$GOCACHE"`
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", plant)
	if r.code != 0 {
		t.Fatalf("planting under verify: %s", r)
	}
	verifyCache := strings.TrimSpace(r.stdout)
	// Each later run executes what it finds in its own cache.
	use := `sh "$GOCACHE/planted.sh" 2>/dev/null; echo "$GOCACHE"`
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", use); !strings.Contains(r.stdout, "EXECUTED-PLANTED") {
		t.Fatalf("control: a later verify run does not find its own state: %s", r)
	}
	extra := t.TempDir()
	for _, args := range [][]string{
		{"--grant", "write"},
		{"--grant", "verify,network=off"},
		{"--grant", "verify", "--allow-write", extra},
		{"--grant", "verify", "--allow-read", extra},
	} {
		r := wrun(t, runOpts{dir: ws}, append(args, "--", "sh", "-c", use)...)
		if r.code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
		if strings.Contains(r.stdout, "EXECUTED-PLANTED") {
			t.Errorf("%v executed what a verify run left in its private state", args)
		}
		if got := strings.TrimSpace(r.stdout); got == verifyCache || got == "" {
			t.Errorf("%v uses the go cache %q, want one of its own (verify's is %s)", args, got, verifyCache)
		}
	}
}

// TestStateDirectoryIsProtectedFromWideGrants: a child whose grant writes
// the user's cache directory (shell=full) cannot write wrun's state
// directory, where runs under other grants keep what they trust.
func TestStateDirectoryIsProtectedFromWideGrants(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	goModule(t, ws, "example.com/state")
	removeStateOf(t, ws)
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "true"); r.code != 0 {
		t.Fatalf("a verify run: %s", r)
	}
	verifyCache := privateRule(t, ws, "verify", "verify:go")
	target := filepath.Join(verifyCache, "planted-by-full")
	// Control: the user's cache directory itself is writable under full.
	cache, _ := os.UserCacheDir()
	ctl := filepath.Join(cache, fmt.Sprintf("wrun-itest-%d", os.Getpid()))
	defer os.Remove(ctl)
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify,shell=full", "--", "sh", "-c", "echo x > "+ctl+"; echo x > "+target)
	if !exists(ctl) {
		t.Fatalf("control: shell=full cannot write the user's cache directory %s: %s", cache, r)
	}
	if exists(target) {
		t.Errorf("a shell=full child wrote into a verify run's private state: %s", target)
	}
}

// TestCargoTargetIsNotTrustedLater: a verify child that replaces the test
// binaries of cargo's target dir with a script makes the next unsandboxed
// cargo test run nothing of it. The control shows the attack without wrun:
// cargo runs a replaced binary whose fingerprint is still fresh.
func TestCargoTargetIsNotTrustedLater(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "cargo")
	base := workspace(t)
	ws := filepath.Join(base, "ws")
	cargoWorkspace(t, ws)
	if r := run(t, runOpts{dir: ws}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
		t.Fatalf("cargo generate-lockfile: %s", r)
	}
	removeStateOf(t, ws)
	marker := filepath.Join(base, "pwned")
	// Replaces every test binary below $1 with a script that leaves the
	// marker (and passes).
	trojan := `for f in $(find "$1" -path '*/debug/deps/*' -type f -perm -u+x ! -name '*.so' ! -name '*.d'); do printf '#!/bin/sh\ntouch ` + marker + `\n' > "$f" || exit 1; done`
	if r := run(t, runOpts{dir: ws}, "cargo", "test", "--offline"); r.code != 0 {
		t.Fatalf("cargo test: %s", r)
	}
	// Control, on a twin without wrun.
	twin := filepath.Join(base, "twin")
	copyTree(t, ws, twin)
	if r := run(t, runOpts{dir: twin}, "sh", "-c", trojan, "sh", filepath.Join(twin, "target")); r.code != 0 {
		t.Fatalf("control: replacing the test binaries: %s", r)
	}
	run(t, runOpts{dir: twin}, "cargo", "test", "--offline")
	if !exists(marker) {
		t.Fatal("control: a plain cargo test did not run the replaced test binary; the attack this test guards against is not reproduced")
	}
	os.Remove(marker)

	before := snapshot(t, filepath.Join(ws, "target"))
	// Under verify: cargo test works, and the child then replaces what it
	// can reach: the workspace's target (refused) and its own.
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c",
		`cargo test --offline >/dev/null 2>&1 || exit 3; set -- "$CARGO_TARGET_DIR"; `+trojan+`; set -- `+filepath.Join(ws, "target")+`; `+trojan)
	if r.code == 3 {
		t.Fatalf("cargo test under verify: %s", r)
	}
	if d := diffSnapshot(before, snapshot(t, filepath.Join(ws, "target"))); len(d) > 0 {
		t.Errorf("the workspace's target dir changed under verify: %v", d)
	}
	if r := run(t, runOpts{dir: ws}, "cargo", "test", "--offline"); r.code != 0 || len(testLines(r.stdout)) != 3 {
		t.Errorf("a plain cargo test after the verify run: %s", r)
	}
	if exists(marker) {
		t.Error("a plain cargo test ran a binary a verify child wrote")
	}
	// The sandbox's own target dir was written (the child replaced what is
	// its own), and a later verify run rebuilds or runs only that.
	if !exists(filepath.Join(privateCargoTarget(t, ws, "verify"), "debug")) {
		t.Error("the build under verify did not land in the private target dir")
	}
}

// TestDenialFloodIsBounded: a child that makes 20,000 distinct denials
// costs wrun a bounded amount of memory and time; wrun keeps the first
// sandbox.MaxDenials of them and says how many more it counted. wrun's
// peak RSS is read from outside (the rusage of the waited wrun process).
func TestDenialFloodIsBounded(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := t.TempDir()
	const n = 20000
	loop := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do { echo > "$1/f$i"; } 2>/dev/null; i=$((i+1)); done; exit 0`, n)
	// Control: without wrun the loop creates every file.
	if r := run(t, runOpts{dir: ws}, "sh", "-c", loop, "sh", outside); r.code != 0 {
		t.Fatal(r)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != n {
		t.Fatalf("control: %d files, want %d", len(ents), n)
	}
	denied := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(denied, 0o755)

	cmd := exec.Command(bins.wrun, "--json", "--grant", "verify", "--", "sh", "-c", loop, "sh", denied)
	cmd.Dir = ws
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrun: %v\n%.2000s", err, stderr.String())
	}
	took := time.Since(start)
	maxRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
	var sum struct {
		DenialsDropped int      `json:"denials_dropped"`
		Warnings       []string `json:"warnings"`
		Request        *struct {
			Denials []struct {
				Path string `json:"path"`
			} `json:"denials"`
		} `json:"request"`
		// The loop succeeds: it asks for nothing, its denials are recorded.
		Ignored []struct {
			Path string `json:"path"`
		} `json:"denials_ignored"`
	}
	out := stderr.String()
	if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\n{")+1:]), &sum); err != nil {
		t.Fatalf("the --json summary: %v\n%.2000s", err, out)
	}
	if ents, _ := os.ReadDir(denied); len(ents) != 0 {
		t.Fatalf("the writes were not denied: %d files", len(ents))
	}
	if sum.Request != nil {
		t.Errorf("a request for a run that succeeded")
	}
	kept := len(sum.Ignored)
	t.Logf("%d denials: %d kept, %d counted; wrun's peak RSS %d MB; %v", n, kept, sum.DenialsDropped, maxRSS>>20, took)
	if kept == 0 || kept > 1000 || kept+sum.DenialsDropped < n {
		t.Errorf("%d kept and %d counted of %d denials: want at most 1000 kept, the rest counted", kept, sum.DenialsDropped, n)
	}
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "counted but not kept") {
		t.Errorf("no warning that denials were dropped: %q", sum.Warnings)
	}
	// Bounds documented in the README: 150 MB, a minute (measured: about
	// 45 MB and 6 s on two cores; 845 MB and 22 s before the bounds).
	if maxRSS > 150<<20 {
		t.Errorf("wrun's peak RSS was %d MB for %d denials, over the 150 MB bound", maxRSS>>20, n)
	}
	if took > time.Minute {
		t.Errorf("the run took %v", took)
	}
}
