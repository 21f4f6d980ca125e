package verify

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fakeRepo lays out the minimum git recognizes (no git binary needed).
func fakeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	all := map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/": "", ".git/objects/": "", ".git/config": "[core]\n"}
	for k, v := range files {
		all[k] = v
	}
	return tree(t, all)
}

func TestValidBranch(t *testing.T) {
	for name, want := range map[string]bool{
		"main": true, "feature/x": true, "wt-1_a.b": true,
		"": false, "../config": false, "a/../../config": false, "a//b": false, ".hidden": false, "a/.b": false,
		"x.lock": false, "a/x.lock/b": false, "a/": false, "a.": false, "a b": false, "a~1": false, "a^": false,
		"a:b": false, "a?": false, "a*": false, "a[": false, "a\\b": false, "a@{1}": false, "a\x01": false,
	} {
		if got := validBranch(name); got != want {
			t.Errorf("validBranch(%q) = %v, want %v", name, got, want)
		}
	}
}

func gitScopeOf(t *testing.T, in Input) Scope {
	t.Helper()
	if in.Getenv == nil {
		in.Getenv = envFunc(nil)
	}
	repo, err := FindRepo(in.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	var s Scope
	var cfg [][2]string
	gitScope(in, repo, &s, &cfg)
	if len(cfg) > 0 {
		s.Env = append(s.Env, gitConfigEnv(cfg)...)
	}
	return s
}

func TestGitScope(t *testing.T) {
	t.Run("clone", func(t *testing.T) {
		ws := fakeRepo(t, nil)
		s := gitScopeOf(t, Input{Workdir: filepath.Join(ws), TempDir: "/tmp/wrun-77"}) // no shim: no wrun path
		gd := filepath.Join(ws, ".git")
		q := filepath.Join(gd, "wrun-quarantine", "wrun-77")
		want := []string{q, gd + "/refs/remotes", gd + "/refs/tags", gd + "/logs/refs/remotes", gd + "/FETCH_HEAD"}
		if got := writablePaths(s, "git"); !slices.Equal(got, want) {
			t.Fatalf("writable %v, want %v", got, want)
		}
		for _, w := range s.Writable {
			if w.Beneath != gd {
				t.Errorf("%s is not reached beneath the git dir: %q", w.Path, w.Beneath)
			}
			if w.Path == q && w.Create {
				t.Errorf("the quarantine is made by the prepare step, with its lock, not by the launcher")
			}
		}
		if v, _ := envValue(s, "GIT_OBJECT_DIRECTORY"); v != q {
			t.Errorf("GIT_OBJECT_DIRECTORY=%q", v)
		}
		if v, _ := envValue(s, "GIT_ALTERNATE_OBJECT_DIRECTORIES"); v != gd+"/objects" {
			t.Errorf("GIT_ALTERNATE_OBJECT_DIRECTORIES=%q", v)
		}
		if len(s.Prepare) != 1 || s.Prepare[0].Kind != StepGitQuarantineOpen || s.Prepare[0].Dir != q || s.Finish[0].Kind != StepGitQuarantineClose {
			t.Errorf("steps %+v / %+v", s.Prepare, s.Finish)
		}
		for _, ro := range []string{"config", "hooks", "objects", "HEAD", "index", "packed-refs"} {
			if !slices.ContainsFunc(s.ReadOnly, func(r ReadOnly) bool { return r.Path == filepath.Join(gd, ro) }) {
				t.Errorf("%s is not listed as kept read-only", ro)
			}
		}
	})
	t.Run("through the shim", func(t *testing.T) {
		ws := fakeRepo(t, nil)
		bin := tree(t, map[string]string{"git": "#!/bin/sh\n"})
		os.Chmod(filepath.Join(bin, "git"), 0o755)
		s := gitScopeOf(t, Input{Workdir: ws, TempDir: "/tmp/wrun-78", Self: "/opt/wrun", Getenv: envFunc(map[string]string{"PATH": "relative:" + bin})})
		gd := filepath.Join(ws, ".git")
		if _, set := envValue(s, "GIT_OBJECT_DIRECTORY"); set {
			t.Error("GIT_OBJECT_DIRECTORY is set for every git command")
		}
		for k, want := range map[string]string{"PATH": "/tmp/wrun-78/wrun-git:relative:" + bin, EnvGitReal: filepath.Join(bin, "git"),
			EnvGitCommonDir: gd, EnvGitQuarantine: gd + "/wrun-quarantine/wrun-78"} {
			if v, _ := envValue(s, k); v != want {
				t.Errorf("%s=%q, want %q", k, v, want)
			}
		}
		if len(s.Prepare) != 2 || s.Prepare[1].Kind != StepGitShim || s.Prepare[1].Target != "/opt/wrun" || s.Prepare[1].Dir != "/tmp/wrun-78/wrun-git" {
			t.Errorf("prepare %+v", s.Prepare)
		}
	})
	t.Run("workdir below the top", func(t *testing.T) {
		ws := fakeRepo(t, map[string]string{"sub/dir/": ""})
		s := gitScopeOf(t, Input{Workdir: filepath.Join(ws, "sub", "dir")})
		if len(writablePaths(s, "git")) != 5 {
			t.Fatalf("writable %v", writablePaths(s, "git"))
		}
	})
	t.Run("linked worktree", func(t *testing.T) {
		main := fakeRepo(t, nil)
		wt := tree(t, nil)
		gd := filepath.Join(main, ".git", "worktrees", "wt")
		for p, c := range map[string]string{"HEAD": "ref: refs/heads/f\n", "commondir": "../..\n", "gitdir": filepath.Join(wt, ".git") + "\n"} {
			os.MkdirAll(gd, 0o755)
			os.WriteFile(filepath.Join(gd, p), []byte(c), 0o644)
		}
		os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gd+"\n"), 0o644)
		s := gitScopeOf(t, Input{Workdir: wt, TempDir: "/tmp/wrun-1"})
		common := filepath.Join(main, ".git")
		want := []string{common + "/wrun-quarantine/wrun-1", common + "/refs/remotes", common + "/refs/tags", common + "/logs/refs/remotes", gd + "/FETCH_HEAD"}
		if got := writablePaths(s, "git"); !slices.Equal(got, want) {
			t.Fatalf("writable %v, want %v (notes %v)", got, want, s.Notes)
		}
		// Under files=write the worktree is writable, but the common dir
		// is elsewhere: the quarantine is still needed, and the worktree's
		// own git dir and its branch (f: one name each, the reflog's
		// directory missing here) are writable.
		s = gitScopeOf(t, Input{Workdir: wt, WorkspaceWritable: true, TempDir: "/tmp/wrun-2"})
		want = append([]string{common + "/wrun-quarantine/wrun-2", common + "/refs/remotes", common + "/refs/tags", common + "/logs/refs/remotes"},
			common+"/refs/heads/f", common+"/refs/heads/f.lock", gd, gd+"/FETCH_HEAD")
		if got := writablePaths(s, "git"); !slices.Equal(got, want) {
			t.Fatalf("files=write: writable %v, want %v (notes %v)", got, want, s.Notes)
		}
		for _, w := range s.Writable {
			if w.Entry != strings.HasPrefix(w.Path, common+"/refs/heads/") {
				t.Errorf("%s: Entry %v", w.Path, w.Entry)
			}
		}
		if got := WorktreeScope(Input{Workdir: wt}); len(got) != 3 || got[0].Path != gd {
			t.Errorf("WorktreeScope = %+v", got)
		}
		// A detached HEAD: the worktree's state, no branch.
		os.WriteFile(filepath.Join(gd, "HEAD"), []byte(strings.Repeat("ab", 20)+"\n"), 0o644)
		if got := WorktreeScope(Input{Workdir: wt}); len(got) != 1 {
			t.Errorf("detached: WorktreeScope = %+v", got)
		}
		// The main checkout has none.
		if got := WorktreeScope(Input{Workdir: main}); got != nil {
			t.Errorf("main checkout: WorktreeScope = %+v", got)
		}
	})
	deny := []struct {
		name  string
		setup func(t *testing.T) Input
		note  string
	}{
		{"a .git file naming the home directory", func(t *testing.T) Input {
			home := fakeRepo(t, nil) // looks like a git dir: HEAD, refs, objects
			ws := tree(t, map[string]string{".git": "gitdir: " + filepath.Join(home, ".git") + "\n"})
			return Input{Workdir: ws}
		}, "neither a linked worktree nor a submodule"},
		{"a .git file whose worktree does not point back", func(t *testing.T) Input {
			main := fakeRepo(t, map[string]string{".git/worktrees/x/HEAD": "x", ".git/worktrees/x/commondir": "../..", ".git/worktrees/x/gitdir": "/elsewhere/.git"})
			ws := tree(t, map[string]string{".git": "gitdir: " + filepath.Join(main, ".git/worktrees/x") + "\n"})
			return Input{Workdir: ws}
		}, "does not point back"},
		{"refs is a symbolic link", func(t *testing.T) Input {
			ws := tree(t, map[string]string{".git/HEAD": "x", ".git/objects/": ""})
			os.Symlink(t.TempDir(), filepath.Join(ws, ".git", "refs"))
			return Input{Workdir: ws}
		}, "does not look like a git directory"},
		{"FETCH_HEAD is a symbolic link", func(t *testing.T) Input {
			ws := fakeRepo(t, nil)
			os.Symlink("config", filepath.Join(ws, ".git", "FETCH_HEAD"))
			return Input{Workdir: ws}
		}, "is a symbolic link"},
		{"GIT_DIR set", func(t *testing.T) Input {
			return Input{Workdir: fakeRepo(t, nil), Getenv: envFunc(map[string]string{"GIT_DIR": "/x"})}
		}, "GIT_DIR is set"},
		{"foreign GIT_OBJECT_DIRECTORY", func(t *testing.T) Input {
			return Input{Workdir: fakeRepo(t, nil), Getenv: envFunc(map[string]string{"GIT_OBJECT_DIRECTORY": "/x"})}
		}, "not to a wrun quarantine"},
		{"inside another wrun without a quarantine here", func(t *testing.T) Input {
			return Input{Workdir: fakeRepo(t, nil), Getenv: envFunc(map[string]string{"WRUN_GRANT": "files=read,shell=verify,network=on,desktop=off"})}
		}, "inside another wrun"},
	}
	for _, tc := range deny {
		t.Run(tc.name, func(t *testing.T) {
			s := gitScopeOf(t, tc.setup(t))
			if len(s.Writable)+len(s.Prepare)+len(s.Env) != 0 {
				t.Errorf("granted %+v, steps %+v, env %+v", s.Writable, s.Prepare, s.Env)
			}
			if !strings.Contains(strings.Join(s.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", s.Notes, tc.note)
			}
		})
	}
	t.Run("files=write with the repository inside the workspace", func(t *testing.T) {
		s := gitScopeOf(t, Input{Workdir: fakeRepo(t, nil), WorkspaceWritable: true})
		if len(s.Writable)+len(s.Prepare) != 0 {
			t.Errorf("quarantine for a repository that is writable anyway: %+v", s.Writable)
		}
	})
	t.Run("nested wrun reuses the enclosing quarantine", func(t *testing.T) {
		ws := fakeRepo(t, nil)
		gd := filepath.Join(ws, ".git")
		q := filepath.Join(gd, "wrun-quarantine", "wrun-9")
		s := gitScopeOf(t, Input{Workdir: ws, TempDir: "/tmp/wrun-10", Getenv: envFunc(map[string]string{
			EnvGitQuarantine: q, EnvGitCommonDir: gd, "WRUN_GRANT": "verify", "GIT_CONFIG_COUNT": "3"})})
		if got := writablePaths(s, "git"); len(got) == 0 || got[0] != q {
			t.Fatalf("writable %v", got)
		}
		if len(s.Prepare)+len(s.Finish) != 0 {
			t.Errorf("a nested run must leave the quarantine to the enclosing wrun: %+v %+v", s.Prepare, s.Finish)
		}
		// The inherited GIT_CONFIG_* do not reach the child (policy's
		// allowlist): ours are numbered from 0 and are all there is.
		if v, _ := envValue(s, "GIT_CONFIG_COUNT"); v != strconv.Itoa(len(gitChildConfig())) {
			t.Errorf("GIT_CONFIG_COUNT=%q, want ours alone (%d), not the inherited 3 plus ours", v, len(gitChildConfig()))
		}
		if v, _ := envValue(s, "GIT_CONFIG_KEY_0"); v != "gc.auto" {
			t.Errorf("GIT_CONFIG_KEY_0=%q", v)
		}
	})
}

// looseObject returns the file content and name of a loose object.
func looseObject(typ, content, algo string) ([]byte, string) {
	raw := fmt.Appendf(nil, "%s %d\x00%s", typ, len(content), content)
	var sum []byte
	if algo == "sha256" {
		s := sha256.Sum256(raw)
		sum = s[:]
	} else {
		s := sha1.Sum(raw)
		sum = s[:]
	}
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(raw)
	zw.Close()
	return b.Bytes(), hex.EncodeToString(sum)
}

func TestLooseObjectMatches(t *testing.T) {
	good, name := looseObject("blob", "hello\n", "sha1")
	other, _ := looseObject("blob", "evil\n", "sha1")
	good256, name256 := looseObject("commit", "tree x\n", "sha256")
	badType, badTypeName := looseObject("evil", "x", "sha1")
	short := func() []byte { // header claims more than there is
		var b bytes.Buffer
		zw := zlib.NewWriter(&b)
		zw.Write([]byte("blob 100\x00abc"))
		zw.Close()
		return b.Bytes()
	}()
	tests := []struct {
		name, algo, objName string
		data                []byte
		want                bool
	}{
		{"good", "sha1", name, good, true},
		{"sha256", "sha256", name256, good256, true},
		{"content under another name", "sha1", name, other, false},
		{"trailing garbage", "sha1", name, append(slices.Clone(good), 'x'), false},
		{"truncated", "sha1", name, good[:len(good)-3], false},
		{"not zlib", "sha1", name, []byte("hello"), false},
		{"unknown type", "sha1", badTypeName, badType, false},
		{"size mismatch", "sha1", name, short, false},
		{"wrong algorithm", "sha256", name, good, false},
	}
	for _, tc := range tests {
		if got := looseObjectMatches(bytes.NewReader(tc.data), tc.objName, tc.algo); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func writeLoose(t *testing.T, objdir string, data []byte, name string) {
	t.Helper()
	p := filepath.Join(objdir, name[:2], name[2:])
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
}

func TestQuarantineLifecycle(t *testing.T) {
	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-1")
	alternates := filepath.Join(common, "objects", "info", "alternates")

	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(alternates); string(got) != "../wrun-quarantine/wrun-1\n" {
		t.Fatalf("alternates %q", got)
	}
	if len(sess.Files()) != 1 {
		t.Fatalf("want the quarantine lock for the child, got %v", sess.Files())
	}
	good, goodName := looseObject("blob", "new\n", "sha1")
	evil, _ := looseObject("blob", "evil\n", "sha1")
	_, forgedName := looseObject("blob", "what the name promises\n", "sha1")
	writeLoose(t, q, good, goodName)
	writeLoose(t, q, evil, forgedName)
	os.Symlink("/etc/passwd", filepath.Join(q, "ab"+strings.Repeat("0", 38)))

	// While the child (here: anyone holding the inherited lock) may still
	// write, the quarantine is not settled, and stays registered.
	child, err := os.Open(q)
	if err != nil {
		t.Fatal(err)
	}
	lockShared(t, child)
	warnings := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true)
	if len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "still in use") {
		t.Fatalf("warnings %v", warnings)
	}
	if got, _ := os.ReadFile(alternates); !strings.Contains(string(got), "wrun-1") {
		t.Fatalf("the quarantine was unregistered while in use: %q", got)
	}
	child.Close()

	// The next run settles it: the good object lands, the forged one and
	// the link do not, and the quarantine is gone.
	q2 := filepath.Join(common, "wrun-quarantine", "wrun-2")
	sess2, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q2}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(common, "objects", goodName[:2], goodName[2:])); !bytes.Equal(got, good) {
		t.Errorf("the good object was not moved in")
	}
	if fileExists(filepath.Join(common, "objects", forgedName[:2], forgedName[2:])) {
		t.Errorf("a forged object was moved in")
	}
	if fileExists(q) {
		t.Errorf("the settled quarantine is still there")
	}
	if got, _ := os.ReadFile(alternates); string(got) != "../wrun-quarantine/wrun-2\n" {
		t.Errorf("alternates %q", got)
	}
	if w := sess2.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q2}}, true); len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	if fileExists(alternates) || fileExists(filepath.Join(common, "wrun-quarantine")) {
		t.Errorf("left behind: alternates %v, wrun-quarantine %v", fileExists(alternates), fileExists(filepath.Join(common, "wrun-quarantine")))
	}
}

func TestQuarantineKeepsOtherAlternates(t *testing.T) {
	ws := fakeRepo(t, map[string]string{".git/objects/info/alternates": "/shared/objects\n"})
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-3")
	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true)
	if got, _ := os.ReadFile(filepath.Join(common, "objects/info/alternates")); string(got) != "/shared/objects\n" {
		t.Errorf("alternates %q", got)
	}
}

func TestQuarantineRefusesSymlinkedDir(t *testing.T) {
	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	os.Symlink(filepath.Join(common, "objects"), filepath.Join(common, "wrun-quarantine"))
	_, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: filepath.Join(common, "wrun-quarantine", "wrun-4")}})
	if err == nil {
		t.Fatal("a symlinked wrun-quarantine was used")
	}
	if fileExists(filepath.Join(common, "objects", "wrun-4")) {
		t.Error("created a directory through the link")
	}
}

func TestMigratePackRebuildsTheIndex(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	src := t.TempDir()
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(gitFreeEnv(os.Environ()), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(src, "init", "-q")
	os.WriteFile(filepath.Join(src, "f"), []byte("content\n"), 0o644)
	run(src, "add", "f")
	run(src, "commit", "-qm", "c")
	run(src, "repack", "-adq")
	packs, _ := filepath.Glob(filepath.Join(src, ".git/objects/pack/*.pack"))
	if len(packs) != 1 {
		t.Fatalf("packs %v", packs)
	}

	dst := t.TempDir()
	run(dst, "init", "-q")
	common := filepath.Join(dst, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-5")
	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(packs[0])
	os.MkdirAll(filepath.Join(q, "pack"), 0o755)
	os.WriteFile(filepath.Join(q, "pack", filepath.Base(packs[0])), data, 0o444)
	// A corrupt pack (one flipped byte) and a lying index are discarded.
	bad := slices.Clone(data)
	bad[len(bad)/2] ^= 0xff
	os.WriteFile(filepath.Join(q, "pack", "pack-bad.pack"), bad, 0o444)
	os.WriteFile(filepath.Join(q, "pack", "pack-bad.idx"), []byte("lies"), 0o444)

	w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true)
	if len(w) != 1 || !strings.Contains(w[0].Error(), "pack-bad.pack") {
		t.Errorf("warnings %v", w)
	}
	head := run(src, "rev-parse", "HEAD")
	if got := run(dst, "cat-file", "-t", head); got != "commit" {
		t.Errorf("the commit did not arrive: %s", got)
	}
	run(dst, "fsck", "--no-dangling")
	if fileExists(q) || fileExists(filepath.Join(common, "objects/info/alternates")) {
		t.Error("the quarantine was not removed")
	}
}

func lockShared(t *testing.T, f *os.File) {
	t.Helper()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
}

// TestQuarantineCopiesEvenWhenTheRunHasEnded: even when wrun says every
// process of the run has ended, objects are copied and checked on wrun's
// copy, never moved: a second name of the file, or a descriptor some
// process still holds, cannot change what was checked.
func TestQuarantineCopiesEvenWhenTheRunHasEnded(t *testing.T) {
	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-6")
	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	fresh, freshName := looseObject("blob", "fresh fan-out dir\n", "sha1")
	writeLoose(t, q, fresh, freshName)
	os.MkdirAll(filepath.Join(q, freshName[:2], "junk", "deeper"), 0o777)
	os.WriteFile(filepath.Join(q, freshName[:2], "tmp_obj_x"), []byte("partial"), 0o644)
	os.Chmod(filepath.Join(q, freshName[:2]), 0o777)
	os.Chmod(filepath.Join(q, freshName[:2], freshName[2:]), 0o666)
	// A descriptor the child kept open for writing.
	held, err := os.OpenFile(filepath.Join(q, freshName[:2], freshName[2:]), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	existing, existingName := looseObject("blob", "fan-out dir exists\n", "sha1")
	os.MkdirAll(filepath.Join(common, "objects", existingName[:2]), 0o755)
	writeLoose(t, q, existing, existingName)

	// A valid object that is also a file elsewhere.
	linked, linkedName := looseObject("blob", "hard-linked\n", "sha1")
	elsewhere := filepath.Join(t.TempDir(), "target-file")
	os.WriteFile(elsewhere, linked, 0o644)
	os.MkdirAll(filepath.Join(q, linkedName[:2]), 0o755)
	if err := os.Link(elsewhere, filepath.Join(q, linkedName[:2], linkedName[2:])); err != nil {
		t.Fatal(err)
	}

	if w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true); len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	// The child writes through what it kept.
	forged, _ := looseObject("blob", "forged!!!!!!!!!!!!\n", "sha1")
	if _, err := held.WriteAt(forged, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(elsewhere, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{freshName: fresh, existingName: existing, linkedName: linked} {
		path := filepath.Join(common, "objects", name[:2], name[2:])
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("object %s: %v %v", name, fi, err)
			continue
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, want) {
			t.Errorf("object %s changed after wrun checked it: a write through the child's descriptor or link reached it", name)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Nlink != 1 {
			t.Errorf("object %s has %d links: not wrun's own copy", name, st.Nlink)
		}
	}
	// Control: the child's writes did land, in its own file.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", held.Fd())); err == nil && !bytes.HasPrefix(b, forged) {
		t.Fatal("control: the write through the kept descriptor did not land")
	}
	if b, _ := os.ReadFile(elsewhere); !bytes.Equal(b, forged) {
		t.Fatal("control: the write through the second name did not land")
	}
	// And git, reading the repository as a later merge would, sees the
	// checked content.
	if _, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command("git", "cat-file", "-p", freshName)
		cmd.Dir = ws
		cmd.Env = append(gitFreeEnv(os.Environ()), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
		if out, err := cmd.Output(); err != nil || string(out) != "fresh fan-out dir\n" {
			t.Errorf("git cat-file -p %s = %q, %v; want the checked content", freshName, out, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(common, "objects", freshName[:2])); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("fan-out dir: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(common, "objects", freshName[:2])); len(ents) != 1 {
		t.Errorf("the fan-out dir holds more than the object: %v", ents)
	}
	if fileExists(q) {
		t.Error("the quarantine is still there")
	}
}

func TestQuarantineTheChildMadeUnreadableIsSettled(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads and removes a mode-000 directory anyway")
	}
	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := filepath.Join(common, "wrun-quarantine", "wrun-7")
	sess, err := Prepare([]Step{{Kind: StepGitQuarantineOpen, Repo: common, Dir: q}})
	if err != nil {
		t.Fatal(err)
	}
	good, name := looseObject("blob", "x\n", "sha1")
	writeLoose(t, q, good, name)
	os.Chmod(filepath.Join(q, name[:2]), 0)
	os.Chmod(q, 0)
	if w := sess.Finish([]Step{{Kind: StepGitQuarantineClose, Repo: common, Dir: q}}, true); len(w) != 0 {
		t.Errorf("warnings %v", w)
	}
	if fileExists(q) || !fileExists(filepath.Join(common, "objects", name[:2], name[2:])) {
		t.Error("not settled")
	}
}

func TestGitShimEnv(t *testing.T) {
	ws := fakeRepo(t, map[string]string{"sub/": ""})
	other := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := common + "/wrun-quarantine/wrun-1"
	base := []string{"PATH=/bin", EnvGitReal + "=/usr/bin/git", EnvGitCommonDir + "=" + common, EnvGitQuarantine + "=" + q}
	tests := []struct {
		name string
		args []string
		cwd  string
		env  []string
		want bool // the quarantine is set
	}{
		{"in the repository", []string{"fetch", "origin"}, ws, nil, true},
		{"below its top", []string{"status"}, filepath.Join(ws, "sub"), nil, true},
		{"another repository", []string{"commit", "-m", "x"}, other, nil, false},
		{"-C into the repository", []string{"-C", ws, "log"}, other, nil, true},
		{"-C out of it", []string{"-C", other, "log"}, ws, nil, false},
		{"relative -C, twice", []string{"-C", "..", "-C", filepath.Base(ws), "log"}, other, nil, true},
		{"--git-dir=", []string{"--git-dir=" + common, "log"}, other, nil, true},
		{"--git-dir, separate", []string{"--git-dir", filepath.Join(other, ".git"), "log"}, ws, nil, false},
		{"GIT_DIR", []string{"log"}, other, []string{"GIT_DIR=" + common}, true},
		{"-c takes a value", []string{"-c", "x.y=-C", "log"}, ws, nil, true},
		{"init makes a repository", []string{"init", "sub/new"}, ws, nil, false},
		{"clone makes one", []string{"-c", "a=b", "clone", other}, ws, nil, false},
		{"outside any repository", []string{"version"}, "/", nil, false},
		{"a stale quarantine setting is dropped", []string{"log"}, other, []string{"GIT_OBJECT_DIRECTORY=" + q}, false},
		{"the child's own setting stays", []string{"log"}, other, []string{"GIT_OBJECT_DIRECTORY=/mine"}, false},
	}
	for _, tc := range tests {
		env, realGit := GitShimEnv(tc.args, tc.cwd, append(slices.Clone(base), tc.env...))
		if realGit != "/usr/bin/git" {
			t.Errorf("%s: real git %q", tc.name, realGit)
		}
		got := slices.Contains(env, "GIT_OBJECT_DIRECTORY="+q) && slices.Contains(env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+common+"/objects")
		if got != tc.want {
			t.Errorf("%s: quarantine set %v, want %v (env %q)", tc.name, got, tc.want, env)
		}
		if slices.Contains(tc.env, "GIT_OBJECT_DIRECTORY=/mine") && !slices.Contains(env, "GIT_OBJECT_DIRECTORY=/mine") {
			t.Errorf("%s: dropped the child's own GIT_OBJECT_DIRECTORY", tc.name)
		}
	}
	// Without the shim's variables the environment passes unchanged.
	if env, _ := GitShimEnv([]string{"log"}, ws, []string{"A=1"}); !slices.Equal(env, []string{"A=1"}) {
		t.Errorf("env %q", env)
	}
}

func TestDirectGit(t *testing.T) {
	ws := fakeRepo(t, nil)
	common := filepath.Join(ws, ".git")
	q := common + "/wrun-quarantine/wrun-1"
	env := []string{EnvGitReal + "=/usr/bin/git", EnvGitCommonDir + "=" + common, EnvGitQuarantine + "=" + q}
	argv, got := DirectGit([]string{"git", "fetch", "origin"}, ws, env)
	if !slices.Equal(argv, []string{"/usr/bin/git", "fetch", "origin"}) || !slices.Contains(got, "GIT_OBJECT_DIRECTORY="+q) {
		t.Errorf("git in the repository: %q %q", argv, got)
	}
	for _, a := range [][]string{{"cargo", "test"}, {"/usr/bin/git", "fetch"}, {}} {
		if argv, got := DirectGit(a, ws, env); !slices.Equal(argv, a) || !slices.Equal(got, env) {
			t.Errorf("%q changed: %q %q", a, argv, got)
		}
	}
	if argv, _ := DirectGit([]string{"git", "log"}, ws, nil); argv[0] != "git" {
		t.Errorf("without the shim's variables: %q", argv)
	}
}
