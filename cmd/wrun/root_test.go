package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: --version prints one line naming wrun, the commit and the Go
// version, and exits 0 without running anything.
func TestVersion(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if code := execute([]string{"--version"}, os.Stdin, out, out); code != 0 {
		t.Fatalf("--version exited %d", code)
	}
	b, _ := os.ReadFile(out.Name())
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "wrun ") || !strings.Contains(line, "commit ") || !strings.Contains(line, "go1.") || strings.Count(line, "\n") != 0 {
		t.Errorf("--version printed %q; want one line: wrun VERSION (commit C, goX)", line)
	}
}

func TestLooksLikeRun(t *testing.T) {
	for _, c := range []struct {
		args     []string
		keep, ok bool
	}{
		{[]string{"--grant", "verify", "--", "true"}, false, true},
		{[]string{"--", "true"}, false, true},
		{[]string{"--keep-background", "--", "sleep", "1"}, true, true},
		{[]string{"--keep-background=true", "--grant=write", "--", "x"}, true, true},
		{[]string{"--keep-background", "--keep-background=false", "--", "x"}, false, true},
		{[]string{"--grant", "verify", "--", "x", "--keep-background"}, false, true}, // the command's
		{[]string{"explain", "--", "true"}, false, false},
		{[]string{"receipts", "--last", "3"}, false, false},
		{[]string{"true"}, false, false},
		{[]string{"--grant", "verify", "true"}, false, false},
		{[]string{"--help", "--", "x"}, false, false},
		{[]string{"--version"}, false, false},
		{nil, false, false},
	} {
		keep, ok := looksLikeRun(c.args)
		if keep != c.keep || ok != c.ok {
			t.Errorf("looksLikeRun(%q) = %v, %v; want %v, %v", c.args, keep, ok, c.keep, c.ok)
		}
	}
}
