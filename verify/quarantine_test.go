package verify

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// diskBytes is the space the files below dir take on disk.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	return n
}

// TestQuarantineBounds: what wrun copies out of a quarantine is bounded
// per file and in all, and a file is copied once whatever its number of
// names. A sparse pack with many links cost the child nothing and wrun a
// real block for every byte of every name.
func TestQuarantineBounds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	oldFile, oldTotal := MaxQuarantineFile, MaxQuarantineTotal
	t.Cleanup(func() { MaxQuarantineFile, MaxQuarantineTotal = oldFile, oldTotal })
	MaxQuarantineFile, MaxQuarantineTotal = 1<<20, 3<<19 // 1 MiB, 1.5 MiB

	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-7")
	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(q, "pack"), 0o755)
	// A sparse "pack" of 64 MiB: no blocks for the child, with links.
	sparse := filepath.Join(q, "pack", "pack-sparse.pack")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 20)
	f.Close()
	for i := range 5 {
		os.Link(sparse, filepath.Join(q, "pack", "pack-sparse"+strings.Repeat("x", i+1)+".pack"))
	}
	// A loose object of 0.9 MiB (under the file bound), hard-linked under
	// a second name: the second is not copied again.
	big, bigName := looseObject("blob", randomText(900<<10, 1), "sha1")
	writeLoose(t, q, big, bigName)
	second := "ff" + strings.Repeat("e", 38)
	os.MkdirAll(filepath.Join(q, "ff"), 0o755)
	os.Link(filepath.Join(q, bigName[:2], bigName[2:]), filepath.Join(q, "ff", second[2:]))
	// Another object of 0.9 MiB would pass the total.
	other, otherName := looseObject("blob", randomText(900<<10, 2), "sha1")
	writeLoose(t, q, other, otherName)

	before := diskBytes(t, filepath.Join(common, "objects"))
	w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true)
	all := ""
	for _, e := range w {
		all += e.Error() + "\n"
	}
	if !strings.Contains(all, "refused") || !strings.Contains(all, "pack/pack-sparse") {
		t.Errorf("the oversized pack is not reported: %q", all)
	}
	if strings.Count(all, "another name of a file already taken")+strings.Count(all, "bytes)") < 6 {
		t.Errorf("every name of the sparse pack should be refused: %q", all)
	}
	grown := diskBytes(t, filepath.Join(common, "objects")) - before
	if grown > 2*MaxQuarantineTotal {
		t.Errorf("settling wrote %d bytes into objects/, over the bound %d", grown, MaxQuarantineTotal)
	}
	if packs, _ := filepath.Glob(filepath.Join(common, "objects", "pack", "*")); len(packs) != 0 {
		t.Errorf("objects/pack holds %v", packs)
	}
	// Exactly one of the two big objects made it in (the total is 1.5 MiB),
	// and the second name of the first was neither copied nor trusted.
	got := 0
	for _, name := range []string{bigName, otherName} {
		if fileExists(filepath.Join(common, "objects", name[:2], name[2:])) {
			got++
		}
	}
	if got != 1 {
		t.Errorf("%d of two 0.9 MiB objects were copied under a 1.5 MiB total, want 1", got)
	}
	if fileExists(filepath.Join(common, "objects", "ff", second[2:])) {
		t.Error("a second name of a taken file was copied")
	}
	if !strings.Contains(all, "past the total") {
		t.Errorf("the total is not reported: %q", all)
	}
}

// randomText is n bytes that do not compress.
func randomText(n int, seed uint64) string {
	b := make([]byte, n)
	x := 88172645463325252 + seed
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return string(b)
}
