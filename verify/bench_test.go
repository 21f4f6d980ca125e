package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkQuarantine60 is what a fetch of twenty commits costs wrun
// outside git itself: opening a quarantine, then checking and moving 60
// loose objects in.
func BenchmarkQuarantine60(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ws := b.TempDir()
		for _, d := range []string{".git/refs", ".git/objects"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		common := filepath.Join(ws, ".git")
		q := filepath.Join(common, "wrun-quarantine", "wrun-1")
		b.StartTimer()
		sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for j := 0; j < 60; j++ {
			data, name := looseObject("blob", fmt.Sprintf("object %d %d\n", i, j), "sha1")
			p := filepath.Join(q, name[:2], name[2:])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o444); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true); len(w) > 0 {
			b.Fatal(w)
		}
	}
}
