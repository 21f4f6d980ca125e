//go:build linux

package integration

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The verify grant's promise, tested with the real toolchains: cargo, go,
// git (over TCP from a git daemon and from a local path, in a clone and a
// linked worktree) and npm succeed as they do without wrun, while each
// forbidden act fails, leaves no trace, and succeeds in a control run
// without wrun.

// requireTool fails the test when a program it needs is missing: every
// one is installed by scripts/setup (none is optional), and a test that
// skipped instead would pass where it never ran.
func requireTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("needs %s (%s), which is not on PATH: run scripts/setup", n, packageOf(n))
		}
	}
}

// packageOf names what provides a program the tests need.
func packageOf(program string) string {
	switch program {
	case "go":
		return "Go 1.26 or later, which scripts/setup asks for"
	case "node":
		return "the Debian package nodejs"
	case "sh":
		return "the Debian package dash"
	case "pytest":
		return "the Debian package python3-pytest"
	case "cc":
		return "the Debian package gcc"
	case "setsid", "unshare":
		return "the Debian package util-linux"
	case "umount":
		return "the Debian package mount"
	case "script":
		return "the Debian package bsdutils"
	}
	return "the Debian package " + program
}

// snapshot records every entry below root (mode, size, mtime, and the
// content of small files), skipping the relative paths in skip.
func snapshot(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if slices.Contains(skip, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		// A directory's own mtime is left out: wrun's bookkeeping (the git
		// quarantine, made and removed) touches it; its entries are compared.
		v := fmt.Sprintf("%v", fi.Mode())
		if !fi.IsDir() {
			v += fmt.Sprintf(" %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
		if fi.Mode().IsRegular() && fi.Size() < 1<<16 {
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:8])
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameSnapshot reports the differences between two snapshots.
func diffSnapshot(before, after map[string]string) []string {
	var diffs []string
	for k, v := range before {
		if a, ok := after[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if a != v {
			diffs = append(diffs, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "added "+k)
		}
	}
	sort.Strings(diffs)
	return diffs
}

// copyTree copies src to dst (cp -a), for control runs on a twin.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
	}
}

// cargoWorkspace lays out a workspace of two crates, one depending on the
// other by path (no registry), with unit and integration tests.
func cargoWorkspace(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"Cargo.toml":       "[workspace]\nmembers = [\"adder\", \"app\"]\nresolver = \"2\"\n",
		"adder/Cargo.toml": "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"adder/src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n}\n",
		"app/Cargo.toml":   "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nadder = { path = \"../adder\" }\n",
		"app/src/lib.rs":   "pub fn double(x: i64) -> i64 {\n    adder::add(x, x)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(4), 8);\n    }\n}\n",
		"app/tests/it.rs":  "#[test]\nfn doubles_through_the_api() {\n    assert_eq!(app::double(21), 42);\n}\n",
	}
	for p, c := range files {
		mustWrite(t, filepath.Join(dir, p), c)
	}
}

// testLines are cargo's per-test result lines, sorted: what must be the
// same with and without wrun.
func testLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "test ") && !strings.HasPrefix(l, "test result:") {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

func cargoHomeDir() string {
	if h := os.Getenv("CARGO_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cargo")
}

func TestVerifyCargo(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "cargo")
	base := workspace(t)
	ws := filepath.Join(base, "ws")
	cargoWorkspace(t, ws)
	if r := run(t, runOpts{dir: ws}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
		t.Fatalf("cargo generate-lockfile: %s", r)
	}
	// The control: the same workspace, built and tested without wrun.
	copyTree(t, ws, filepath.Join(base, "control"))
	control := run(t, runOpts{dir: filepath.Join(base, "control")}, "cargo", "test", "--offline")
	if control.code != 0 || len(testLines(control.stdout)) != 3 {
		t.Fatalf("control cargo test: %s", control)
	}

	removeStateOf(t, ws)
	removeStateOf(t, filepath.Join(ws, "app")) // run from the member crate too
	source := snapshot(t, ws)
	home := cargoHomeDir()
	homeBefore := snapshot(t, home)
	for _, g := range []string{"verify", "verify,network=off"} {
		for _, args := range [][]string{{"cargo", "test", "--offline"}, {"cargo", "check", "--offline"}} {
			r := wrun(t, runOpts{dir: ws}, append([]string{"--grant", g, "--"}, args...)...)
			if r.code != 0 {
				t.Fatalf("%s: %v: %s", g, args, r)
			}
			if args[1] == "test" && !slices.Equal(testLines(r.stdout), testLines(control.stdout)) {
				t.Errorf("%s: cargo test results differ from the control:\n%q\n%q", g, testLines(r.stdout), testLines(control.stdout))
			}
		}
	}
	// Member crates build too; everything lands in the sandbox's own
	// target dir, never in the workspace's (an unsandboxed cargo would run
	// what it finds there).
	if r := wrun(t, runOpts{dir: filepath.Join(ws, "app")}, "--grant", "verify", "--", "cargo", "test", "--offline"); r.code != 0 || len(testLines(r.stdout)) != 2 {
		t.Fatalf("cargo test in a member crate: %s", r)
	}
	private := privateCargoTarget(t, ws, "verify")
	if !exists(filepath.Join(private, "debug")) || exists(filepath.Join(ws, "target")) || exists(filepath.Join(ws, "app", "target")) {
		t.Errorf("the build did not land in the private target dir %s alone", private)
	}
	if d := diffSnapshot(source, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("the workspace changed: %v", d)
	}
	if d := diffSnapshot(homeBefore, snapshot(t, home)); len(d) > 0 {
		t.Errorf("CARGO_HOME %s changed: %v", home, d)
	}
}

func TestVerifyCargoLockIsNotWritten(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "cargo")
	ws := workspace(t)
	cargoWorkspace(t, ws)
	removeStateOf(t, ws)
	// Without a lock file cargo must write one, which verify denies: the
	// run fails, and says so (Landlock refuses it).
	denied := "Permission denied"
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "cargo", "check", "--offline")
	if r.code == 0 || !strings.Contains(r.stderr, "Cargo.lock") || !strings.Contains(r.stderr, denied) {
		t.Errorf("cargo check without Cargo.lock: %s", r)
	}
	if exists(filepath.Join(ws, "Cargo.lock")) {
		t.Fatal("Cargo.lock was written")
	}
	if r := wrun(t, runOpts{dir: ws}, "explain", "--grant", "verify"); !strings.Contains(r.stdout, "Cargo.lock does not exist") {
		t.Errorf("explain does not warn of the missing Cargo.lock:\n%s", r.stdout)
	}
	// Control: without wrun the same command writes it.
	if r := run(t, runOpts{dir: ws}, "cargo", "check", "--offline"); r.code != 0 || !exists(filepath.Join(ws, "Cargo.lock")) {
		t.Fatalf("control: %s", r)
	}
}

func TestVerifyBuildScriptCannotWriteTheSourceTree(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "cargo")
	base := workspace(t)
	ws := filepath.Join(base, "ws")
	mustWrite(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"gen\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"build.rs\"\n")
	mustWrite(t, filepath.Join(ws, "src", "lib.rs"), "pub fn f() {}\n")
	mustWrite(t, filepath.Join(ws, "build.rs"), "fn main() {\n    std::fs::write(\"src/generated.rs\", \"pub fn g() {}\\n\").expect(\"writing src/generated.rs\");\n}\n")
	if r := run(t, runOpts{dir: ws}, "cargo", "generate-lockfile", "--offline"); r.code != 0 {
		t.Fatal(r)
	}
	copyTree(t, ws, filepath.Join(base, "control"))
	removeStateOf(t, ws)
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "cargo", "check", "--offline")
	if r.code == 0 || !strings.Contains(r.stderr, "writing src/generated.rs") {
		t.Errorf("a build script writing into the source tree: %s", r)
	}
	if exists(filepath.Join(ws, "src", "generated.rs")) {
		t.Fatal("the build script wrote into the source tree")
	}
	if r := run(t, runOpts{dir: filepath.Join(base, "control")}, "cargo", "check", "--offline"); r.code != 0 || !exists(filepath.Join(base, "control", "src", "generated.rs")) {
		t.Fatalf("control: %s", r)
	}
}

// privateGoCache asks wrun where the sandbox's own go cache of dir is.
func privateGoCache(t *testing.T, dir string) string {
	t.Helper()
	r := wrun(t, runOpts{dir: dir}, "explain", "--grant", "verify", "--json")
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
		if rule.Source == "verify:go" {
			return rule.Path
		}
	}
	t.Fatalf("no private go cache in the policy:\n%s", r.stdout)
	return ""
}

func goModule(t *testing.T, dir, module string) {
	t.Helper()
	mustWrite(t, filepath.Join(dir, "go.mod"), "module "+module+"\n\ngo 1.22\n")
	mustWrite(t, filepath.Join(dir, "calc", "calc.go"), "// Package calc adds.\npackage calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n")
	mustWrite(t, filepath.Join(dir, "calc", "calc_test.go"), "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n")
}

func TestVerifyGoTest(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	var nonce [4]byte
	rand.Read(nonce[:])
	module := "example.com/calc" + hex.EncodeToString(nonce[:])
	base := workspace(t)
	ws := filepath.Join(base, "ws")
	goModule(t, ws, module)
	// Warm the user's own cache with what the test binary needs, as any
	// earlier unsandboxed build would (a module of another name, so that
	// this one's entries are new).
	goModule(t, filepath.Join(base, "warm"), module+"warm")
	if r := run(t, runOpts{dir: filepath.Join(base, "warm")}, "go", "test", "./..."); r.code != 0 {
		t.Fatalf("warming the user's cache: %s", r)
	}
	userCache := strings.TrimSpace(run(t, runOpts{dir: ws}, "go", "env", "GOCACHE").stdout)
	private := privateGoCache(t, ws)
	removeStateOf(t, ws)
	source := snapshot(t, ws)

	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "go", "test", "./...")
	if r.code != 0 || !regexp.MustCompile(`(?m)^ok\s+`+module+`/calc\s+[0-9.]+s$`).MatchString(r.stdout) {
		t.Fatalf("first go test: %s", r)
	}
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "go", "test", "./..."); r.code != 0 || !regexp.MustCompile(`(?m)^ok\s+`+module+`/calc\s+\(cached\)$`).MatchString(r.stdout) {
		t.Fatalf("the second go test did not hit the cache: %s", r)
	}
	// Another grant has a cache of its own: what runs under verify wrote
	// is not used by it.
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify,network=off", "--", "go", "test", "./..."); r.code != 0 || !regexp.MustCompile(`(?m)^ok\s+`+module+`/calc\s+[0-9.]+s$`).MatchString(r.stdout) {
		t.Fatalf("verify,network=off: the go test must run, not come from the cache verify runs wrote: %s", r)
	}
	// The sandbox compiled this module only: everything else came from
	// the user's cache, copied read-only into the private one.
	compiled := 0
	filepath.WalkDir(private, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(private, p); err == nil && strings.HasSuffix(p, "-a") && !exists(filepath.Join(userCache, rel)) {
			compiled++
		}
		return nil
	})
	if compiled == 0 || compiled > 40 {
		t.Errorf("the sandbox made %d cache entries of its own; want this module's few, not the standard library's", compiled)
	}
	// From now on the go command uses the private cache directly.
	if r := wrun(t, runOpts{dir: ws}, "explain", "--grant", "verify"); strings.Contains(r.stdout, "GOCACHEPROG") || !strings.Contains(r.stdout, "GOCACHE") {
		t.Errorf("a seeded private cache should be used without a cache program:\n%s", r.stdout)
	}
	if d := diffSnapshot(source, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("the workspace changed: %v", d)
	}
	// Control: the same test without wrun. Nothing the sandbox built
	// reached the user's cache, so it is not cached there.
	if r := run(t, runOpts{dir: ws}, "go", "test", "./..."); r.code != 0 || !regexp.MustCompile(`(?m)^ok\s+`+module+`/calc\s+[0-9.]+s$`).MatchString(r.stdout) {
		t.Fatalf("control go test (it must run, not come from the cache): %s", r)
	}
}

// gitDaemon serves the repositories below base over git:// on 127.0.0.1 and
// returns the port; the test stops it, with the children it forked, also
// when it fails. extra are more git-daemon options (--enable=receive-pack).
func gitDaemon(t *testing.T, base string, extra ...string) int {
	t.Helper()
	execPath := strings.TrimSpace(run(t, runOpts{}, "git", "--exec-path").stdout)
	if _, err := os.Stat(filepath.Join(execPath, "git-daemon")); err != nil {
		t.Fatal("needs git daemon (in the Debian package git, which scripts/setup installs): not in " + execPath)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// git-daemon itself, not `git daemon`: that wrapper forks the daemon,
	// and killing the wrapper left the daemon running. In a process group
	// of its own, so that the daemon and the children it forks per
	// connection all end with the test.
	// Pdeathsig: a test binary killed (a timeout) takes the daemon with
	// it, where no cleanup runs; the daemon's per-connection children end
	// with their connection.
	args := append([]string{"--listen=127.0.0.1", "--port=" + strconv.Itoa(port), "--export-all", "--reuseaddr", "--base-path=" + base}, extra...)
	cmd := exec.Command(filepath.Join(execPath, "git-daemon"), append(args, base)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not listen on port %d", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gitFixture is an upstream repository, a bare remote served over TCP and
// reachable by path, a clone with both as remotes, and a linked worktree.
type gitFixture struct {
	upstream, remote, clone, worktree string
}

func newGitFixture(t *testing.T) gitFixture {
	t.Helper()
	base := workspace(t)
	f := gitFixture{upstream: filepath.Join(base, "upstream"), remote: filepath.Join(base, "srv", "remote.git"),
		clone: filepath.Join(base, "clone"), worktree: filepath.Join(base, "wt")}
	os.MkdirAll(f.upstream, 0o755)
	newRepo(t, f.upstream)
	commit(t, f.upstream, "side", 3)
	gitCmd(t, f.upstream, "checkout", "-q", "-b", "topic")
	commit(t, f.upstream, "topic", 2)
	gitCmd(t, f.upstream, "checkout", "-q", "main")
	commit(t, f.upstream, "main", 2)
	gitCmd(t, base, "clone", "-q", "--bare", f.upstream, f.remote)
	port := gitDaemon(t, filepath.Join(base, "srv"))
	gitCmd(t, base, "clone", "-q", fmt.Sprintf("git://127.0.0.1:%d/remote.git", port), f.clone)
	gitCmd(t, f.clone, "remote", "add", "local", f.remote)
	gitCmd(t, f.clone, "fetch", "-q", "local")
	gitCmd(t, f.clone, "worktree", "add", "-q", f.worktree, "-b", "wt", "origin/main")
	// Upstream moves on: the fetches below have new objects to bring.
	commit(t, f.upstream, "main", 3)
	gitCmd(t, f.upstream, "checkout", "-q", "topic")
	commit(t, f.upstream, "topic", 2)
	gitCmd(t, f.upstream, "checkout", "-q", "main")
	gitCmd(t, f.upstream, "push", "-q", f.remote, "main", "topic")
	return f
}

// commit adds n commits touching a file of that name.
func commit(t *testing.T, dir, name string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		f := filepath.Join(dir, name+".txt")
		old, _ := os.ReadFile(f)
		mustWrite(t, f, string(old)+fmt.Sprintf("%s line %d\n", name, len(old)))
		gitCmd(t, dir, "add", ".")
		gitCmd(t, dir, "commit", "-qm", fmt.Sprintf("%s %d", name, len(old)))
	}
}

// repoState is what a fetch must not touch.
func repoState(t *testing.T, gitDir, commonDir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	for _, p := range []string{filepath.Join(commonDir, "config"), filepath.Join(gitDir, "HEAD"), filepath.Join(gitDir, "index")} {
		st[p] = mustRead(t, p)
	}
	for k, v := range snapshot(t, filepath.Join(commonDir, "hooks")) {
		st["hooks/"+k] = v
	}
	for k, v := range snapshot(t, filepath.Join(commonDir, "objects")) {
		st["objects/"+k] = v
	}
	return st
}

// objectsKept checks that every object that was there still is, unchanged.
func objectsKept(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if strings.HasPrefix(k, "objects/") && !strings.HasSuffix(k, "info") && !strings.Contains(k, "objects/pack") && after[k] != v && k != "objects/" && k != "objects/." && len(filepath.Base(k)) == 38 {
			t.Errorf("existing object %s changed", k)
		}
		if !strings.HasPrefix(k, "objects/") && after[k] != v {
			t.Errorf("%s changed", k)
		}
	}
}

func TestVerifyGitFetchAndMergeTree(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git")
	f := newGitFixture(t)
	want := map[string]string{
		"main":  gitCmd(t, f.remote, "rev-parse", "main"),
		"topic": gitCmd(t, f.remote, "rev-parse", "topic"),
	}
	// The control: an unsandboxed twin of the clone fetches the same.
	twin := f.clone + "-twin"
	copyTree(t, f.clone, twin)
	gitCmd(t, twin, "fetch", "-q", "origin")

	cloneGit := filepath.Join(f.clone, ".git")
	wtGit := filepath.Join(cloneGit, "worktrees", "wt")
	for _, c := range []struct{ name, dir, gitDir, remote, grant string }{
		{"clone, TCP", f.clone, cloneGit, "origin", "verify"},
		{"worktree, local path", f.worktree, wtGit, "local", "verify,network=off"},
		{"worktree, TCP", f.worktree, wtGit, "origin", "verify"},
		{"clone, local path", f.clone, cloneGit, "local", "verify,network=off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := repoState(t, c.gitDir, cloneGit)
			// A remote by path is read like any file outside the
			// workspace: only when named.
			r := wrun(t, runOpts{dir: c.dir}, "--grant", c.grant, "--allow-read", f.remote, "--", "git", "fetch", c.remote)
			if r.code != 0 {
				t.Fatalf("git fetch %s: %s", c.remote, r)
			}
			for branch, sha := range want {
				if got := gitCmd(t, f.clone, "rev-parse", "refs/remotes/"+c.remote+"/"+branch); got != sha {
					t.Errorf("%s/%s = %s, want %s", c.remote, branch, got, sha)
				}
			}
			if !strings.Contains(mustRead(t, filepath.Join(c.gitDir, "FETCH_HEAD")), want["main"]) {
				t.Errorf("FETCH_HEAD does not name the fetched commit")
			}
			objectsKept(t, before, repoState(t, c.gitDir, cloneGit))
			checkSettled(t, cloneGit)
		})
	}
	if got := gitCmd(t, twin, "rev-parse", "origin/main", "origin/topic"); got != want["main"]+"\n"+want["topic"] {
		t.Errorf("the control fetch differs: %s", got)
	}
	// Every object arrived in the repository itself: fsck without any
	// alternate finds everything reachable.
	gitCmd(t, f.clone, "fsck", "--no-dangling")
	// A fetch under network=off cannot reach the daemon.
	if r := wrun(t, runOpts{dir: f.clone}, "--grant", "verify,network=off", "--", "git", "fetch", "origin"); r.code == 0 {
		t.Errorf("git fetch over TCP with network=off succeeded: %s", r)
	}

	// git merge-tree --write-tree writes the merged trees as objects.
	for _, dir := range []string{f.clone, f.worktree} {
		control := gitCmd(t, twin, "merge-tree", "--write-tree", "origin/main", "origin/topic")
		r := wrun(t, runOpts{dir: dir}, "--grant", "verify,network=off", "--", "git", "merge-tree", "--write-tree", "origin/main", "origin/topic")
		if r.code != 0 || strings.TrimSpace(r.stdout) != control {
			t.Fatalf("merge-tree in %s: %s (control %s)", dir, r, control)
		}
		// The tree it printed is in the repository after the run.
		if got := gitCmd(t, f.clone, "cat-file", "-t", control); got != "tree" {
			t.Errorf("merge-tree's tree %s: %s", control, got)
		}
		checkSettled(t, cloneGit)
	}
	gitCmd(t, f.clone, "fsck", "--no-dangling")
}

// checkSettled asserts that no quarantine is left registered or on disk.
func checkSettled(t *testing.T, commonDir string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(commonDir, "objects", "info", "alternates")); err == nil {
		t.Errorf("objects/info/alternates left behind: %q", b)
	}
	if exists(filepath.Join(commonDir, "wrun-quarantine")) {
		t.Errorf("wrun-quarantine left behind")
	}
}

// TestVerifyForbiddenActs runs each act a verifying child must not be able
// to do: without wrun on a twin of the fixture (it works there), then under
// --grant verify, where it must fail and leave the fixture as it was.
func TestVerifyForbiddenActs(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git")
	base := workspace(t)
	fixture := filepath.Join(base, "fixture")
	ws := filepath.Join(fixture, "ws")
	os.MkdirAll(ws, 0o755)
	newRepo(t, ws)
	cargoWorkspace(t, ws)
	mustWrite(t, filepath.Join(ws, "Cargo.lock"), "# This file is automatically @generated by Cargo.\nversion = 4\n")
	os.MkdirAll(filepath.Join(fixture, "cargohome", "registry"), 0o755)
	os.MkdirAll(filepath.Join(fixture, "gocache", "00"), 0o755)
	mustWrite(t, filepath.Join(ws, "go.mod"), "module example.com/x\n\ngo 1.22\n")
	gitCmd(t, ws, "add", ".")
	gitCmd(t, ws, "commit", "-qm", "code")
	obj := gitCmd(t, ws, "rev-parse", "HEAD:README")
	objPath := ".git/objects/" + obj[:2] + "/" + obj[2:]
	// Writable by its owner, so that only the sandbox stands in the way
	// (Landlock does not restrict chmod: a child could do this itself).
	if err := os.Chmod(filepath.Join(ws, objPath), 0o644); err != nil {
		t.Fatal(err)
	}

	// $F is the fixture: the real one under wrun, the twin in the control.
	acts := []struct{ name, sh string }{
		{"write a source file", "echo 'fn evil() {}' >> $F/ws/adder/src/lib.rs"},
		{"write Cargo.lock", "echo '# changed' >> $F/ws/Cargo.lock"},
		{"write .git/config", "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> $F/ws/.git/config"},
		{"create .git/hooks/pre-commit", "echo 'touch /tmp/pwned' > $F/ws/.git/hooks/pre-commit && chmod +x $F/ws/.git/hooks/pre-commit"},
		{"overwrite an existing object", "echo evil > $F/ws/" + objPath},
		{"truncate an existing object", "truncate -s 0 $F/ws/" + objPath},
		{"replace an existing object", "cp $F/ws/" + objPath + " $TMPDIR/o && rm -f $F/ws/" + objPath + " && mv $TMPDIR/o $F/ws/" + objPath},
		{"delete an existing object", "rm -f $F/ws/" + objPath},
		{"plant an object", "mkdir -p $F/ws/.git/objects/ee && echo x > $F/ws/.git/objects/ee/" + strings.Repeat("e", 38)},
		{"register an alternate", "echo /tmp > $F/ws/.git/objects/info/alternates"},
		{"move HEAD", "echo 'ref: refs/heads/other' > $F/ws/.git/HEAD"},
		{"write the index", "echo x >> $F/ws/.git/index"},
		{"plant a link in the reflogs", "mkdir -p $F/ws/.git/logs/refs/heads && ln -s $F/cargohome/victim $F/ws/.git/logs/refs/heads/topic"},
		{"plant a FIFO among the refs", "mkdir -p $F/ws/.git/refs/remotes && mkfifo $F/ws/.git/refs/remotes/hang"},
		{"create a local branch", "git -C $F/ws branch planted"},
		{"delete the checked-out branch", "git -C $F/ws update-ref -d refs/heads/$(git -C $F/ws symbolic-ref --short HEAD)"},
		{"plant a link in cargo's target dir", "mkdir -p $F/ws/target && ln -s $F/cargohome/victim $F/ws/target/.rustc_info.json"},
		{"write under CARGO_HOME", "echo 'pub fn planted() {}' > $F/cargohome/registry/planted.rs"},
		{"write under the user's GOCACHE", "echo poison > $F/gocache/00/planted-a"},
	}
	twin := filepath.Join(base, "twin")
	for _, a := range acts {
		os.RemoveAll(twin)
		copyTree(t, fixture, twin)
		// The control gets a temp dir of its own, as wrun gives the child
		// one (an unset TMPDIR would make "$TMPDIR/o" a file in /).
		if r := run(t, runOpts{dir: twin, env: []string{"TMPDIR=" + t.TempDir()}}, "sh", "-c", strings.ReplaceAll(a.sh, "$F", twin)); r.code != 0 {
			t.Fatalf("control %q without wrun: %s", a.name, r)
		}
	}
	env := []string{"CARGO_HOME=" + filepath.Join(fixture, "cargohome"), "GOCACHE=" + filepath.Join(fixture, "gocache")}
	// cargo builds in a target dir of wrun's: the workspace's is not made.
	removeStateOf(t, ws)
	before := snapshot(t, fixture)
	for _, a := range acts {
		r := wrun(t, runOpts{dir: ws, env: env}, "--grant", "verify", "--", "sh", "-c", strings.ReplaceAll(a.sh, "$F", fixture))
		if r.code == 0 {
			t.Errorf("%s succeeded under verify: %s", a.name, r)
		}
		if d := diffSnapshot(before, snapshot(t, fixture)); len(d) > 0 {
			t.Fatalf("%s left a trace: %v", a.name, d)
		}
	}
	filepath.WalkDir(filepath.Join(ws, "target"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			t.Errorf("a link was planted in target/: %s", p)
		}
		return nil
	})
	// And git itself still works on the repository.
	gitCmd(t, ws, "fsck", "--no-dangling")
}

// TestVerifyForgedObjectIsDiscarded: an object the child writes into its
// quarantine under a name that is not its hash never reaches the
// repository.
func TestVerifyForgedObjectIsDiscarded(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git")
	ws := workspace(t)
	newRepo(t, ws)
	honest := "echo honest | git hash-object -w --stdin"
	forged := strings.Repeat("ab", 20)
	// A valid loose object (of other content) under the forged name.
	forge := "mkdir -p $WRUN_GIT_QUARANTINE/ab && cp $WRUN_GIT_QUARANTINE/$(echo honest | git hash-object --stdin | cut -c1-2)/$(echo honest | git hash-object --stdin | cut -c3-) $WRUN_GIT_QUARANTINE/ab/" + forged[2:]
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", honest+" && "+forge)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	if !strings.Contains(r.stderr, "discarded 1 object") {
		t.Errorf("wrun did not report the forged object: %s", r)
	}
	if got := gitCmd(t, ws, "cat-file", "-t", strings.TrimSpace(r.stdout)); got != "blob" {
		t.Errorf("the honest object: %s", got)
	}
	if exists(filepath.Join(ws, ".git", "objects", "ab", forged[2:])) {
		t.Fatal("the forged object reached the repository")
	}
	checkSettled(t, filepath.Join(ws, ".git"))
}

// TestVerifyQuarantineSurvivesKilledWrun: when wrun is killed with SIGKILL
// after a fetch, the command ends with it (PR_SET_PDEATHSIG); a process
// that called setsid and was forked twice may outlive it (there is no PID
// namespace), and is ended here; the fetched refs stay valid
// (the quarantine stays registered until a run settles it), and the next
// run moves the objects in and unregisters it.
func TestVerifyQuarantineSurvivesKilledWrun(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git", "setsid")
	f := newGitFixture(t)
	common := filepath.Join(f.clone, ".git")
	bg, fg := []string{"sleep", uniqueArg()}, []string{"sleep", uniqueArg()}
	killOnCleanup(t, bg...)
	killOnCleanup(t, fg...)
	// The background one: setsid'd and double-forked, so it is no child
	// of the command and in no process group of the run.
	sh := "git fetch -q local || exit 1; (setsid " + strings.Join(bg, " ") + " </dev/null >/dev/null 2>&1 &); " +
		"sleep 0.2; echo started; exec " + strings.Join(fg, " ")
	cmd := exec.Command(bins.wrun, wrunArgs(t, runOpts{dir: f.clone}, "--grant", "verify,network=off", "--allow-read", f.remote, "--", "sh", "-c", sh)...)
	cmd.Dir = f.clone
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("reading the run's start: %q %v", line, err)
	}
	// "started" comes just before the exec of the foreground sleep.
	for _, p := range [][]string{bg, fg} {
		if !waitRunning(p...) {
			t.Fatalf("%v is not running before wrun is killed", p)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	io.Copy(io.Discard, out)
	if left := waitGone(fg...); len(left) > 0 {
		t.Errorf("the command %v (pid %v) outlived the killed wrun", fg, left)
	}
	for _, p := range hostPids(bg...) {
		syscall.Kill(p, syscall.SIGKILL)
	}

	newMain := gitCmd(t, f.remote, "rev-parse", "main")
	check := func(when string) {
		t.Helper()
		if got := gitCmd(t, f.clone, "rev-parse", "local/main"); got != newMain {
			t.Fatalf("%s: local/main = %s, want %s", when, got, newMain)
		}
		gitCmd(t, f.clone, "fsck", "--no-dangling") // every ref's object is there
	}
	check("after wrun was killed")
	// The new objects are still only in the quarantine, which stays
	// registered until a run settles it.
	if alt := mustRead(t, filepath.Join(common, "objects", "info", "alternates")); !strings.Contains(alt, "wrun-quarantine") {
		t.Fatalf("the quarantine is not registered: %q", alt)
	}
	// Nothing of the killed run lives on: the next run settles it.
	if r := wrun(t, runOpts{dir: f.clone}, "--grant", "verify", "--", "true"); r.code != 0 {
		t.Fatal(r)
	}
	checkSettled(t, common)
	check("after settling")
}

func TestVerifyNpmTest(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "npm", "node")
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "package.json"), `{"name":"calc","version":"1.0.0","scripts":{"test":"node test.js"}}`+"\n")
	mustWrite(t, filepath.Join(ws, "test.js"), "const assert = require('assert');\nassert.strictEqual(2 + 3, 5);\nconsole.log('calc tests passed');\n")
	control := run(t, runOpts{dir: ws}, "npm", "test")
	if control.code != 0 || !strings.Contains(control.stdout, "calc tests passed") {
		t.Fatalf("control npm test: %s", control)
	}
	for _, g := range []string{"verify", "verify,network=off"} {
		r := wrun(t, runOpts{dir: ws}, "--grant", g, "--", "npm", "test")
		if r.code != 0 || !strings.Contains(r.stdout, "calc tests passed") {
			t.Errorf("%s: npm test: %s", g, r)
		}
	}
}

func TestVerifyExplainSaysWhy(t *testing.T) {
	requireTool(t, "git")
	ws := workspace(t)
	newRepo(t, ws)
	cargoWorkspace(t, ws)
	mustWrite(t, filepath.Join(ws, "Cargo.lock"), "version = 4\n")
	mustWrite(t, filepath.Join(ws, "go.mod"), "module example.com/x\n\ngo 1.22\n")
	r := wrun(t, runOpts{dir: ws, env: []string{"CARGO_HOME=/cargo-home", "GOCACHE=/user-gocache"}}, "explain", "--grant", "verify")
	gd := filepath.Join(ws, ".git")
	for _, want := range []string{
		// writable, and which tool needs it
		"/cargo-target .*cargo's target dir private to sandboxed runs of this workspace under this grant",
		"/gocache .*go build cache private to sandboxed runs",
		filepath.Join(gd, "wrun-quarantine") + "/RUN .*quarantine for new git objects",
		filepath.Join(gd, "refs", "remotes") + " .*remote-tracking refs git fetch updates",
		filepath.Join(gd, "refs", "tags") + " .*tags git fetch brings in",
		filepath.Join(gd, "logs", "refs", "remotes") + " .*reflogs",
		filepath.Join(gd, "refs", "heads") + " .*local branches",
		filepath.Join(gd, "FETCH_HEAD") + " .*FETCH_HEAD",
		// kept read-only, and what that stops
		filepath.Join(gd, "config") + " .*runs code at the next unsandboxed git command",
		filepath.Join(gd, "hooks") + " .*planted hook",
		filepath.Join(gd, "objects") + " .*rewritten existing object",
		filepath.Join(ws, "Cargo.lock") + " .*dependency",
		filepath.Join(ws, "target") + " .*unsandboxed cargo run or cargo test executes binaries",
		"/cargo-home .*CARGO_HOME",
		"/user-gocache .*GOCACHE",
		"git-quarantine-close",
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("explain lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestVerifyGitOtherRepositoriesKeepTheirObjects: the quarantine is the
// workspace repository's only. A test suite's own repository (made in the
// run) and a fixture repository (made before) keep their own objects, and
// git run by its full path, past the shim, is denied rather than misled.
func TestVerifyGitOtherRepositoriesKeepTheirObjects(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git")
	ws := workspace(t)
	newRepo(t, ws)
	fixture := filepath.Join(workspace(t), "fixture")
	os.MkdirAll(fixture, 0o755)
	newRepo(t, fixture)
	fixtureHead := gitCmd(t, fixture, "rev-parse", "HEAD")
	sh := `set -e
git -C ` + fixture + ` rev-parse HEAD
r=$TMPDIR/suite; git init -q $r; cd $r
echo a > a; git add a; git -c user.name=t -c user.email=t@e commit -qm a
git rev-parse HEAD
git cat-file -e HEAD:a`
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--allow-read", fixture, "--", "sh", "-c", sh)
	lines := strings.Fields(r.stdout)
	if r.code != 0 || len(lines) != 2 || lines[0] != fixtureHead {
		t.Fatalf("git in other repositories under verify: %s", r)
	}
	if exec.Command("git", "-C", ws, "cat-file", "-e", lines[1]).Run() == nil {
		t.Errorf("the suite's commit %s went into the workspace's repository", lines[1])
	}
	// Past the shim, git writes to the repository's objects, and is denied.
	gitPath, _ := exec.LookPath("git")
	r = wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", gitPath, "hash-object", "-w", "--stdin")
	if r.code == 0 {
		t.Errorf("git past the shim wrote an object: %s", r)
	}
	checkSettled(t, filepath.Join(ws, ".git"))
	gitCmd(t, ws, "fsck", "--no-dangling")
}

// TestVerifyKeepBackgroundLeavesTheQuarantineRegistered: with
// --keep-background, processes of the run may still write the quarantine
// after wrun exits, so it stays registered (refs to its objects stay
// valid), a run beside them leaves it alone, and the next run after they
// are gone settles it.
func TestVerifyKeepBackgroundLeavesTheQuarantineRegistered(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "git")
	ws := workspace(t)
	newRepo(t, ws)
	common := filepath.Join(ws, ".git")
	kept := []string{"sleep", uniqueArg()}
	killOnCleanup(t, kept...)
	r := wrun(t, runOpts{dir: ws}, "--keep-background", "--grant", "verify", "--", "sh", "-c",
		"echo later | git hash-object -w --stdin; "+strings.Join(kept, " ")+" >/dev/null 2>&1 & sleep 0.2")
	fields := strings.Fields(r.stdout)
	if r.code != 0 || len(fields) != 1 || !strings.Contains(r.stderr, "still in use") {
		t.Fatalf("%s", r)
	}
	obj := fields[0]
	survivors := hostPids(kept...)
	if len(survivors) != 1 {
		t.Fatalf("the kept process is not running: %v", survivors)
	}
	if got := gitCmd(t, ws, "cat-file", "-t", obj); got != "blob" {
		t.Fatalf("the object written before wrun exited: %s", got)
	}
	alt := mustRead(t, filepath.Join(common, "objects", "info", "alternates"))
	if !strings.Contains(alt, "wrun-quarantine") {
		t.Fatal("the quarantine was unregistered while a process of its run lives")
	}
	// A process of the earlier run lives on: the next run leaves its
	// quarantine alone.
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "true"); r.code != 0 {
		t.Fatal(r)
	}
	if got := mustRead(t, filepath.Join(common, "objects", "info", "alternates")); got != alt {
		t.Fatalf("a quarantine still in use was settled: %q", got)
	}
	syscall.Kill(survivors[0], syscall.SIGKILL)
	if left := waitGone(kept...); len(left) > 0 {
		t.Fatalf("the kept process %v did not end", left)
	}
	// Gone, it holds the quarantine's lock no more.
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "true"); r.code != 0 {
		t.Fatal(r)
	}
	checkSettled(t, common)
	if got := gitCmd(t, ws, "cat-file", "-t", obj); got != "blob" {
		t.Fatalf("after settling: %s", got)
	}
}
