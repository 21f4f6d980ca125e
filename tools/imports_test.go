package tools

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyStandardLibrary: the decision is a boundary, so nothing beyond
// the standard library may be in the package's dependencies. It asks the
// go command for every package the tools package depends on, directly or
// not, and fails on any that is not standard.
func TestOnlyStandardLibrary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the package's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, _ := strings.Cut(line, " ")
		seen++
		if std != "true" && path != "github.com/wrun-dev/wrun/tools" {
			t.Errorf("package tools depends on %s, which is not in the standard library", path)
		}
	}
	if seen < 5 {
		t.Fatalf("go list -deps listed %d packages; the walk did not happen", seen)
	}
}
