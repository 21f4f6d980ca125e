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
	f, err := openOutFile(path)
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
		if f, err := openOutFile(p); err == nil {
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
