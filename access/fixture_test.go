package access

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// The fixture's host: a user's home with a cargo workspace in a git clone.
const (
	home = "/home/u"
	ws   = "/home/u/proj"
	tmp  = "/tmp/wrun-1"
)

// fixture builds, without touching the disk, the policy policy.Compute
// makes for spec on the fixture's host (escalate's fixture is the same;
// its drift tests hold both to what Compute really makes).
func fixture(t testing.TB, spec string, extra ...policy.Rule) *policy.Policy {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Grant: g, GrantSpec: g.String(), GrantName: g.Name(), Workdir: ws, Cwd: ws, TempDir: tmp,
		Network: policy.NetworkOf(g.Network),
		IPC:     policy.IPC{AbstractUnixOutside: g.Desktop == grant.DesktopOn, PathUnixOutside: g.Desktop == grant.DesktopOn}}
	add := func(path string, acc policy.Access, src, why string) {
		p.Rules = append(p.Rules, policy.Rule{Path: path, Access: acc, Source: src, Why: why})
	}
	add("/", policy.ReadExec, "grant", "the whole file system is readable")
	p.Hidden = append(p.Hidden,
		policy.Hole{Path: "/dev", Withheld: policy.All &^ policy.ReadDir, Why: "device nodes"},
		policy.Hole{Path: "/dev/pts", Withheld: policy.All &^ policy.ReadDir, Why: "other terminals of this user"},
		policy.Hole{Path: home + "/.ssh", Withheld: policy.All &^ policy.ReadDir, Why: "credential store (SSH keys)"},
		policy.Hole{Path: home + "/.cargo/credentials.toml", Withheld: policy.All &^ policy.ReadDir, Why: "credential store (crates registry token)"},
	)
	add("/dev/null", policy.ReadFile|policy.WriteExisting, "grant", "discarding output")
	add(tmp, policy.ReadWrite, "grant", "private temp dir (TMPDIR), emptied after the run")
	if g.Files == grant.FilesWrite {
		add(ws, policy.ReadWrite, "grant", "the workspace (files=write)")
	}
	if g.Files == grant.FilesNone {
		p.Hidden = append(p.Hidden, policy.Hole{Path: ws, Withheld: policy.All, Why: "the workspace (files=none)"})
	}
	if g.Shell >= grant.ShellVerify {
		add(ws+"/target", policy.ReadWrite, "verify:cargo", "cargo build output")
	}
	if g.Shell == grant.ShellFull {
		for _, c := range []string{home + "/.cache", home + "/.cargo/registry", home + "/.cargo/git", home + "/go/pkg/mod", home + "/.npm"} {
			add(c, policy.ReadWrite, "full", "a tool cache")
		}
	}
	p.Rules = append(p.Rules, extra...)
	// Protected paths inside writable rules, as policy finds them.
	writable := func(path string) string {
		for _, r := range p.Rules {
			if r.Access&(policy.MakeReg|policy.MakeDir) != 0 && policy.Within(path, r.Path) {
				return r.Path
			}
		}
		return ""
	}
	prot := func(path string, dir, exists, pin bool, why string) {
		if w := writable(path); w != "" {
			p.Protected = append(p.Protected, policy.Protected{Path: path, Dir: dir, Exists: exists, Pin: pin, Within: w, Why: why})
		}
	}
	gd := filepath.Join(ws, ".git")
	prot(gd, true, true, true, "the repository directory itself")
	prot(gd+"/config", false, true, false, "git config")
	prot(gd+"/config.worktree", false, false, false, "git config")
	prot(gd+"/hooks", true, true, false, "git hooks")
	prot(gd+"/commondir", false, false, false, "git's commondir file")
	prot(ws+"/.wrun.toml", false, false, false, "wrun's own config")
	prot(home+"/.bashrc", false, true, false, "shell start-up file")
	return p
}

// render writes what Check found missing as "PATH RIGHT (REASON) <- CAUSE
// CAUSEPATH", joined by "; ".
func render(ms []Missing) string {
	var out []string
	for _, m := range ms {
		s := m.Path + m.Addr + " " + m.Right
		if m.Reason != "" {
			s += " (" + m.Reason + ")"
		}
		s += " <- " + string(m.Cause.Kind)
		if m.Cause.Path != "" {
			s += " " + m.Cause.Path
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// row is one operation under one grant and platform, with what the kernel
// refuses ("" for allowed) and what decided it.
type row struct {
	name  string
	grant string
	pf    Platform
	extra []policy.Rule
	op    Op
	want  string
}

// Shorthands for the platforms of the tables.
var (
	mounted = Platform{Protection: ProtectExact}
	abi9    = Platform{UnixConfined: true}
)

func checkRows(t *testing.T, rows []row) {
	t.Helper()
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			m := New(fixture(t, tc.grant, tc.extra...), tc.pf)
			ms := m.Check(tc.op)
			if got := render(ms); got != tc.want {
				t.Errorf("Check(%+v)\n got %q\nwant %q", tc.op, got, tc.want)
			}
			for _, x := range ms {
				if x.Right == "" || x.Cause.Kind == "" {
					t.Errorf("incomplete %+v", x)
				}
				if x.Access != 0 && x.Access.String() != x.Right {
					t.Errorf("Access %s disagrees with Right %s", x.Access, x.Right)
				}
			}
		})
	}
}
