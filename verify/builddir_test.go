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
// made, writable with links, and removed after the run; one that exists is
// the user's and stays read-only; files=write changes nothing; a
// .gitignore that is a link is not read.
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
	if !w.Dir || !w.Create || !w.Links || w.Beneath != ws {
		t.Errorf("%+v: want a directory made by wrun, links allowed, beneath the workspace", w)
	}
	if len(s.Prepare) != 1 || s.Prepare[0].Kind != StepBuildDirMake || s.Prepare[0].Dir != build ||
		len(s.Finish) != 1 || s.Finish[0].Kind != StepBuildDirRemove || s.Finish[0].Dir != build {
		t.Errorf("steps %+v %+v", s.Prepare, s.Finish)
	}
	if len(s.Notes) != 1 {
		t.Errorf("no note says builddir stays read-only: %q", s.Notes)
	}
	var w2 Scope
	buildDirScope(Input{Workdir: ws, WorkspaceWritable: true}, &w2)
	if len(w2.Writable)+len(w2.Prepare)+len(w2.Finish) != 0 {
		t.Errorf("files=write: %+v", w2)
	}
	var l Scope
	buildDirScope(Input{Workdir: filepath.Join(top, "link")}, &l)
	if len(l.Writable) != 0 {
		t.Errorf("a .gitignore that is a link was read: %+v", l.Writable)
	}
}

// TestBuildDirSteps: the directory is made only where it is missing, and
// removed after the run only when this run made it, with what was put in
// it, following no link.
func TestBuildDirSteps(t *testing.T) {
	top := tree(t, map[string]string{"ws/.gitignore": "/build/\n", "outside/keep": "x", "ws/theirs/f": ""})
	ws := filepath.Join(top, "ws")
	build := filepath.Join(ws, "build")
	sess, err := Prepare([]Step{{Kind: StepBuildDirMake, Dir: build}})
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
	if errs := sess.Finish([]Step{{Kind: StepBuildDirRemove, Dir: build}}, true); len(errs) != 0 {
		t.Fatalf("finish: %v", errs)
	}
	if _, err := os.Lstat(build); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", build, err)
	}
	if _, err := os.Stat(filepath.Join(top, "outside", "keep")); err != nil {
		t.Errorf("the link's target was removed: %v", err)
	}
	// Existing: refused, and never removed.
	theirs := filepath.Join(ws, "theirs")
	sess, err = Prepare([]Step{{Kind: StepBuildDirMake, Dir: theirs}})
	if err == nil {
		t.Errorf("an existing directory was taken as made for the run")
	}
	sess.Finish([]Step{{Kind: StepBuildDirRemove, Dir: theirs}}, true)
	if _, err := os.Stat(filepath.Join(theirs, "f")); err != nil {
		t.Errorf("a directory the run did not make was removed: %v", err)
	}
}
