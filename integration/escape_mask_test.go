//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapeHiddenPathsInAWritableTree: hidden paths inside the writable
// workspace (a file and a directory the repository's .wrun.toml hides).
// Carved Landlock rules hold them; the mediation performs the calls in
// the directories above them and refuses the hidden names. The acts read
// them directly and by every move, link and mount trick the write grant
// leaves open: renaming the parent directory, removing or renaming the
// hidden entries, unmounting, a hard link, /proc/self/root.
func TestEscapeHiddenPathsInAWritableTree(t *testing.T) {
	base := escapeFixture(t)
	const fileSecret, dirSecret = escapeSecret + "-file", escapeSecret + "-dir"
	mustWrite(t, filepath.Join(base, "ws", "sub", "key"), fileSecret+"\n")
	mustWrite(t, filepath.Join(base, "ws", "vault", "inner"), dirSecret+"\n")
	// The paths are absolute and the fixture is copied per run: each copy
	// names its own.
	hide := func(t *testing.T, F string) {
		mustWrite(t, filepath.Join(F, "ws", ".wrun.toml"),
			"[defaults]\nhide = [\""+filepath.Join(F, "ws", "sub", "key")+"\", \""+filepath.Join(F, "ws", "vault")+"\"]\n")
	}
	leak := func(F string, r result) string {
		if e := printed(fileSecret)(F, r); e != "" {
			return e
		}
		return printed(dirSecret)(F, r)
	}
	acts := []escapeAct{
		{name: "read the hidden file and the hidden directory's file", sh: "cat sub/key vault/inner"},
		{name: "list the hidden directory, then read what it holds", sh: "for f in $(ls vault); do cat vault/$f; done; cat vault/*"},
		{name: "rename the parent directory, read the file there", sh: "mv sub moved; cat moved/key"},
		{name: "rename the hidden directory and the file away", sh: "mv vault v2; cat v2/inner; mv sub/key sub/k2; cat sub/k2"},
		{name: "remove the mask and read what is left", sh: "rm -f sub/key; rmdir vault; cat sub/key vault/inner"},
		{name: "unmount the masks", sh: "umount sub/key; umount -l vault; cat sub/key vault/inner"},
		{name: "move the masks away", sh: "mkdir -p $TMPDIR/m; mount --move vault $TMPDIR/m; mount --move sub/key $TMPDIR/k; cat vault/inner sub/key"},
		{name: "hard-link the hidden file, read the link", sh: "ln sub/key k; cat k"},
		{name: "chmod the mask, then read it", sh: "chmod 0644 sub/key; chmod 0755 vault; cat sub/key vault/inner"},
		{name: "through /proc/self/root", sh: "cat /proc/self/root$PWD/sub/key /proc/self/root$PWD/vault/inner"},
		{name: "copy the workspace away with cp -a", sh: "cp -a . $TMPDIR/copy; cat $TMPDIR/copy/sub/key $TMPDIR/copy/vault/inner"},
	}
	for i := range acts {
		acts[i].grant = "write"
		acts[i].prep = hide
		acts[i].effect = leak
	}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, acts)
		})
	}
	// The control of the masks themselves: the files are there, readable
	// to their owner, outside the sandbox.
	if _, err := os.Stat(filepath.Join(base, "ws", "vault", "inner")); err != nil {
		t.Fatal(err)
	}
}

// TestHiddenPathsRefuseNotEmpty: reading a hidden file and a file inside
// a hidden directory fail with EACCES, not an empty read. Carved rules
// let a hidden directory be opened for listing (its names are not
// secret; its files are): a stated limit. Control: the probe reads them
// without wrun.
func TestHiddenPathsRefuseNotEmpty(t *testing.T) {
	base := escapeFixture(t)
	mustWrite(t, filepath.Join(base, "ws", "sub", "key"), escapeSecret+"\n")
	mustWrite(t, filepath.Join(base, "ws", "vault", "inner"), escapeSecret+"\n")
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			F := freshCopy(t, base, m)
			mustWrite(t, filepath.Join(F, "ws", ".wrun.toml"),
				"[defaults]\nhide = [\""+filepath.Join(F, "ws", "sub", "key")+"\", \""+filepath.Join(F, "ws", "vault")+"\"]\n")
			o := escapeOpts(F, m)
			for _, rel := range []string{"sub/key", "vault/inner"} {
				if got := bare(t, o, "read", rel); got != "ok" {
					t.Fatalf("control: reading %s without wrun: %s", rel, got)
				}
			}
			for _, rel := range []string{"sub/key", "vault/inner"} {
				got := probe(t, o, "write", "read", rel)
				if !strings.HasPrefix(got, "err EACCES") {
					t.Errorf("reading hidden %s: %q, want EACCES", rel, got)
				}
			}
		})
	}
}
