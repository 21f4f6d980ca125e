package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A refused push is recorded where the environment says and read back
// from the shim's directory only, bounded: at most maxPushReports files,
// regular ones named push-*, their unprintable characters dropped, each
// cut at maxPushReport bytes.
func TestPushRefusalReports(t *testing.T) {
	shim := t.TempDir()
	dir := PushReportDir(shim)
	prep := []Step{{Kind: StepGitShim, Dir: shim}}
	if got, err := ReadPushRefusals(prep); err != nil || got != nil {
		t.Fatalf("no report directory: %q, %v", got, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{EnvGitReport + "=" + dir}
	RecordPushRefusal(env, "origin")
	RecordPushRefusal(nil, "nowhere")                         // no directory named: nothing
	RecordPushRefusal([]string{EnvGitReport + "=rel"}, "rel") // not absolute: nothing
	os.WriteFile(filepath.Join(dir, "push-esc"), []byte("evil\x1b[2J\ndest"), 0o600)
	os.WriteFile(filepath.Join(dir, "other"), []byte("not a report"), 0o600)
	os.Symlink("/etc/hostname", filepath.Join(dir, "push-link"))
	got, err := ReadPushRefusals(prep)
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"evil[2Jdest", "origin"}) {
		t.Fatalf("reports %q, %v", got, err)
	}
	for i := range 40 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("push-%d", i)), make([]byte, 5000), 0o600)
	}
	got, _ = ReadPushRefusals(prep)
	if len(got) != maxPushReports {
		t.Fatalf("%d reports read, want at most %d", len(got), maxPushReports)
	}
	if got, _ := ReadPushRefusals(nil); got != nil {
		t.Fatalf("a run without a git shim: %q", got)
	}
}
