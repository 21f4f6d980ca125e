//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostilePathIsQuotedOnTheTerminal: the child creates a file whose
// name holds a clear-screen sequence, a newline and a right-to-left
// override; wrun's denial line shows it quoted, one line, no ESC byte.
func TestHostilePathIsQuotedOnTheTerminal(t *testing.T) {
	escapeAttempt(t)
	requireABI(t, 3)
	ws := workspace(t)
	name := "x\x1b[2J\ny\u202etxt"
	// Control: the name printed bare carries the bytes a terminal acts on.
	ctl := workspace(t)
	mustWrite(t, filepath.Join(ctl, name), "")
	out, err := exec.Command("ls", "--quoting-style=literal", "--show-control-chars", ctl).Output()
	if err != nil || !strings.Contains(string(out), "\x1b[2J") || !strings.Contains(string(out), "\u202e") {
		t.Fatalf("control: plain ls does not print the raw name: %q %v", out, err)
	}
	r := wrun(t, runOpts{dir: ws}, "--grant", "inspect", "--", "sh", "-c", `printf x > "$1"`, "sh", filepath.Join(ws, name))
	if r.code == 0 || !strings.Contains(r.stderr, "wrun: denied create $'"+ws+`/x\e[2J\ny\u202etxt'`) {
		t.Fatalf("want the quoted denial line:\n%s", r)
	}
	// The child's own stderr (sh's message) is its business; every line
	// wrun writes is one line with nothing a terminal acts on.
	childDenied := "Permission denied"
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "wrun:") && (strings.ContainsRune(line, 0x1b) || strings.ContainsRune(line, 0x202e)) {
			t.Errorf("a wrun line carries a raw ESC or U+202E: %q", line)
		}
		if strings.HasPrefix(line, "y\u202etxt") && !strings.Contains(line, childDenied) {
			t.Errorf("the child's newline split wrun's line: %q", line)
		}
	}
	// The JSON keeps the name as it is, escaped as JSON.
	_, req, rj := runJSON(t, runOpts{dir: ws}, "--grant", "inspect", "--", "sh", "-c", `printf x > "$1"`, "sh", filepath.Join(ws, name))
	if req == nil || len(req.Denials) == 0 || req.Denials[0].Path != filepath.Join(ws, name) {
		t.Fatalf("the request does not name the path as it is:\n%s", rj)
	}
	lines := strings.Split(strings.TrimSpace(rj.stderr), "\n")
	if last := lines[len(lines)-1]; strings.ContainsRune(last, 0x1b) || strings.ContainsRune(last, 0x202e) {
		t.Errorf("--json carries a raw ESC or U+202E:\n%q", last)
	}
}

// TestEscalationFileIsNotWrittenThroughALink: the child replaces the
// escalation file with a link to the user's ~/.bashrc; wrun replaces the
// link with the request and leaves ~/.bashrc alone.
func TestEscalationFileIsNotWrittenThroughALink(t *testing.T) {
	escapeAttempt(t)
	requireABI(t, 3)
	ws, home := workspace(t), workspace(t)
	bashrc := filepath.Join(home, ".bashrc")
	mustWrite(t, bashrc, "# rc\n")
	req := filepath.Join(ws, "req.json")
	// Control: a plain unsandboxed write to the link lands in ~/.bashrc.
	ctl := filepath.Join(workspace(t), "link")
	if err := os.Symlink(bashrc+".ctl", ctl); err != nil {
		t.Fatal(err)
	}
	if r := run(t, runOpts{}, "sh", "-c", `echo req > "$1"`, "sh", ctl); r.code != 0 || mustRead(t, bashrc+".ctl") != "req\n" {
		t.Fatalf("control: writing to the link did not reach its target:\n%s", r)
	}
	outside := filepath.Join(workspace(t), "result.txt")
	r := wrun(t, runOpts{dir: ws, env: []string{"HOME=" + home}}, "--grant", "write", "--escalation-file", req, "--",
		"sh", "-c", `ln -sf "$1" "$2"; echo x > "$3"`, "sh", bashrc, req, outside)
	if r.code == 0 {
		t.Fatalf("want the denied write to fail the command:\n%s", r)
	}
	if got := mustRead(t, bashrc); got != "# rc\n" {
		t.Errorf("~/.bashrc changed: %q\n%s", got, r)
	}
	fi, err := os.Lstat(req)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the escalation file is not a regular file: %v %v\n%s", fi, err, r)
	}
	if err := validateRequest([]byte(mustRead(t, req))); err != nil || !strings.Contains(mustRead(t, req), outside) {
		t.Errorf("the escalation file does not hold the request: %v\n%s", err, mustRead(t, req))
	}
}

// TestStaleEscalationFileIsRemoved: a request an earlier run left is gone
// after a run that was denied nothing.
func TestStaleEscalationFileIsRemoved(t *testing.T) {
	escapeAttempt(t)
	requireABI(t, 3)
	ws := workspace(t)
	req := filepath.Join(workspace(t), "req.json")
	mustWrite(t, req, `{"stale": true}`)
	if r := wrun(t, runOpts{dir: ws}, "--escalation-file", req, "--", "true"); r.code != 0 {
		t.Fatalf("want success:\n%s", r)
	}
	if exists(req) {
		t.Errorf("the stale request survived a run with no denials: %s", mustRead(t, req))
	}
}

// TestUnwritableEscalationFileIsRefusedFirst: an escalation file that
// cannot be written is refused with exit 125 before the command runs.
func TestUnwritableEscalationFileIsRefusedFirst(t *testing.T) {
	requireABI(t, 3)
	if os.Geteuid() != 0 {
		escapeSkipped(t, 1, "runs wrun as nobody, which needs root to arrange")
		t.Skip("runs wrun as nobody, which needs root to arrange")
	}
	escapeAttempt(t)
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	ro := workspace(t) // owned by root, 0755: nobody cannot create in it
	for _, d := range []string{ws, ro} {
		if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, ws, 65534, 65534)
	for _, c := range []struct {
		name string
		o    runOpts
		file string
	}{
		{"missing directory", runOpts{dir: ws, cred: nobody, env: []string{"HOME=/nonexistent"}}, filepath.Join(ws, "no", "such", "req.json")},
		{"not writable by the user", runOpts{dir: ws, cred: nobody, env: []string{"HOME=/nonexistent"}}, filepath.Join(ro, "req.json")},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Control: the same command with a writable escalation file runs.
			ok := filepath.Join(ws, "req.json")
			if r := wrun(t, c.o, "--grant", "write", "--escalation-file", ok, "--", "touch", marker); r.code != 0 || !exists(marker) {
				t.Fatalf("control: the command did not run:\n%s", r)
			}
			os.Remove(marker)
			r := wrun(t, c.o, "--grant", "write", "--escalation-file", c.file, "--", "touch", marker)
			if r.code != 125 || !strings.Contains(r.stderr, "--escalation-file") || !strings.Contains(r.stderr, "the command was not run") {
				t.Errorf("want exit 125 naming --escalation-file:\n%s", r)
			}
			if exists(marker) {
				t.Errorf("the command ran")
			}
		})
	}
}

// TestApprovingALinkApprovesWhereItLeads: the workspace holds `out ->
// $HOME`; the child's refused writes under out/ become a request, and an
// approver that approves everything within a write ceiling is asked
// about the resolved paths (the home, which stays hidden and protected),
// so nothing is widened: ~/.bashrc is unchanged, nothing new appears in
// the home and the key is not printed. The control: without wrun the same
// writes go through the link.
func TestApprovingALinkApprovesWhereItLeads(t *testing.T) {
	requireABI(t, 3)
	escapeAttempt(t)
	base := workspace(t)
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	mustWrite(t, filepath.Join(home, ".bashrc"), "# rc\n")
	mustWrite(t, filepath.Join(home, ".ssh", "id_x"), "SECRET-KEY-approve\n")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(home, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	act := `echo evil >> out/.bashrc; echo x > out/planted; cat out/.ssh/id_x`
	env := []string{"HOME=" + home}
	// Control: without wrun the writes land in the home.
	twin := filepath.Join(workspace(t), "F")
	copyTree(t, base, twin)
	os.Remove(filepath.Join(twin, "ws", "out"))
	os.Symlink(filepath.Join(twin, "home"), filepath.Join(twin, "ws", "out"))
	if r := run(t, runOpts{dir: filepath.Join(twin, "ws"), env: env}, "sh", "-c", act); !strings.Contains(r.stdout, "SECRET-KEY-approve") ||
		mustRead(t, filepath.Join(twin, "home", ".bashrc")) == "# rc\n" || !exists(filepath.Join(twin, "home", "planted")) {
		t.Fatalf("control: the writes did not go through the link: %s", r)
	}
	reqFile := filepath.Join(base, "seen.json")
	approver := `cat > ` + reqFile + `; echo '{"decision":"approve"}'`
	r := wrun(t, runOpts{dir: ws, env: env}, "--grant", "inspect", "--ceiling", "write", "--on-denial", "retry", "--retry-safe",
		"--approver", approver, "--", "sh", "-c", act)
	if strings.Contains(r.stdout, "SECRET-KEY-approve") {
		t.Errorf("ESCAPE: the key was printed after approval:\n%s", r)
	}
	if got := mustRead(t, filepath.Join(home, ".bashrc")); got != "# rc\n" {
		t.Errorf("ESCAPE: ~/.bashrc changed: %q\n%s", got, r)
	}
	if exists(filepath.Join(home, "planted")) {
		t.Errorf("ESCAPE: a file was created in the home:\n%s", r)
	}
	// What the approver was shown names the home, never out/.
	seen := mustRead(t, reqFile)
	if strings.Contains(seen, filepath.Join(ws, "out")) || !strings.Contains(seen, home) {
		t.Errorf("the approver was shown the link's name rather than where it leads:\n%s", seen)
	}
}
