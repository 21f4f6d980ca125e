package main

import (
	"github.com/wrun-dev/wrun/grant"
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

// TestHelpNamesEveryGrantField: --help counts the grant's fields as the
// grant has them and lists each one's values.
func TestHelpNamesEveryGrantField(t *testing.T) {
	fields := grant.FieldNames()
	words := map[int]string{4: "four", 5: "five", 6: "six", 7: "seven"}
	if want := "A grant has " + words[len(fields)] + " fields (" + strings.Join(fields, ", ") + ")"; !strings.Contains(longHelp, want) {
		t.Errorf("--help does not say %q", want)
	}
	for _, f := range fields {
		if !strings.Contains(longHelp, f+"=") {
			t.Errorf("--help lists no values of %s", f)
		}
	}
}
