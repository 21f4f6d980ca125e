//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Plan is a policy made concrete for this kernel: the Landlock ruleset,
// the seccomp filter, the mounts and the checks after the run.
type Plan struct {
	Policy   *policy.Policy `json:"-"`
	Features Features       `json:"features"`
	ABI      int            `json:"landlock_abi"`
	attr     rulesetAttr
	Rules    []policy.Rule `json:"-"`
	// Mounts protect paths inside writable trees in a private mount
	// namespace: parents first.
	Mounts []policy.Protected `json:"-"`
	// Sweep lists protected paths that must not come into existence; they
	// are checked, and removed, after the run.
	Sweep []policy.Protected `json:"-"`
	// Masks are the hidden paths the stage covers with an empty file or
	// directory the child can neither read nor list, none inside another;
	// the other hidden paths are carved out of Rules.
	Masks []policy.Hole `json:"-"`
	// Views are the hidden directories the stage covers, without
	// Landlock, with a read-only tmpfs holding only the rules beneath
	// them (deepest first).
	Views []holeView `json:"-"`
	// Create lists what wrun creates before the child starts.
	Create  []creation `json:"-"`
	seccomp seccompSpec
	// Protection says how protected paths are enforced.
	Protection string        `json:"protection"`
	Gaps       []sandbox.Gap `json:"gaps"`
	Notes      []string      `json:"notes"`
	Degraded   bool          `json:"degraded"`
	// DropCaps: wrun runs as root, whose child keeps uid 0 but no
	// capability. (Every child's capabilities are dropped; this says it
	// matters.)
	DropCaps bool            `json:"drop_capabilities"`
	Options  sandbox.Options `json:"-"`
	// stage: the command runs under the stage, the init of new PID, IPC
	// and mount namespaces (see Stage2), rather than as a child of wrun's
	// launch thread. Chosen wherever wrun can make namespaces.
	stage bool
	// viaUserNS: the stage's namespaces are made inside a new user
	// namespace (wrun lacks CAP_SYS_ADMIN).
	viaUserNS bool
	// netNS: the stage also gets a network namespace (network off, and
	// Landlock cannot scope abstract UNIX sockets).
	netNS bool
	// env and need are the support matrix's row and the plan's facts,
	// for explain.
	env  Env
	need Need
	// audit: read Landlock's audit records of the run where the kernel
	// offers them (ABI 7) and auditing is on.
	audit bool
	// Unix says how pathname UNIX sockets outside the sandbox are kept
	// out (see planUnix).
	Unix UnixMechanism `json:"unix_sockets"`
}

type creation struct {
	Path    string
	Dir     bool
	Beneath string
}

// NewPlan decides how to enforce p with the features f. It reads
// directories (to carve holes) but changes nothing.
func NewPlan(p *policy.Policy, f Features, o sandbox.Options) (*Plan, error) {
	pl := &Plan{Policy: p, Features: f, ABI: f.LandlockABI, Options: o, DropCaps: f.Root}
	k := f.landlock()
	env := f.Env()
	// What Landlock lacks is listed for explain; whether it matters is the
	// support matrix's decision (below): another mechanism may hold it.
	pl.Gaps = k.gaps(f.LandlockError)
	for i := range pl.Gaps {
		pl.Gaps[i].Essential = false
	}
	if !f.Seccomp {
		pl.Gaps = append(pl.Gaps, sandbox.Gap{What: "seccomp filter", Consequence: "ptrace, io_uring, bpf and socket families are not restricted", Need: "seccomp", Essential: true})
	}

	// Landlock ruleset attributes: what this kernel offers, less what the
	// policy leaves open.
	offered := k.rights()
	pl.attr.handledFS = offered.FS
	if p.IPC.PathUnixOutside {
		pl.attr.handledFS &^= llResolveUnix
	}
	if !p.Network.Allow {
		pl.attr.handledNet = offered.Net & (llNetBindTCP | llNetConnectTCP)
	}
	pl.attr.scoped = offered.Scoped & (llScopeSignal | llScopeAbstractUnix)
	if p.IPC.AbstractUnixOutside {
		pl.attr.scoped &^= llScopeAbstractUnix
	}

	// seccomp.
	pl.seccomp.DenyInet = !p.Network.Allow
	// Processes kept in the background outlive wrun, and with it the
	// observer: every call the filter sends it would then fail with ENOSYS.
	pl.seccomp.Observe = f.UserNotif && !o.NoObserve && !o.KeepBackground
	// Landlock's audit records (ABI 7) are read under the same switch.
	pl.audit = offered.Flags&llRestrictSelfLogNewExecOn != 0 && !o.NoObserve && !o.KeepBackground

	// Namespaces, wherever wrun can make them: as root directly, otherwise
	// inside a user namespace.
	pl.stage = env.stage()
	// Below Landlock ABI 6 abstract UNIX sockets are not scoped: with the
	// network off, a network namespace of its own holds them.
	pl.netNS = pl.stage && !p.Network.Allow && !p.IPC.AbstractUnixOutside && pl.attr.scoped&llScopeAbstractUnix == 0
	pl.viaUserNS = pl.stage && !f.MountNS
	pl.planUnix(f, offered)
	pl.seccomp.IsolatedIPC = pl.stage
	// Without Landlock, links and FIFOs are kept out of the places later
	// unsandboxed runs write into by refusing them everywhere.
	pl.seccomp.DenyPlant = pl.ABI == 0 && plainRules(p.Rules)
	if !pl.stage {
		pl.Notes = append(pl.Notes, "no namespaces (wrun lacks CAP_SYS_ADMIN and user namespaces are unavailable): SysV IPC and POSIX message queues are refused, but metadata outside the write scope is not restricted (chmod, utimes), and the child shares wrun's PID namespace: it sees every process in /proc, may signal the thread of wrun it was started from (ending wrun before its checks after the run), and processes it starts may survive a wrun killed with SIGKILL")
	}

	// Hidden paths: covered by a mask in the stage's view where one can
	// cover them, otherwise carved out of the rules.
	var holes []policy.Hole
	for _, h := range p.Hidden {
		if pl.stage && maskable(h, p.Rules) {
			pl.Masks = append(pl.Masks, h)
			continue
		}
		holes = append(holes, h)
	}
	pl.Masks = outermost(pl.Masks)
	// Paths that must stay unwritable inside writable trees.
	for _, pr := range p.Protected {
		switch {
		case !pr.Exists && pr.Create == policy.CreateNone:
			pl.Sweep = append(pl.Sweep, pr)
		case pl.stage:
			pl.Mounts = append(pl.Mounts, pr)
		case pr.Pin:
			// Carving the config and hooks holes beneath it already takes
			// every create and remove right from the gitdir's parent, so
			// the gitdir cannot be renamed or replaced.
		default:
			holes = append(holes, policy.Hole{Path: pr.Path, Withheld: policy.Write, Why: pr.Why})
		}
		if pr.Create != policy.CreateNone {
			pl.Create = append(pl.Create, creation{Path: pr.Path, Dir: pr.Create == policy.CreateDir, Beneath: pr.Within})
		}
	}
	sort.Slice(pl.Mounts, func(i, j int) bool { return pl.Mounts[i].Path < pl.Mounts[j].Path })
	switch {
	case len(pl.Mounts) > 0 && pl.viaUserNS:
		pl.Protection = "read-only bind mounts in a private mount namespace (inside a user namespace)"
	case len(pl.Mounts) > 0:
		pl.Protection = "read-only bind mounts in a private mount namespace"
	case len(p.Protected) > len(pl.Sweep):
		pl.Protection = "carved Landlock rules (no mount namespace: wrun lacks CAP_SYS_ADMIN and user namespaces are unavailable)"
		pl.Notes = append(pl.Notes, "protected paths are enforced by carved rules: new entries cannot be created directly in a directory that holds a protected path (the workspace root, .git)")
	}
	if len(pl.Sweep) > 0 {
		pl.Notes = append(pl.Notes, "paths that must not appear (listed as protected, absent) are checked after the run and removed if the child created them")
	}

	for _, r := range p.Rules {
		if r.Create != policy.CreateNone {
			pl.Create = append(pl.Create, creation{Path: r.Path, Dir: r.Create == policy.CreateDir, Beneath: r.Beneath})
		}
	}
	if pl.stage && pl.ABI == 0 {
		// No Landlock to carve the hidden directories that rules reach
		// into: the stage covers them with views (holeViews).
		pl.Views, holes = holeViews(holes, p.Rules), nil
	}
	rules, notes := policy.Carve(p.Rules, holes, policy.OSLister)
	pl.Rules = rules
	pl.Notes = append(pl.Notes, notes...)

	// The support matrix decides: what nothing on this machine holds
	// refuses the run, or with --best-effort degrades it.
	need := Need{CreateBeside: len(p.Protected) > len(pl.Sweep)+len(pl.Mounts) && p.Grant.Files == grant.FilesWrite}
	pl.env, pl.need = env, need
	for _, r := range env.Refusals(p.Grant, need) {
		pl.Gaps = append(pl.Gaps, sandbox.Gap{What: r.Protection.What, Consequence: "nothing holds it here: " + env.Name(),
			Need: r.Why, Essential: true})
	}
	if rem := env.Remedy(); rem != "" && !env.Nested && env.MountAPI && len(pl.Gaps) > 0 && pl.Gaps[len(pl.Gaps)-1].Essential {
		pl.Gaps = append(pl.Gaps, sandbox.Gap{What: "the stage (the namespaces that would hold these)", Need: "user namespaces: " + rem,
			Consequence: env.whyNoStage(), Essential: true})
	}
	var essential bool
	for _, g := range pl.Gaps {
		essential = essential || g.Essential
	}
	if essential {
		if !o.BestEffort {
			return pl, &sandbox.UnenforceableError{Gaps: pl.Gaps}
		}
		pl.Degraded = true
	}
	return pl, nil
}

// fsRules turns the plan's rules into Landlock rules.
func (pl *Plan) fsRules() []fsRule {
	out := make([]fsRule, 0, len(pl.Rules))
	for _, r := range pl.Rules {
		out = append(out, fsRule{Path: r.Path, Access: toLandlock(r.Access), Optional: r.Optional, NoFollow: r.NoFollow, Beneath: r.Beneath})
	}
	return out
}

// Summary says in one line what enforces the policy.
func (pl *Plan) Summary() string {
	var parts []string
	if pl.ABI > 0 {
		parts = append(parts, fmt.Sprintf("Landlock ABI %d", pl.ABI))
	}
	if pl.Features.Seccomp {
		parts = append(parts, "seccomp filter")
	}
	switch {
	case pl.stage && pl.viaUserNS:
		parts = append(parts, "the stage: PID, IPC and mount namespaces in a user namespace (a read-only view, writable paths bound back, hidden paths masked)")
	case pl.stage:
		parts = append(parts, "the stage: PID, IPC and mount namespaces (a read-only view, writable paths bound back, hidden paths masked)")
	default:
		parts = append(parts, "no namespaces (SysV and POSIX IPC refused; see the notes)")
	}
	if pl.DropCaps {
		parts = append(parts, "root capabilities dropped")
	}
	s := strings.Join(parts, " + ")
	if pl.Degraded {
		s = "DEGRADED: " + s
	}
	return s
}

// maskable reports whether the stage can hide h with a mask: no rule lies
// at or beneath it (policy.Maskable), and it exists, is no symbolic link
// and is reached without one, so the mask lands on what the policy names.
// A hole that is missing or reached through a link is carved (its target
// has a hole of its own, policy.resolveHoles), and so is one in /proc.
func maskable(h policy.Hole, rules []policy.Rule) bool {
	if !policy.Maskable(h, rules) || h.Path == "/" || !filepath.IsAbs(h.Path) || filepath.Clean(h.Path) != h.Path {
		return false
	}
	if policy.Within(h.Path, "/proc") {
		return false // the stage mounts a /proc of its own after the masks
	}
	fi, err := os.Lstat(h.Path)
	if err != nil || fi.Mode()&os.ModeSymlink != 0 {
		return false
	}
	dir := filepath.Dir(h.Path)
	real, err := filepath.EvalSymlinks(dir)
	return err == nil && real == dir
}

// outermost sorts holes by path and drops those inside another: a mask
// hides everything beneath it.
func outermost(holes []policy.Hole) []policy.Hole {
	sort.Slice(holes, func(i, j int) bool { return holes[i].Path < holes[j].Path })
	var out []policy.Hole
	for _, h := range holes {
		if n := len(out); n > 0 && policy.Within(h.Path, out[n-1].Path) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// maskPaths are the paths of the plan's masks, for the stage.
func (pl *Plan) maskPaths() []string {
	out := make([]string, len(pl.Masks))
	for i, h := range pl.Masks {
		out[i] = h.Path
	}
	return out
}

// holeViews are the views that hide, without Landlock, the hidden
// directories rules reach into: each existing directory among holes that
// a rule lies beneath, keeping those rules and the views inside it, deepest
// first so that a view is made before the one that keeps it. A hole that
// is missing, no directory or reached through a symbolic link gets none
// (its target, where it has one, is a hole of its own).
func holeViews(holes []policy.Hole, rules []policy.Rule) []holeView {
	var paths []string
	for _, h := range holes {
		if policy.Maskable(h, rules) || !filepath.IsAbs(h.Path) || filepath.Clean(h.Path) != h.Path || h.Path == "/" {
			continue
		}
		if fi, err := os.Lstat(h.Path); err != nil || !fi.IsDir() {
			continue
		}
		if real, err := filepath.EvalSymlinks(h.Path); err != nil || real != h.Path {
			continue
		}
		if !slices.Contains(paths, h.Path) {
			paths = append(paths, h.Path)
		}
	}
	// Deepest first.
	sort.Slice(paths, func(i, j int) bool {
		if di, dj := strings.Count(paths[i], "/"), strings.Count(paths[j], "/"); di != dj {
			return di > dj
		}
		return paths[i] < paths[j]
	})
	var views []holeView
	for _, p := range paths {
		var keep []fsRule
		for _, r := range rules {
			if r.Path != p && policy.Within(r.Path, p) {
				keep = append(keep, fsRule{Path: r.Path, Access: toLandlock(r.Access), Optional: r.Optional, NoFollow: r.NoFollow, Beneath: r.Beneath})
			}
		}
		for _, v := range views {
			if v.Path != p && policy.Within(v.Path, p) {
				keep = append(keep, fsRule{Path: v.Path, NoFollow: true})
			}
		}
		sort.Slice(keep, func(i, j int) bool { return keep[i].Path < keep[j].Path })
		var kept []fsRule
		for _, k := range keep {
			if n := len(kept); n > 0 && policy.Within(k.Path, kept[n-1].Path) {
				if k.Path == kept[n-1].Path {
					kept[n-1].Optional = kept[n-1].Optional && k.Optional
				}
				continue
			}
			kept = append(kept, k)
		}
		views = append(views, holeView{Path: p, Keep: kept})
	}
	return views
}

// plainRules reports whether a rule lets the child create files in a
// place but not plant symbolic links or FIFOs there (policy.ReadWritePlain)
// and no rule above it allows them.
func plainRules(rules []policy.Rule) bool {
	const plant = policy.MakeSym | policy.MakeFifo
	for _, r := range rules {
		if r.Access&policy.MakeReg == 0 || r.Access&plant == plant {
			continue
		}
		if !slices.ContainsFunc(rules, func(o policy.Rule) bool { return o.Access&plant == plant && policy.Within(r.Path, o.Path) }) {
			return true
		}
	}
	return false
}
