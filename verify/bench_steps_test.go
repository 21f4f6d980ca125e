package verify

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStepQuarantineEmpty is the git quarantine of a run whose
// command writes no object (`git status`, `true`): opened before the
// child (lock, settle leftovers, create, register as an alternate) and
// closed after it (lock, nothing to move, unregister, remove). Every
// verify run in a repository pays it.
func BenchmarkStepQuarantineEmpty(b *testing.B) {
	ws := b.TempDir()
	for _, d := range []string{".git/refs", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-1")
	for b.Loop() {
		sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
		if err != nil {
			b.Fatal(err)
		}
		if w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true); len(w) > 0 {
			b.Fatal(w)
		}
	}
}

// BenchmarkStepTempDir is the private temp dir of a run whose command
// writes nothing there: its slot taken (emptied) and given back, in the
// default temp directory as every run does.
func BenchmarkStepTempDir(b *testing.B) {
	ws := b.TempDir() // a workspace of this benchmark's own: its own slot
	for b.Loop() {
		t, err := OpenTempDir(ws)
		if err != nil {
			b.Fatal(err)
		}
		if err := t.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
