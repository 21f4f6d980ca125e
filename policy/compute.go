package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/verify"
)

// Host is what the policy depends on besides the grant: facts about the
// machine and the invocation. The launcher fills it in; tests build it.
type Host struct {
	// Workdir is the workspace root: absolute, symlinks resolved.
	Workdir string
	// Home is the invoking user's home directory, $HOME ("" if unknown).
	Home string
	// AccountHome is the home directory of the account (from the user
	// database), when it differs from Home; it is hidden too.
	AccountHome string
	// Env is the invoking environment, as os.Environ returns it.
	Env []string
	// TempDir is the private temp dir made for this run; "" when only
	// explaining.
	TempDir string
	// RunID names this run (its git quarantine, its guard journal):
	// letters, digits, '-' and '_'; "" takes TempDir's base name. A
	// TempDir's path can be the same for successive runs, a RunID never.
	RunID string
	// StateDir is wrun's per-user state directory (private caches kept
	// between sandboxed runs); "" disables such caches.
	StateDir string
	// Self is the path of the wrun executable ("" if unknown); verify mode
	// has it serve the go build cache.
	Self string
	// Stdio holds the paths behind file descriptors 0, 1 and 2 when they
	// are files or terminals, "" otherwise.
	Stdio [3]string
	// Sandbox names the enforcement ("landlock"); exported as WRUN_SANDBOX.
	Sandbox string
	// Roots are the system's directories the child reads (SystemRoots);
	// nil reads none of them.
	Roots []ReadRoot
	// Program is the command wrun runs when it was named by a path
	// (absolute, or relative to the workspace), "" otherwise: it is
	// readable and executable wherever it lies.
	Program string
	// Identity is who the child runs as; Scan lists the trees searched
	// for files that only this identity may read (ScanRoots), which are
	// hidden. A nil Scan searches nothing.
	Identity Identity
	Scan     []ScanRoot
	// Search, when set, is that search already started
	// (StartPrivateSearch) so that it overlaps with the launch's other
	// work; Compute takes its result when it searched Scan for Identity,
	// and searches itself otherwise.
	Search *PrivateSearch
	// Records are wrun's records of runs: the directory of the receipts
	// and the roster of live runs. They are the user's, not the child's:
	// hidden whole, neither readable nor writable (names listable, as in
	// every hidden directory).
	Records []string
	// Hide are more paths the user's config hides (listable, not
	// readable).
	Hide []string
	// NetHosts are the hosts the repository's remotes and the user's
	// registries name (verify.NetHosts), which network=hosts reaches
	// without an --allow-host entry.
	NetHosts []verify.NetHost
}

// Options are the user's additions to the grant.
type Options struct {
	// AllowRead and AllowWrite are extra paths: absolute, symlinks resolved.
	AllowRead, AllowWrite []string
	// AllowUnix are pathname UNIX sockets bound outside the sandbox that
	// the child may connect and send to (absolute paths).
	AllowUnix []string
	// AllowHost are the --allow-host entries: under network=loopback the
	// host's loopback services the child may reach, under network=hosts
	// also the hosts wrun's proxy lets it reach. Each must be within the
	// grant's network (grant.HostsWithin); under network=on they change
	// nothing.
	AllowHost []grant.Host
	// KeepEnv names variables to pass through although they are not on the
	// allowlist (EnvFamilies). WRUN_GRANT, WRUN_CEILING and WRUN_SANDBOX
	// are never inherited, kept or not.
	KeepEnv []string
	// Ceiling, when set, is exported to the child as WRUN_CEILING so that
	// a nested wrun inherits it.
	Ceiling string
}

// GrantName is the preset grant g equals, or "custom" (grant.Name); the
// verify preset with network=hosts, which is what --grant verify runs
// under where the platform holds network=hosts, is "verify".
func GrantName(g grant.Grant) string {
	if g.Network == grant.NetworkHosts {
		on := g
		on.Network = grant.NetworkOn
		if on.Name() == "verify" {
			return "verify"
		}
	}
	return g.Name()
}

// Compute derives the policy for grant g on host h with options o.
func Compute(g grant.Grant, h Host, o Options) (*Policy, error) {
	if !filepath.IsAbs(h.Workdir) {
		return nil, fmt.Errorf("workdir %q is not absolute", h.Workdir)
	}
	for _, p := range append(slices.Clone(o.AllowRead), o.AllowWrite...) {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("path %q is not absolute", p)
		}
	}
	p := &Policy{
		Grant:     g,
		GrantSpec: g.String(),
		GrantName: GrantName(g),
		Workdir:   h.Workdir,
		Cwd:       h.Workdir,
		TempDir:   h.TempDir,
		Network:   NetworkOf(g.Network),
		IPC: IPC{
			AbstractUnixOutside: g.Desktop == grant.DesktopOn,
			PathUnixOutside:     g.Desktop == grant.DesktopOn,
		},
	}
	if !p.IPC.PathUnixOutside {
		p.IPC.UnixSockets = slices.Clone(o.AllowUnix)
	}
	if ex := grant.HostsWithin(o.AllowHost, g.Network); len(ex) > 0 {
		return nil, errors.New(strings.Join(ex, "; "))
	}
	if p.Network.Loopback {
		p.Network.Hosts = slices.Clone(o.AllowHost)
	}
	if p.Network.Proxy {
		p.Network.Derived = slices.Clone(h.NetHosts)
		for _, d := range h.NetHosts {
			if !slices.Contains(p.Network.Hosts, d.Host) {
				p.Network.Hosts = append(p.Network.Hosts, d.Host)
			}
		}
	}

	// Reads: what is named (roots.go), then holes inside it.
	for _, r := range h.Roots {
		p.add(Rule{Path: r.Path, Access: ReadExec, Source: "system", Why: r.Why, Optional: r.Path != "/"})
	}
	p.Hidden = append(p.Hidden, Hole{Path: "/dev", Withheld: All &^ ReadDir,
		Why: "device nodes: only the few listed as readable or writable are open to the child"})
	p.Hidden = append(p.Hidden, Hole{Path: "/dev/pts", Withheld: All &^ ReadDir,
		Why: "the terminals outside the sandbox: reading one steals its keystrokes (on Linux wrun opens /dev/pts/N only for a pair the sandbox made)"})
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		p.add(Rule{Path: d, Access: ReadFile | WriteExisting, Source: "grant", Why: "discarding output", Optional: true})
	}
	// Their ioctls read the entropy count (RNDGETENTCNT, which test
	// suites call); every one that changes the pool needs CAP_SYS_ADMIN,
	// which the child never has.
	for _, d := range []string{"/dev/random", "/dev/urandom"} {
		p.add(Rule{Path: d, Access: ReadFile | IoctlDev, Source: "grant", Why: "random numbers", Optional: true})
	}
	p.add(Rule{Path: "/dev/tty", Access: Device, Source: "grant", Why: "the controlling terminal, for interactive use", Optional: true})
	// New pseudo-terminals (shells, expect-style tests, pty libraries).
	// Opening /dev/ptmx makes a new pair; it reaches no other terminal.
	// The pairs' other ends (/dev/pts/N) stay hidden here: on Linux
	// wrun's mediation opens /dev/pts/N for the child only for a pair the
	// sandbox made (sandbox/linux, devices.go), so the child reaches its
	// own terminals only.
	p.add(Rule{Path: "/dev/ptmx", Access: Device, Source: "grant", Why: "new pseudo-terminals (a new pair; no other terminal)", Optional: true})
	// The home directory is hidden but for what toolchains need; the
	// workspace, the temp dir and what the options name are granted
	// wherever they lie.
	var granted []string
	if g.Files != grant.FilesNone {
		granted = append(granted, h.Workdir)
	}
	if h.TempDir != "" {
		granted = append(granted, h.TempDir)
	}
	if h.Program != "" {
		if fi, err := os.Stat(h.Program); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && !inRoots(h.Program, h.Roots) {
			p.add(Rule{Path: h.Program, Access: ReadExec, Source: "command", Why: "the command wrun was asked to run", Optional: true})
		}
	}
	var homeRules []Rule // added last: a rule already on the path keeps its source
	for _, home := range h.homes() {
		rules, holes := homePolicy(home, h, granted)
		homeRules = append(homeRules, rules...)
		p.Hidden = append(p.Hidden, holes...)
	}
	if g.Desktop == grant.DesktopOn {
		// The display's authority file (Xauthority) lies there.
		for _, hl := range runtimeDir(h) {
			p.add(Rule{Path: hl.Path, Access: ReadExec, Source: "grant", Why: "the desktop session's runtime directory (desktop=on)", Optional: true})
		}
	} else {
		p.Hidden = append(p.Hidden, runtimeDir(h)...)
	}
	if g.Files == grant.FilesRead {
		p.add(Rule{Path: h.Workdir, Access: ReadExec, Source: "grant", Why: "the workspace (files=read)"})
	}
	// The repository the workspace lies in, found once: its reads here,
	// its protections below.
	repo, _ := verify.FindRepo(h.Workdir)
	if g.Files != grant.FilesNone {
		for _, r := range workspaceRepo(h, repo) {
			p.add(r)
		}
	}
	for _, r := range h.Records {
		if filepath.IsAbs(r) && filepath.Clean(r) != "/" {
			// Listing stays, as in every hidden directory: withholding it
			// would take it from every directory above (Landlock's rights
			// are inherited), / included.
			p.Hidden = append(p.Hidden, Hole{Path: filepath.Clean(r), Withheld: All &^ ReadDir, Why: whyRecords})
		}
	}
	for _, r := range h.Hide {
		if filepath.IsAbs(r) && filepath.Clean(r) != "/" {
			p.Hidden = append(p.Hidden, Hole{Path: filepath.Clean(r), Withheld: All &^ ReadDir, Why: "hidden by the user's config (defaults.hide)"})
		}
	}
	// Other runs' private temp dirs lie beside this run's: only its own
	// is readable (it has a rule of its own inside the hole).
	if root := verify.TempRoot(h.TempDir); root != "" {
		p.Hidden = append(p.Hidden, Hole{Path: root, Withheld: All &^ ReadDir, Why: whyTempRoot})
	}
	p.Hidden = resolveHoles(p.Hidden)
	// Files only the child's identity may read, found by their modes.
	if len(h.Scan) > 0 {
		holes := h.Search.holes(h.Scan, h.Identity)
		p.Hidden = append(p.Hidden, holes...)
	}
	if g.Files == grant.FilesNone {
		p.Hidden = append(p.Hidden, Hole{Path: h.Workdir, Withheld: All, Why: "the workspace (files=none)"})
		p.Cwd = "/"
		if h.TempDir != "" {
			p.Cwd = h.TempDir
		}
	}

	// The streams the child inherits: it holds them already, and reopening
	// /dev/stdout must keep working.
	for fd, path := range h.Stdio {
		if !filepath.IsAbs(path) {
			continue
		}
		acc := ReadFile
		if fd > 0 {
			acc = ReadFile | WriteExisting
		}
		if strings.HasPrefix(path, "/dev/") {
			acc |= Device
		}
		p.add(Rule{Path: path, Access: acc, Source: "stdio", Why: fmt.Sprintf("what file descriptor %d is open on", fd), Optional: true})
	}

	// Writes.
	if h.TempDir != "" {
		p.add(Rule{Path: h.TempDir, Access: ReadWrite, Source: "grant", Why: "private temp dir (TMPDIR), emptied after the run"})
	}
	if g.Files == grant.FilesWrite {
		p.add(Rule{Path: h.Workdir, Access: ReadWrite, Source: "grant", Why: "the workspace (files=write)"})
	}
	// verify's scope is complete (paths, what wrun creates, Beneath, why):
	// here it is only translated into rules.
	var vscope verify.Scope
	if g.Shell >= grant.ShellVerify {
		vscope = verify.Compute(VerifyInput(g, h, o))
		for _, w := range vscope.Writable {
			// Build outputs and git plumbing: later unsandboxed runs write
			// there, so no links, FIFOs or sockets may be planted.
			acc := ReadWritePlain
			create := CreateNone
			switch {
			case !w.Dir:
				acc = ReadFile | WriteExisting
			case w.Scratch:
				// Removed after the run: nothing later trusts it.
				acc = ReadWrite
			}
			if w.Create {
				create = CreateFile
				if w.Dir {
					create = CreateDir
				}
			}
			if w.Entry {
				// One name in a read-only directory (see Rule.Entry).
				p.add(Rule{Path: w.Path, Access: ReadFile | WriteExisting, Source: "verify:" + w.Tool, Why: w.Why, Optional: true, Beneath: w.Beneath, Entry: true})
				continue
			}
			p.add(Rule{Path: w.Path, Access: acc, Source: "verify:" + w.Tool, Why: w.Why, Create: create, Optional: !w.Create, Beneath: w.Beneath})
		}
		// shell=full: the user's own tool caches.
		for _, c := range vscope.UserCaches {
			p.add(Rule{Path: c.Path, Access: ReadWrite, Source: "full:" + c.Tool, Why: c.Why, Optional: true})
		}
		p.ReadOnly = append(p.ReadOnly, vscope.ReadOnly...)
		p.Notes = append(p.Notes, vscope.Notes...)
		p.Prepare = append(p.Prepare, vscope.Prepare...)
		p.Finish = append(p.Finish, vscope.Finish...)
	}
	for _, r := range o.AllowRead {
		p.add(Rule{Path: r, Access: ReadExec, Source: "--allow-read", Why: "granted on the command line"})
	}
	for _, w := range o.AllowWrite {
		p.add(Rule{Path: w, Access: ReadWrite, Source: "--allow-write", Why: "granted on the command line"})
	}
	for _, r := range homeRules {
		p.add(r)
	}
	p.Hidden = append(p.Hidden, unnamedTop(p.Rules, p.Hidden)...)
	// A grant of exactly a hidden path opens it: --allow-read, and the
	// paths the child needs (the temp dir, a file it holds open) when the
	// search found them private. (A grant inside a hidden path opens just
	// itself; one above it is carved like any other.)
	p.Hidden = slices.DeleteFunc(p.Hidden, func(hl Hole) bool {
		for _, r := range p.Rules {
			if r.Path != hl.Path {
				continue
			}
			if r.Source == "--allow-read" || r.Source == "--allow-write" || hl.Withheld != All {
				return true
			}
		}
		return false
	})

	var guard verify.Guard
	var err error
	if p.Protected, guard, err = protectedPaths(p, h, repo); err != nil {
		return nil, err
	}
	for _, w := range vscope.Writable {
		if w.Scratch {
			guard.Scratch = append(guard.Scratch, w.Path)
		}
	}
	if guard.Journal != "" || !guard.Empty() {
		gd := &guard
		p.Prepare = append(p.Prepare, verify.Step{Kind: verify.StepGuardOpen, Dir: guard.Journal, Guard: gd,
			Why: "makes the checks earlier runs ended without (wrun killed), then records this run's: git metadata and start-up files that no rule can keep the child from creating"})
		p.Finish = append(p.Finish, verify.Step{Kind: verify.StepGuardClose, Dir: guard.Journal, Guard: gd,
			Why: "removes what must not appear (rebase state, a commondir, new submodule or worktree git dirs, new dot files in the home directory), restores replaced links, moves aside the .git of a new repository whose config or hooks run programs"})
	}
	// wrun's state directory holds what sandboxed runs under other grants
	// trust (their private build caches): a child whose grant reaches it
	// must not write it.
	if h.StateDir != "" {
		root := filepath.Clean(h.StateDir)
		for _, r := range p.Rules {
			if r.Access&(MakeReg|MakeDir) != 0 && Within(root, r.Path) && r.Path != root {
				p.Protected = append(p.Protected, Protected{Path: root, Dir: true, Exists: exists(root), Within: r.Path,
					Why: "wrun's state directory: the private build caches of sandboxed runs under other grants, which they trust"})
				break
			}
		}
	}
	p.Caches = verify.ToolCaches(hostInput(h))
	p.EnvSet, p.EnvUnset, p.EnvPassed, p.Env = childEnv(g, h, o, vscope.Env)
	if g.Files != grant.FilesNone {
		p.Notes = append(p.Notes, "names inside hidden directories (the home directory among them) can be listed; their contents cannot be read")
	}
	return p, nil
}

// workspaceRepo returns the rules that let git and the build tools work
// in a workspace that is part of a larger project: the roots the build
// tools find above it (verify.ProjectRoots), the repository's git
// directories (a linked worktree's and a submodule's lie elsewhere) and,
// for a workspace below the top of its repository's working tree, that
// top (go.mod, Cargo.toml, package.json, .gitignore lie there), all
// read-only. Not what holds a home directory (a dotfiles repository),
// whose files and history are the home's.
func workspaceRepo(h Host, r *verify.Repo) []Rule {
	homes := h.homes()
	holdsHome := func(dir string) bool {
		return slices.ContainsFunc(homes, func(home string) bool { return Within(home, dir) })
	}
	var out []Rule
	for _, d := range verify.ProjectRoots(h.Workdir) {
		if !shared(d, homes) {
			out = append(out, Rule{Path: d, Access: ReadExec, Source: "workspace",
				Why: "what the build tools read above the workspace (a cargo workspace, a Go module, cargo's configuration files)", Optional: true})
		}
	}
	if r == nil || holdsHome(r.WorkTree) || holdsHome(r.CommonDir) {
		return out
	}
	if !r.Bare && r.WorkTree != h.Workdir && !shared(r.WorkTree, homes) {
		out = append(out, Rule{Path: r.WorkTree, Access: ReadExec, Source: "workspace",
			Why: "the top of the repository the workspace lies in: its build files and ignore rules", Optional: true})
	}
	if r.DotGitIsFile && r.Answers() != nil {
		// The .git file is the workspace's own content: a git dir it
		// names is read only when it names it back (a linked worktree's,
		// a submodule's).
		return out
	}
	for _, d := range slices.Compact([]string{r.GitDir, r.CommonDir}) {
		if !Within(d, h.Workdir) {
			out = append(out, Rule{Path: d, Access: ReadExec, Source: "workspace", Why: "the git directory of the workspace's repository", Optional: true})
		}
	}
	return out
}

// VerifyInput is what verify mode's scope depends on, for grant g on host
// h with options o: the workspace, the environment, a state directory
// private to sandboxed runs of this workspace under this very authority
// (StateKey). It is the one place verify's input is built; Compute uses it
// too.
func VerifyInput(g grant.Grant, h Host, o Options) verify.Input {
	stateDir, stateRoot := "", ""
	if h.StateDir != "" && stateRootReach(g, h, o) == "" {
		stateRoot = filepath.Clean(h.StateDir)
		stateDir = filepath.Join(stateRoot, "ws", StateKey(g, h, o))
	}
	getenv := func(name string) string {
		v, _ := envlist.Lookup(h.Env, name)
		return v
	}
	return verify.Input{Workdir: h.Workdir, Home: h.Home, Getenv: getenv,
		StateDir: stateDir, StateRoot: stateRoot, TempDir: h.TempDir, RunID: h.RunID, Self: h.Self,
		SharedCaches: g.Shell == grant.ShellFull, WorkspaceWritable: g.Files == grant.FilesWrite,
		HostsProxy: g.Network == grant.NetworkHosts}
}

// StateKey names the private state (build caches, cargo's target dir) of
// sandboxed runs of workspace h.Workdir under grant g with options o. What
// a run keeps is used by later runs with the same key only: a run never
// reuses state written under any other authority, wider or narrower (the
// narrower run was the less trusted one, and a wider one may have read
// what the narrower must not). The key covers everything that gives the
// child rights: the workspace, the canonical grant, the extra readable and
// writable paths, the hosts network=hosts reaches and the variables kept. It is the workspace's hash, a
// dash and the authority's hash, so one workspace's state stays together.
func StateKey(g grant.Grant, h Host, o Options) string {
	ws := sha256.Sum256([]byte(filepath.Clean(h.Workdir)))
	a := sha256.New()
	field := func(tag string, vals ...string) {
		vals = slices.Clone(vals)
		slices.Sort(vals)
		vals = slices.Compact(vals)
		fmt.Fprintf(a, "%s %d\x00", tag, len(vals))
		for _, v := range vals {
			fmt.Fprintf(a, "%d:%s\x00", len(v), v)
		}
	}
	field("wrun-state-key-v2")
	field("grant", g.String())
	field("allow-read", cleanAll(o.AllowRead)...)
	field("allow-write", cleanAll(o.AllowWrite)...)
	if len(o.AllowUnix) > 0 {
		field("allow-unix", cleanAll(o.AllowUnix)...)
	}
	if len(o.AllowHost) > 0 {
		var hosts []string
		for _, h := range o.AllowHost {
			hosts = append(hosts, h.String())
		}
		field("allow-host", hosts...)
	}
	if g.Network == grant.NetworkHosts && len(h.NetHosts) > 0 {
		var hosts []string
		for _, d := range h.NetHosts {
			hosts = append(hosts, d.Host.String())
		}
		field("net-hosts", hosts...)
	}
	field("keep-env", o.KeepEnv...)
	return hex.EncodeToString(ws[:8]) + "-" + hex.EncodeToString(a.Sum(nil)[:8])
}

func cleanAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Clean(p)
	}
	return out
}

// stateRootReach returns the writable path of the grant that holds wrun's
// state directory h.StateDir (the workspace under files=write, the user's
// cache directory under shell=full, an --allow-write path), or "". A child
// that can write the state directory could plant state for runs under
// every other grant: the run keeps no private state then, and the state
// directory is protected (Compute).
func stateRootReach(g grant.Grant, h Host, o Options) string {
	if h.StateDir == "" {
		return ""
	}
	root := filepath.Clean(h.StateDir)
	var writable []string
	if g.Files == grant.FilesWrite {
		writable = append(writable, h.Workdir)
	}
	if g.Shell == grant.ShellFull {
		for _, c := range verify.ToolCaches(hostInput(h)) {
			for _, f := range c.Full {
				writable = append(writable, f.Path)
			}
		}
	}
	writable = append(writable, o.AllowWrite...)
	for _, w := range writable {
		if w != "" && Within(root, filepath.Clean(w)) {
			return filepath.Clean(w)
		}
	}
	return ""
}

// hostInput is what locating the user's tool caches needs of h.
func hostInput(h Host) verify.Input {
	return verify.Input{Workdir: h.Workdir, Home: h.Home, Getenv: func(name string) string {
		v, _ := envlist.Lookup(h.Env, name)
		return v
	}}
}

// add appends r, merging it with an existing rule on the same path.
func (p *Policy) add(r Rule) {
	r.Path = filepath.Clean(r.Path)
	for i := range p.Rules {
		if p.Rules[i].Path == r.Path {
			p.Rules[i].Access |= r.Access
			if r.Create != CreateNone {
				p.Rules[i].Create = r.Create
			}
			p.Rules[i].Optional = p.Rules[i].Optional && r.Optional
			if !strings.Contains(p.Rules[i].Why, r.Why) {
				p.Rules[i].Why += "; " + r.Why
			}
			return
		}
	}
	p.Rules = append(p.Rules, r)
}

// Within reports whether path is base or lies beneath it.
func Within(path, base string) bool {
	if base == "/" {
		return strings.HasPrefix(path, "/")
	}
	// Without building base+"/": escalate calls this for every rule and
	// every denial.
	return path == base || len(path) > len(base) && path[len(base)] == '/' && strings.HasPrefix(path, base)
}

// exists reports whether path exists (without following a final symlink).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// resolveHoles adds, for each hole reached through a symbolic link, the
// hole at the link's target: a rule carved around the link would otherwise
// still cover the target where it really lies.
func resolveHoles(holes []Hole) []Hole {
	out := slices.Clone(holes)
	dirs := map[string]string{} // resolved parents, computed once each
	for _, hl := range holes {
		parent := filepath.Dir(hl.Path)
		dir, ok := dirs[parent]
		if !ok {
			var err error
			if dir, err = filepath.EvalSymlinks(parent); err != nil {
				dir = "" // the parent does not exist: nothing to resolve
			}
			dirs[parent] = dir
		}
		if dir == "" {
			continue
		}
		real := filepath.Join(dir, filepath.Base(hl.Path))
		if fi, err := os.Lstat(real); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if r, err := filepath.EvalSymlinks(real); err == nil {
				real = r
			}
		}
		if real != hl.Path {
			r := hl
			r.Path = real
			r.Why = hl.Why + " (where " + hl.Path + " really lies)"
			out = append(out, r)
		}
	}
	return out
}
