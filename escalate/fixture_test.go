package escalate

import (
	"path/filepath"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// The fixture's host: a user's home with a cargo workspace in a git clone.
const (
	home = "/home/u"
	ws   = "/home/u/proj"
	tmp  = "/tmp/wrun-1"
)

var fixtureEnv = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}

// fixture builds, without touching the disk, the policy policy.Compute
// makes for spec on the fixture's host (computed_test.go runs the same kind
// of checks on policies Compute really made).
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
	// What is readable is named (policy.SystemRoots and the workspace).
	for _, r := range []string{"/usr", "/bin", "/etc", "/opt"} {
		add(r, policy.ReadExec, "system", "the system's programs and configuration")
	}
	if g.Files != grant.FilesNone {
		add(ws, policy.ReadExec, "grant", "the workspace")
	}
	add(home+"/.cargo", policy.ReadExec, "home", "cargo")
	p.Hidden = append(p.Hidden,
		policy.Hole{Path: "/dev", Withheld: policy.All &^ policy.ReadDir, Why: "device nodes: only the few listed as readable or writable are open to the child"},
		policy.Hole{Path: "/dev/pts", Withheld: policy.All &^ policy.ReadDir, Why: "other terminals of this user: reading one steals its keystrokes"},
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
		add(ws+"/target", policy.ReadWrite, "verify:cargo", "cargo build output of the workspace at "+ws)
	}
	if g.Shell == grant.ShellFull {
		for _, c := range []string{home + "/.cache", home + "/.cargo/registry", home + "/.cargo/git", home + "/go/pkg/mod", home + "/.npm"} {
			add(c, policy.ReadWrite, "full", "a tool cache")
		}
	}
	p.Rules = append(p.Rules, extra...)
	// Protected paths inside writable rules, as protectedPaths finds them.
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
	prot(gd, true, true, true, "the repository directory itself: renaming or replacing it would swap in a config and hooks of the child's choosing")
	prot(gd+"/config", false, true, false, "git config: a child that writes it (core.fsmonitor, core.hooksPath, aliases, filters) runs code at the next unsandboxed git command")
	prot(gd+"/config.worktree", false, false, false, "git config: a child that writes it (core.fsmonitor, core.hooksPath, aliases, filters) runs code at the next unsandboxed git command")
	prot(gd+"/hooks", true, true, false, "git hooks: a planted hook runs at the next unsandboxed commit, merge or checkout")
	prot(gd+"/commondir", false, false, false, "git's commondir file: it redirects where git reads config and hooks from")
	prot(ws+"/.wrun.toml", false, false, false, "wrun's own config: a child must not choose the grant of later runs")
	prot(ws+"/.wrun", true, false, false, "wrun's own config: a child must not choose the grant of later runs")
	prot(home+"/.bashrc", false, true, false, "shell or tool start-up file: it runs at the next unsandboxed shell or tool start")
	return p
}

// analyzer returns an Analyzer for spec on the fixture host.
func analyzer(t testing.TB, spec string, f Facts, extra ...policy.Rule) *Analyzer {
	t.Helper()
	if f.Home == "" {
		f.Home = home
	}
	if f.Env == nil {
		f.Env = fixtureEnv
	}
	p := fixture(t, spec, extra...)
	// The tool caches of the analyzer's environment, as Compute finds them.
	p.Caches = verify.ToolCaches(verify.Input{Workdir: p.Workdir, Home: f.Home, Getenv: func(name string) string {
		v, _ := envlist.Lookup(f.Env, name)
		return v
	}})
	a, err := New(p, f)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
