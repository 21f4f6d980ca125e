package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOutFileReplacesALinkAndRemovesAStaleFile(t *testing.T) {
	dir := t.TempDir()
	path, outside := filepath.Join(dir, "req.json"), filepath.Join(dir, "bashrc")
	if err := os.WriteFile(outside, []byte("rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openOutFile(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the stale file is still there: %v", err)
	}
	// The child plants a link where the request goes.
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	if err := f.write([]byte("request\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "rc\n" {
		t.Errorf("wrote through the link: %q", b)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("not a regular file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "request\n" {
		t.Errorf("the file holds %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temp files left: %v", ents)
	}
}

func TestOutFileRefusesWhatCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing", "req.json"), filepath.Join(file, "req.json"), dir} {
		if f, err := openOutFile(p, ""); err == nil {
			f.close()
			t.Errorf("openOutFile(%s) succeeded", p)
		}
	}
}

func TestExplainJSONHasNoNullLists(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if code := execute([]string{"explain", "--json", "-C", dir}, nil, out, out); code != 0 {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("exit %d: %s", code, b)
	}
	b, _ := os.ReadFile(out.Name())
	if strings.Contains(string(b), ":null") {
		t.Errorf("explain --json holds a null list:\n%s", b)
	}
}

// TestOutFileRefusesLinksInTheWorkspace: a link inside the workspace, on
// the way to the file, is refused (a child may have planted it); a link
// outside it is followed; and ".." after a link resolves as the kernel
// would.
func TestOutFileRefusesLinksInTheWorkspace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home, elsewhere := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "elsewhere")
	for _, d := range []string{ws, home, filepath.Join(elsewhere, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string // the resolved directory; "" means refused
	}{
		{filepath.Join(ws, "out", "req.json"), ""},
		{filepath.Join(ws, "req.json"), ws},
		{filepath.Join(base, "link", "sub", "req.json"), filepath.Join(elsewhere, "sub")},
		{filepath.Join(base, "link", "..", "home", "req.json"), home},
	}
	for _, tc := range tests {
		f, err := openOutFile(tc.path, ws)
		switch {
		case tc.want == "" && err == nil:
			f.close()
			t.Errorf("%s: a link inside the workspace was followed", tc.path)
		case tc.want != "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want != "" && f.dir.Name() != tc.want:
			t.Errorf("%s: resolved to %s, want %s", tc.path, f.dir.Name(), tc.want)
		}
		if err == nil {
			f.close()
		}
	}
}
