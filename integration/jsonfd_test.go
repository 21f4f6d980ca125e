//go:build linux

package integration

import (
	"encoding/json"
	"os"
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
