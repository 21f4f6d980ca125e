package linux

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's support matrix from the table")

// TestMatrixCells checks the table's promises: through the stage (root,
// or user namespaces) every named grant runs at every Landlock ABI, 0
// included (where /proc is masked, ABI 0 refuses other processes); without namespaces what
// Landlock has no hook for is refused; every cell either names what holds
// it or why nothing does.
func TestMatrixCells(t *testing.T) {
	for _, e := range MatrixEnvs() {
		for _, g := range namedGrants() {
			for _, n := range []Need{{}, {CreateBeside: true}} {
				rs := e.Refusals(g.Grant, n)
				var keys []string
				for _, r := range rs {
					keys = append(keys, r.Protection.Key)
					if r.Why == "" {
						t.Errorf("%s, %s: %s refused without a reason", e.Name(), g.Name, r.Protection.Key)
					}
				}
				got := strings.Join(keys, ",")
				var want string
				switch {
				case e.stage() && e.Landlock.ABI >= 1:
					want = ""
				case e.stage() && e.ProcMasked:
					want = "shell.processes"
				}
				if e.stage() && got != want {
					t.Errorf("%s, --grant %s: refused %q, want %q", e.Name(), g.Name, got, want)
				}
				if !e.stage() {
					for _, k := range []string{"files.metadata", "shell.wrun"} {
						if !strings.Contains(got, k) {
							t.Errorf("%s, --grant %s: %s is not refused without namespaces", e.Name(), g.Name, k)
						}
					}
					wantCreate := g.Grant.Files == grant.FilesWrite && (n.CreateBeside || e.Landlock.ABI == 0)
					if strings.Contains(got, "files.create") != wantCreate {
						t.Errorf("%s, --grant %s, %+v: files.create refused %v, want %v", e.Name(), g.Name, n, !wantCreate, wantCreate)
					}
					if wantSig := e.Landlock.ABI < 6; strings.Contains(got, "shell.signals") != wantSig {
						t.Errorf("%s: shell.signals refused %v, want %v", e.Name(), !wantSig, wantSig)
					}
				}
			}
		}
		for _, p := range protections() {
			c := e.Hold(p.Key, grant.Grant{}, Need{})
			if c.Held() == (len(c.By) == 0) {
				t.Errorf("%s, %s: held %v but by %q", e.Name(), p.Key, c.Held(), c.By)
			}
		}
	}
	// Signals are held by the PID namespace where Landlock cannot scope
	// them, and by both where it can.
	e := Env{Landlock: landlockKernel{ABI: 5}, UserNS: true, MountAPI: true}
	if c := e.Hold("shell.signals", grant.Grant{}, Need{}); strings.Join(c.By, "+") != mechPIDNS {
		t.Errorf("ABI 5 with user namespaces: signals held by %q", c.By)
	}
	// A kernel without the mount calls has no stage.
	e.MountAPI = false
	if e.stage() || len(e.Refusals(grant.Grant{}, Need{})) == 0 {
		t.Error("without open_tree and mount_setattr the stage was counted on")
	}
	// Abstract sockets below ABI 6: a network namespace with the network
	// off, else the socket mediation's refusal of abstract addresses.
	e = Env{Landlock: landlockKernel{ABI: 5}, UserNS: true, MountAPI: true}
	if c := e.Hold("desktop.abstract", grant.Grant{Network: grant.NetworkOff}, Need{}); c.By[0] != mechNetNS {
		t.Errorf("network off: %+v", c)
	}
	if c := e.Hold("desktop.abstract", grant.Grant{Network: grant.NetworkOn}, Need{}); c.By[0] != mechMediation || !strings.Contains(c.Note, "abstract") {
		t.Errorf("network on: %+v", c)
	}
	// No stage: seccomp refuses AF_UNIX sockets and datagram socketpairs.
	e.UserNS = false
	if c := e.Hold("desktop.abstract", grant.Grant{Network: grant.NetworkOn}, Need{}); c.By[0] != mechSeccomp || !strings.Contains(c.Note, "socketpairs") {
		t.Errorf("no stage, network on: %+v", c)
	}
}

// TestREADMEMatrix checks that the README's support matrix is the one the
// table generates (go test ./sandbox/linux -run TestREADMEMatrix
// -update-readme rewrites it).
func TestREADMEMatrix(t *testing.T) {
	const path = "../../README.md"
	const begin, end = "<!-- support matrix: generated from sandbox/linux/matrix.go -->\n", "<!-- end of support matrix -->\n"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers %q and %q", begin, end)
	}
	var gen strings.Builder
	gen.WriteString("\n" + MatrixMarkdown() + "\nWhy a cell is refused:\n\n")
	for _, r := range RefusalReasons() {
		gen.WriteString("- " + r + "\n")
	}
	gen.WriteString("\nWhat a user without user namespaces can do: " + enableUserNS + ".\n\n")
	want := gen.String()
	if s[i+len(begin):j] == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile(path, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's support matrix differs from the table; run go test ./sandbox/linux -run TestREADMEMatrix -update-readme")
}
