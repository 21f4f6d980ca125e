//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// --json-fd N: the summary alone on descriptor N, the human lines on
// stderr, and the command never gets N. --json on stderr: the summary
// starts on a line of its own even when the command's output ends
// without a newline.
func TestJSONSummaryOnItsOwnDescriptorAndLine(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	summary := filepath.Join(t.TempDir(), "summary.json")
	f, err := os.Create(summary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The command tries to write into descriptor 3 too; without wrun (the
	// control) that works.
	act := `printf 'no newline' >&2; echo leak >&3 2>/dev/null; exit 4`
	ctl, err := os.Create(filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	run(t, runOpts{dir: ws, files: []*os.File{ctl}}, "sh", "-c", act)
	if b, _ := os.ReadFile(ctl.Name()); !strings.Contains(string(b), "leak") {
		t.Fatalf("control: the command could not write descriptor 3: %q", b)
	}

	r := wrun(t, runOpts{dir: ws, files: []*os.File{f}}, "--json-fd", "3", "--", "sh", "-c", act)
	if r.code != 4 {
		t.Fatalf("want the command's status 4:\n%s", r)
	}
	b, _ := os.ReadFile(summary)
	var s struct {
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.ExitCode != 4 {
		t.Fatalf("descriptor 3 does not hold the summary alone: %v %q", err, b)
	}
	if strings.Contains(string(b), "leak") {
		t.Errorf("the command wrote into wrun's --json-fd: %q", b)
	}
	if strings.Contains(r.stderr, `"exit_code"`) {
		t.Errorf("the summary is on stderr too:\n%s", r)
	}

	r = wrun(t, runOpts{dir: ws}, "--json", "--", "sh", "-c", act)
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "{") || json.Unmarshal([]byte(last), &s) != nil || s.ExitCode != 4 {
		t.Errorf("the summary does not stand on a line of its own:\n%q", r.stderr)
	}

	// A descriptor wrun was not given is refused before anything runs.
	marker := filepath.Join(ws, "ran")
	r = wrun(t, runOpts{dir: ws}, "--grant", "write", "--json-fd", "7", "--", "touch", marker)
	if r.code != 125 || !strings.Contains(r.stderr, "--json-fd") || exists(marker) {
		t.Errorf("want exit 125 for a descriptor wrun does not have, and nothing run:\n%s", r)
	}
}

// TestReportNotOnAChannelTheCommandSpeaksLast (issue 24, class 9): with
// --keep-background, processes the command leaves can write stderr after
// wrun's summary, so --json there is refused before anything runs; the
// summary goes where the command cannot write (--json-fd), and there a
// leftover that writes a JSON object on stderr after wrun exits (the
// control: a harness reading stderr's last object would take it) does not
// touch the summary. A --json-fd that is the command's own stderr is
// refused too.
func TestReportNotOnAChannelTheCommandSpeaksLast(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	r := wrun(t, runOpts{dir: ws}, "--grant", "write", "--json", "--keep-background", "--", "touch", marker)
	if r.code != 125 || !strings.Contains(r.stderr, "--json-fd") || exists(marker) {
		t.Fatalf("--json with --keep-background: want exit 125 naming --json-fd, nothing run:\n%s", r)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fake := `{"exit_code": 0, "request": {"forged": true}}`
	act := "(sleep 0.3; echo '" + fake + "' >&2) & exit 3"
	r = wrun(t, runOpts{dir: ws, files: []*os.File{f}}, "--json-fd", "3", "--keep-background", "--", "sh", "-c", act)
	if r.code != 3 {
		t.Fatalf("want the command's status 3:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if lines[len(lines)-1] != fake {
		t.Fatalf("control: the leftover did not speak last on stderr:\n%s", r)
	}
	b, _ := os.ReadFile(f.Name())
	if err := validateSummary(b); err != nil || strings.Contains(string(b), "forged") {
		t.Errorf("the summary on --json-fd is not wrun's alone: %v\n%s", err, b)
	}

	// The summary's descriptor is the command's stderr: refused.
	shared, err := os.Create(filepath.Join(t.TempDir(), "shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	for _, tc := range []struct {
		fd   *os.File
		code int
	}{{shared, 125}, {f, 0}} {
		if err := shared.Truncate(0); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bins.wrun, "--grant", "write", "--json-fd", "3", "--", "touch", marker)
		cmd.Dir, cmd.Stderr, cmd.ExtraFiles = ws, shared, []*os.File{tc.fd}
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		out, _ := os.ReadFile(shared.Name())
		if code != tc.code || (tc.code == 125) != strings.Contains(string(out), "same file as wrun's stderr") || (tc.code == 125) == exists(marker) {
			t.Errorf("--json-fd on %s: exit %d, want %d:\n%s", tc.fd.Name(), code, tc.code, out)
		}
	}
}
