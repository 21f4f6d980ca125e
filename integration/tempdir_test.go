package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVerifyGoTestCachedWithTempDir: a package whose test uses t.TempDir
// (so the go command keys its result on TMPDIR) is `(cached)` the second
// time under verify, as it is bare: the private temp dir has a stable
// path per workspace.
func TestVerifyGoTestCachedWithTempDir(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "go")
	var nonce [4]byte
	rand.Read(nonce[:])
	module := "example.com/tmpdir" + hex.EncodeToString(nonce[:])
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "go.mod"), "module "+module+"\n\ngo 1.22\n")
	mustWrite(t, filepath.Join(ws, "tmp_test.go"), `package tmpdir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTempDir(t *testing.T) {
	if err := os.WriteFile(filepath.Join(t.TempDir(), "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`)
	ran := regexp.MustCompile(`(?m)^ok\s+` + module + `\s+[0-9.]+s$`)
	cached := regexp.MustCompile(`(?m)^ok\s+` + module + `\s+\(cached\)$`)
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "go", "test", "."); r.code != 0 || !ran.MatchString(r.stdout) {
		t.Fatalf("first go test: %s", r)
	}
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "go", "test", "."); r.code != 0 || !cached.MatchString(r.stdout) {
		t.Fatalf("the second go test under verify is not (cached): %s", r)
	}
	// Control: bare, the second run is cached too (the go command caches
	// this test at all).
	run(t, runOpts{dir: ws}, "go", "test", ".")
	if r := run(t, runOpts{dir: ws}, "go", "test", "."); r.code != 0 || !cached.MatchString(r.stdout) {
		t.Fatalf("control: bare go test is not (cached) the second time: %s", r)
	}
}

// TestTempDirPrivatePerRun: the temp dir of a workspace keeps its path from
// run to run, but starts empty (what a run left, even a directory it made
// unreadable, is gone), is emptied after the run (the slot directory
// itself stays for the workspace's next run), and two runs at once never
// share one.
func TestTempDirPrivatePerRun(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	first := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c",
		`echo "$TMPDIR"; echo secret > "$TMPDIR/left"; mkdir -p "$TMPDIR/locked/deep"; chmod 000 "$TMPDIR/locked"`)
	if first.code != 0 {
		t.Fatalf("first run: %s", first)
	}
	tmp := strings.TrimSpace(first.stdout)
	if !filepath.IsAbs(tmp) {
		t.Fatalf("TMPDIR %q", tmp)
	}
	if left, err := os.ReadDir(tmp); err == nil && len(left) > 0 {
		t.Errorf("the temp dir %s is not empty after the run: %v", tmp, left)
	} else if err != nil && !os.IsNotExist(err) {
		t.Errorf("the temp dir %s after the run: %v", tmp, err)
	}
	second := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", `echo "$TMPDIR"; ls -A "$TMPDIR"`)
	lines := strings.Split(strings.TrimSpace(second.stdout), "\n")
	if second.code != 0 || lines[0] != tmp {
		t.Fatalf("second run: TMPDIR is not the first run's %s: %s", tmp, second)
	}
	for _, l := range lines[1:] {
		if l == "left" || l == "locked" {
			t.Errorf("the second run sees %q the first left in its temp dir: %s", l, second)
		}
	}
	// Control: the file was really written (a run that keeps its temp dir
	// for background processes leaves it, and the next run empties it).
	keep := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--keep-background", "--", "sh", "-c", `echo left > "$TMPDIR/left"`)
	if keep.code != 0 || mustRead(t, filepath.Join(tmp, "left")) != "left\n" {
		t.Fatalf("control: the file was not left in %s: %s", tmp, keep)
	}
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", `ls -A "$TMPDIR"`); strings.Contains(r.stdout, "left") {
		t.Errorf("a run after --keep-background sees what it left: %s", r)
	}

	// Two at once: the first waits on its stdin while the second runs.
	cmd := exec.Command(bins.wrun, "--grant", "verify", "--", "sh", "-c", `echo "$TMPDIR"; read x`)
	cmd.Dir = ws
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	busy := strings.TrimSpace(line)
	other := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", `echo "$TMPDIR"`)
	if other.code != 0 || strings.TrimSpace(other.stdout) == busy {
		t.Errorf("two runs at once share the temp dir %s: %s", busy, other)
	}
	in.Write([]byte("\n"))
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the first run: %v", err)
	}
}
