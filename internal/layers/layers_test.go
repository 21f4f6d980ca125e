package layers

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/wrun-dev/wrun/"

// violations lists the broken rules in a graph of the module's packages
// (each package's dependencies, direct or not, module paths trimmed).
func violations(deps map[string][]string) []string {
	// core are the packages of the sandbox core; above are those it must
	// not depend on.
	core := []string{"grant", "tools", "verify", "policy", "access", "sandbox", "sandbox/linux", "sandbox/darwin"}
	above := []string{"proxy", "escalate", "run", "config", "receipt", "roster", "session", "tools/toolsfile", "hook", "cmd/wrun"}
	var out []string
	for pkg, ds := range deps {
		for _, d := range ds {
			switch {
			case d == "cmd/wrun" && pkg != "cmd/wrun":
				out = append(out, pkg+" imports cmd/wrun: nothing may")
			case contains(core, pkg) && contains(above, d):
				out = append(out, pkg+" (the sandbox core) depends on "+d)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestViolationsSeesABrokenRule: the checker fails the edges it must
// (the control for TestLayers).
func TestViolationsSeesABrokenRule(t *testing.T) {
	for _, tc := range []struct {
		deps map[string][]string
		want int
	}{
		{map[string][]string{"policy": {"grant", "verify"}, "run": {"policy", "escalate"}}, 0},
		{map[string][]string{"policy": {"escalate"}}, 1},
		{map[string][]string{"sandbox/linux": {"receipt", "run"}}, 2},
		{map[string][]string{"run": {"cmd/wrun"}}, 1},
	} {
		if got := violations(tc.deps); len(got) != tc.want {
			t.Errorf("violations(%v) = %q, want %d", tc.deps, got, tc.want)
		}
	}
}

// TestLayers asks the go command for every package's dependencies, for
// Linux and for macOS, and fails on an edge the layers forbid.
func TestLayers(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the packages' imports")
	}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command(gobin, "list", "-deps=false", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "../../...")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v", goos, err)
		}
		deps := map[string][]string{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 || !strings.HasPrefix(f[0], module) {
				continue
			}
			pkg := strings.TrimPrefix(f[0], module)
			for _, d := range f[1:] {
				if strings.HasPrefix(d, module) {
					deps[pkg] = append(deps[pkg], strings.TrimPrefix(d, module))
				}
			}
		}
		if len(deps) < 10 || len(deps["cmd/wrun"]) < 5 {
			t.Fatalf("GOOS=%s: go list listed %d packages; the walk did not happen", goos, len(deps))
		}
		for _, v := range violations(deps) {
			t.Errorf("GOOS=%s: %s", goos, v)
		}
	}
}

// TestSandboxingCallsInSandboxLinux: no file outside sandbox/linux (its
// tests aside) names a sandboxing system call.
func TestSandboxingCallsInSandboxLinux(t *testing.T) {
	sandboxingCall := regexp.MustCompile(`\bunix\.(SYS_LANDLOCK_\w+|SYS_SECCOMP|PR_SET_NO_NEW_PRIVS|PR_SET_SECCOMP|SECCOMP_SET_MODE_FILTER|Capset|PR_CAP_AMBIENT)\b`)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen, inLinux := 0, 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		seen++
		rel, _ := filepath.Rel(root, p)
		if m := sandboxingCall.Find(b); m != nil {
			if filepath.Dir(rel) == filepath.Join("sandbox", "linux") {
				inLinux++
				return nil
			}
			t.Errorf("%s names %s: sandboxing calls belong in sandbox/linux", rel, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 || inLinux == 0 {
		t.Fatalf("read %d files, %d of sandbox/linux name a sandboxing call: the walk or the pattern is wrong", seen, inLinux)
	}
}
