package linux

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEMatrix: the support matrix in docs/linux.md is the one the
// code decides by (MatrixMarkdown, RefusalReasons). WRUN_UPDATE_README=1
// rewrites it.
func TestREADMEMatrix(t *testing.T) {
	const page = "../../docs/linux.md"
	const begin, end = "<!-- support matrix: generated from sandbox/linux/matrix.go -->\n", "<!-- end of support matrix -->"
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no support matrix between %q and %q", page, begin, end)
	}
	var want strings.Builder
	want.WriteString("\n" + MatrixMarkdown() + "\nWhy a cell is refused:\n\n")
	for _, r := range RefusalReasons() {
		want.WriteString("- " + r + "\n")
	}
	want.WriteString("\n")
	got := readme[i+len(begin) : j]
	if got == want.String() {
		return
	}
	if os.Getenv("WRUN_UPDATE_README") == "1" {
		out := readme[:i+len(begin)] + want.String() + readme[j:]
		if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the support matrix differs from the code's; WRUN_UPDATE_README=1 go test ./sandbox/linux -run TestREADMEMatrix rewrites it", page)
}
