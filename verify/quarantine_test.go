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

// TestQuarantineRefusesSparseFiles: a sparse file within every size bound
// (a 1 GiB "pack", a loose object with a hole after real data) is refused
// before a byte is copied: it cost the child no disk, and wrun would write
// a real block for each of its bytes. The control: a dense file of the
// same kind is copied (and then discarded as the garbage it is).
func TestQuarantineRefusesSparseFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-8")
	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(q, "pack"), 0o755)
	mk := func(path string, data []byte, size int64) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data)
		if size > 0 {
			f.Truncate(size)
		}
		f.Close()
	}
	mk(filepath.Join(q, "pack", "pack-holes.pack"), nil, 1<<30)
	// A real object's bytes with a hole after them: not what a name says.
	obj, name := looseObject("blob", randomText(4096, 3), "sha1")
	os.MkdirAll(filepath.Join(q, name[:2]), 0o755)
	mk(filepath.Join(q, name[:2], name[2:]), obj, 8<<20)
	// The control: a dense garbage pack of 1 MiB.
	mk(filepath.Join(q, "pack", "pack-dense.pack"), []byte(randomText(1<<20, 4)), 0)
	if !sparse(mustOpen(t, filepath.Join(q, "pack", "pack-holes.pack"))) {
		t.Skip("this file system reports no holes (SEEK_HOLE) and allocates sparse files")
	}

	before := diskBytes(t, filepath.Join(common, "objects"))
	w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true)
	all := ""
	for _, e := range w {
		all += e.Error() + "\n"
	}
	for _, want := range []string{"pack/pack-holes.pack (1073741824 bytes with holes", name + " (8388608 bytes with holes", "pack/pack-dense.pack ("} {
		if !strings.Contains(all, want) {
			t.Errorf("not reported: %q in\n%s", want, all)
		}
	}
	if strings.Contains(all, "pack/pack-dense.pack (1048576 bytes with holes") {
		t.Errorf("the dense control was taken for sparse:\n%s", all)
	}
	if grown := diskBytes(t, filepath.Join(common, "objects")) - before; grown > 1<<20 {
		t.Errorf("settling wrote %d bytes into objects/", grown)
	}
	if fileExists(filepath.Join(common, "objects", name[:2], name[2:])) {
		t.Error("the sparse loose object was copied")
	}
}

func mustOpen(t *testing.T, path string) (*os.File, os.FileInfo) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, fi
}

// w0 is want when say is set, else nothing.
func w0(say bool, want ...string) []string {
	if say {
		return want
	}
	return nil
}

// gitIn runs git in dir (a real repository), returning its output and
// whether it succeeded.
func gitIn(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestQuarantineRepairsRefs: refs the run wrote that name no object the
// repository has once the quarantine is settled (one the child never
// wrote, one wrun refused, garbage) are restored when they were there
// before and removed when new, so plain git log --all and git gc work
// after the run; what names a good object (already there, or moved in
// from the quarantine) and what the run did not touch stay. The control:
// the same refs left as the child wrote them break git log --all. A run
// killed before settling is repaired by the next.
func TestQuarantineRepairsRefs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	setup := func(t *testing.T) (ws, common, head string) {
		ws = t.TempDir()
		if out, ok := gitIn(t, ws, "init", "-q", "-b", "main"); !ok {
			t.Fatal(out)
		}
		gitIn(t, ws, "commit", "-q", "--allow-empty", "-m", "one")
		head, _ = gitIn(t, ws, "rev-parse", "HEAD")
		head = strings.TrimSpace(head)
		common = filepath.Join(ws, ".git")
		os.MkdirAll(filepath.Join(common, "refs", "remotes", "origin"), 0o755)
		os.WriteFile(filepath.Join(common, "refs", "remotes", "origin", "main"), []byte(head+"\n"), 0o644)
		os.WriteFile(filepath.Join(common, "refs", "remotes", "origin", "HEAD"), []byte("ref: refs/remotes/origin/main\n"), 0o644)
		return ws, common, head
	}
	missing := strings.Repeat("1234567890", 4)
	// What the child does with its refs: every kind.
	child := func(t *testing.T, common, q, head string) (goodName string) {
		ref := func(name, content string) {
			p := filepath.Join(common, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		good, goodName := looseObject("blob", "fetched\n", "sha1")
		writeLoose(t, q, good, goodName)
		bad, _ := looseObject("blob", "evil\n", "sha1")
		badName := "ab" + strings.Repeat("c", 38)
		writeLoose(t, q, bad, badName)                   // not what its name says: refused
		ref("refs/remotes/origin/main", missing+"\n")    // was good: restored
		ref("refs/remotes/origin/new", missing+"\n")     // new: removed
		ref("refs/remotes/origin/refused", badName+"\n") // refused by wrun: removed
		ref("refs/remotes/origin/junk", "not a ref\n")   // garbage: removed
		ref("refs/tags/fetched", goodName+"\n")          // moved in: kept
		ref("refs/tags/local", head+"\n")                // there already: kept
		return goodName
	}
	check := func(t *testing.T, ws, common, head, goodName string, w []error) {
		t.Helper()
		all := ""
		for _, e := range w {
			all += e.Error() + "\n"
		}
		for _, want := range w0(w != nil, "refs/remotes/origin/main (names an object the repository does not have; restored)",
			"refs/remotes/origin/new (names an object the repository does not have; removed)",
			"refs/remotes/origin/refused (names an object the repository does not have; removed)",
			"refs/remotes/origin/junk (not a ref; removed)") {
			if !strings.Contains(all, want) {
				t.Errorf("not said: %q in\n%s", want, all)
			}
		}
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(common, filepath.FromSlash(name)))
			return strings.TrimSpace(string(b))
		}
		if got := read("refs/remotes/origin/main"); got != head {
			t.Errorf("origin/main is %q, want it restored to %s", got, head)
		}
		for _, gone := range []string{"refs/remotes/origin/new", "refs/remotes/origin/refused", "refs/remotes/origin/junk"} {
			if fileExists(filepath.Join(common, filepath.FromSlash(gone))) {
				t.Errorf("%s is still there", gone)
			}
		}
		if read("refs/tags/fetched") != goodName || read("refs/tags/local") != head || read("refs/remotes/origin/HEAD") != "ref: refs/remotes/origin/main" {
			t.Errorf("a good or untouched ref changed")
		}
		if out, ok := gitIn(t, ws, "log", "--all", "--oneline"); !ok {
			t.Errorf("git log --all after the run: %s", out)
		}
		if out, ok := gitIn(t, ws, "gc", "--quiet"); !ok {
			t.Errorf("git gc after the run: %s", out)
		}
		if snaps, _ := filepath.Glob(filepath.Join(common, "wrun-quarantine", "*")); len(snaps) != 0 {
			t.Errorf("left in wrun-quarantine: %v", snaps)
		}
	}

	t.Run("settled by the run", func(t *testing.T) {
		ws, common, head := setup(t)
		q := filepath.Join(common, "wrun-quarantine", "wrun-9")
		sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
		if err != nil {
			t.Fatal(err)
		}
		goodName := child(t, common, q, head)
		// The control: as the child left them, refs break git log --all
		// (the quarantine still an alternate, the good object is found).
		if _, ok := gitIn(t, ws, "log", "--all", "--oneline"); ok {
			t.Fatal("control: git log --all works with the child's refs; the test shows nothing")
		}
		check(t, ws, common, head, goodName, sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true))
	})
	t.Run("settled by the next run after a killed one", func(t *testing.T) {
		ws, common, head := setup(t)
		q := filepath.Join(common, "wrun-quarantine", "wrun-10")
		sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
		if err != nil {
			t.Fatal(err)
		}
		goodName := child(t, common, q, head)
		for _, f := range sess.Files() {
			f.Close() // wrun killed: nothing settled, the lock let go
		}
		// The next run settles what the killed one left (what it says of
		// that is not kept: only the repository is checked).
		next := filepath.Join(common, "wrun-quarantine", "wrun-11")
		s2, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: next}})
		if err != nil {
			t.Fatal(err)
		}
		s2.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: next}}, true)
		check(t, ws, common, head, goodName, nil)
	})
}
