//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// TestMatrixCell asserts this environment's row of the support matrix (the
// simulated Landlock ABI and machine, the user the test runs as):
// each named grant, in a workspace that is a git repository, runs in full
// where the matrix holds it (under write and full a new file can be made
// beside .git, whatever holds .git/config), and is refused with exit 125
// naming each protection nothing holds where it does not.
func TestMatrixCell(t *testing.T) {
	e := matrixFeatures(runOpts{})
	t.Logf("this environment: %s", e.Name())
	for _, name := range []string{"inspect", "verify", "write", "full"} {
		t.Run(name, func(t *testing.T) {
			g, err := grant.Parse(name)
			if err != nil {
				t.Fatal(err)
			}
			ws := workspace(t)
			newRepo(t, ws)
			config := mustRead(t, filepath.Join(ws, ".git", "config"))
			sh := "echo ran"
			writes := g.Files == grant.FilesWrite
			if writes {
				sh = "echo new > created && echo ran; echo '[core] fsmonitor = touch pwned' >> .git/config"
			}
			o := runOpts{dir: ws, env: []string{"GIT_CONFIG_NOSYSTEM=1"}}
			var refused []string
			for _, r := range linux.Refusals(e, g, linux.Need{CreateBeside: true}) {
				refused = append(refused, r.What)
			}
			r := run(t, o, bins.wrun, "--grant", name, "--", "sh", "-c", sh)
			if len(refused) > 0 {
				checkRefused(t, r, e.Name(), refused)
				if exists(filepath.Join(ws, "created")) {
					t.Errorf("a refused run ran:\n%s", r)
				}
				t.Logf("refused by the matrix (%s): %s", e.Name(), strings.Join(refused, "; "))
				return
			}
			if !strings.Contains(r.stdout, "ran") || strings.Contains(r.stderr, "DEGRADED") {
				t.Fatalf("the matrix holds --grant %s here (%s), but it did not run in full:\n%s", name, e.Name(), r)
			}
			if writes && !exists(filepath.Join(ws, "created")) {
				t.Errorf("--grant %s: no new file could be made beside .git:\n%s", name, r)
			}
			if got := mustRead(t, filepath.Join(ws, ".git", "config")); got != config {
				t.Errorf("--grant %s: .git/config was changed", name)
			}
			_ = os.Remove(filepath.Join(ws, "created"))
		})
	}
}
