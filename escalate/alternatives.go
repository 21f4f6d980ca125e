package escalate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Alternative is one concrete thing to do instead of what was denied.
type Alternative struct {
	// ID names the alternative for an approver: the catalogue id, prefixed
	// in a request with the denial's id ("d1.allow-write").
	ID string `json:"id"`
	// Kind is one of KindRoute, KindAllowWrite, KindGrant, KindAskParent,
	// KindBeyondCeiling.
	Kind string `json:"kind"`
	// Description says it in plain words.
	Description string `json:"description"`
	// Try is the few words of it that the one-line summary shows.
	Try string `json:"try"`
	// Widen is what it widens (zero for routes and ask-parent, and kept
	// for one beyond the ceiling): approval reads it, never Args.
	Widen Widen `json:"-"`
	// Args are the exact wrun flags a retry adds for it, Widen rendered
	// (Widen.Args): ["--allow-write", PATH] or ["--grant", SPEC] (which
	// replaces the run's --grant). Empty for routes and ask-parent.
	Args []string `json:"args"`
	// Commands are, for a route, the wrun command lines to run instead, in
	// order.
	Commands [][]string `json:"commands,omitempty"`
	// Grant is the grant the alternative runs under: the widened grant, or
	// for a route the grant of its first command.
	Grant string `json:"grant"`
	// WithinCeiling is false when the ceiling forbids the alternative; it is
	// then of kind KindBeyondCeiling and Exceeds says why.
	WithinCeiling bool     `json:"within_ceiling"`
	Exceeds       []string `json:"exceeds,omitempty"`
}

// Alternatives lists what to do instead of d, from the narrowest: routes
// that widen nothing, one extra path, a grant field change, asking the
// parent. Each is checked against the ceiling; one beyond it is kept as
// KindBeyondCeiling, naming the ceiling. Widenings are offered only when
// the access model says they would allow what was denied, and never for a
// protected or hidden path.
func (a *Analyzer) Alternatives(d sandbox.Denial) []Alternative {
	return a.alternatives(a.find(d))
}

func (a *Analyzer) alternatives(f finding) []Alternative {
	var out []Alternative
	for i := range alternatives {
		def := &alternatives[i]
		if !slices.Contains(def.Rules, f.by.Rule) && !slices.Contains(def.Rules, "*") {
			continue
		}
		if alt, ok := a.alternative(f, def); ok {
			out = append(out, alt)
		}
	}
	slices.SortStableFunc(out, func(x, y Alternative) int { return rankOf(x) - rankOf(y) })
	return out
}

func rankOf(alt Alternative) int {
	if alt.Kind == KindBeyondCeiling {
		// Keep it where the widening it replaces would stand.
		if k := alt.Widen.Kind; k != "" && k != KindGrant {
			return kindRank(k)
		}
		if len(alt.Commands) > 0 {
			return kindRank(KindRoute)
		}
		return kindRank(KindGrant)
	}
	return kindRank(alt.Kind)
}

// alternative instantiates def for f, or reports that it does not apply.
func (a *Analyzer) alternative(f finding, def *altDef) (Alternative, bool) {
	if !a.applies(f, def) {
		return Alternative{}, false
	}
	if f.stays != "" && def.Kind != KindAskParent && def.Kind != KindAllowRead {
		// The policy would protect or hide it under any grant: the act
		// itself is never allowed, and only the parent can do it.
		return Alternative{}, false
	}
	x := a.expander(f, def)
	alt := Alternative{ID: def.ID, Kind: def.Kind, Grant: a.p.Grant.String(), WithinCeiling: true}
	equivalent := a.p.Grant // the grant whose authority the alternative needs
	switch def.Kind {
	case KindAllowWrite:
		target := a.allowTarget(f, def)
		if target == "" || guardRefusal(target, a.guarded) != "" || !a.resolves(f, []policy.Rule{{Path: target, Access: policy.ReadWrite}}) {
			return Alternative{}, false
		}
		x.target = target
		alt.Widen = Widen{Kind: KindAllowWrite, Path: target}
	case KindAllowRead:
		// The path whose read was refused, exactly: a grant of exactly a
		// hidden path opens it, one inside a hidden directory opens just
		// itself. Never for a write, nor the home directory or / whole.
		target := filepath.Clean(f.d.Path)
		if f.acc&access.WriteRights != 0 || f.d.Path == "" || !filepath.IsAbs(target) || target == "/" || target == a.facts.Home || !a.exists(target) {
			return Alternative{}, false
		}
		x.target = target
		alt.Widen = Widen{Kind: KindAllowRead, Path: target}
	case KindAllowUnix:
		// The socket wrun refused, as it resolved it: one path.
		target := filepath.Clean(f.d.Path)
		if f.d.Path == "" || !filepath.IsAbs(target) {
			return Alternative{}, false
		}
		x.target = target
		alt.Widen = Widen{Kind: KindAllowUnix, Path: target}
	case KindAllowHost:
		// The address wrun refused, when it is a loopback one: the host's
		// own service at that port, and nothing else; or the host and port
		// wrun's proxy refused.
		h, err := grant.ParseHost(strings.TrimPrefix(f.d.Addr, "udp:"))
		if f.d.Op == access.OpBind || err != nil || h.Port == 0 || !h.Loopback() && f.d.Right != RightConnectHost {
			return Alternative{}, false
		}
		x.target = h.String()
		alt.Widen = Widen{Kind: KindAllowHost, Host: h}
	case KindGrant:
		if !a.resolves(f, a.grantRules(x.newGrant)) {
			return Alternative{}, false
		}
		if x.newGrant.Files == grant.FilesWrite && a.p.Grant.Files < grant.FilesWrite && guardRefusal(a.p.Workdir, nil) != "" {
			return Alternative{}, false // the workspace is a system start-up location
		}
		alt.Widen = Widen{Kind: KindGrant, Grant: x.newGrant}
		alt.Grant = x.newGrant.String()
	case KindRoute:
		alt.Grant = x.routeGrant.String()
		equivalent = x.routeGrant
		for _, cmd := range def.Commands {
			alt.Commands = append(alt.Commands, a.carry(x.tokens(cmd)))
		}
	}
	alt.Args = alt.Widen.Args()
	if alt.Widen.Kind != "" {
		equivalent = alt.Widen.needs(a.p.Grant, a.p.Workdir)
	}
	alt.Description = x.text(def.Description)
	alt.Try = x.text(def.Try)
	if def.Kind == KindAskParent && f.stays != "" {
		alt.Description += "; no grant would make it writable: " + f.stays
	}
	if def.Kind == KindAskParent && a.nested {
		alt.Description += " (this wrun runs inside another: only the enclosing run can widen what its sandbox allows)"
	}
	if ex := a.exceeds(equivalent, alt); len(ex) > 0 {
		alt.Kind = KindBeyondCeiling
		alt.WithinCeiling = false
		alt.Exceeds = ex
		alt.Description = fmt.Sprintf("not offered: %s, but %s; the ceiling is %s", alt.Description, strings.Join(ex, "; "), a.ceiling)
		alt.Try = ""
	}
	return alt, true
}

// exceeds says how an alternative needing authority g goes beyond the
// ceiling: only the fields it changes count (a route under the run's own
// grant or asking the parent widens nothing). An extra path is bounded
// through the field it widens: a path in the workspace needs files=write
// in the ceiling, one outside it shell=full.
func (a *Analyzer) exceeds(g grant.Grant, alt Alternative) []string {
	ex := widening(a.p.Grant, g, a.ceiling.Grant)
	if alt.Kind == KindAllowWrite && len(ex) > 0 {
		ex = []string{fmt.Sprintf("--allow-write %s counts as a widening to %s: %s", quote.Word(alt.Widen.Path), g.Compact(), strings.Join(ex, "; "))}
	}
	if alt.Kind == KindAllowWrite && !a.ceiling.Bound().WriteAllowed(alt.Widen.Path) {
		ex = append(ex, outsideCeilingPaths(alt.Widen.Path, a.ceiling))
	}
	return ex
}

// widening lists, in words, each field in which g widens cur beyond
// ceiling; fields g leaves as cur has them are not checked.
func widening(cur, g, ceiling grant.Grant) []string {
	d := ceiling
	if g.Files != cur.Files {
		d.Files = g.Files
	}
	if g.Shell != cur.Shell {
		d.Shell = g.Shell
	}
	if g.Network != cur.Network {
		d.Network = g.Network
	}
	if g.Desktop != cur.Desktop {
		d.Desktop = g.Desktop
	}
	return d.Exceeds(ceiling)
}

// applies evaluates def's conditions for f.
func (a *Analyzer) applies(f finding, def *altDef) bool {
	w := def.When
	cmd := ""
	if argv := a.argv(); len(argv) > 0 {
		cmd = filepath.Base(argv[0])
	}
	if len(w.Command) > 0 && !slices.Contains(w.Command, cmd) {
		return false
	}
	if slices.Contains(w.NotCommand, cmd) {
		return false
	}
	// The denied process; when unknown, the command's.
	prog := filepath.Base(f.d.Program)
	if f.d.Program == "" {
		prog = cmd
	}
	if len(w.Program) > 0 && !slices.Contains(w.Program, prog) {
		return false
	}
	if slices.Contains(w.NotProgram, prog) {
		return false
	}
	if len(w.Tool) > 0 && (f.cache == nil || !slices.Contains(w.Tool, f.cache.Tool)) {
		return false
	}
	if len(w.Base) > 0 && !slices.Contains(w.Base, filepath.Base(f.path)) {
		return false
	}
	for _, c := range w.If {
		switch c {
		case "full-covers":
			if !a.fullCovers(f.path) {
				return false
			}
		case "shell-verify":
			if a.p.Grant.Shell != grant.ShellVerify {
				return false
			}
		case "exists":
			if !a.exists(f.path) {
				return false
			}
		case "missing":
			if a.facts.Exists == nil || a.facts.Exists(f.path) {
				return false
			}
		}
	}
	return true
}

func (a *Analyzer) exists(path string) bool {
	return a.facts.Exists == nil || a.facts.Exists(path)
}

// allowTarget picks the path an --allow-write alternative names: it must
// exist (wrun refuses a missing --allow-write path), and it is the
// narrowest one that allows the denied act.
func (a *Analyzer) allowTarget(f finding, def *altDef) string {
	var target string
	switch def.Path {
	case "{path}":
		target = f.path
	case "{cache_dir}":
		if f.cache == nil {
			return ""
		}
		target = cacheRoot(f.cache, f.path)
	case "{narrowest}":
		// A right on the file itself (write, truncate) needs only the
		// file; a directory right (create, remove) needs its parent.
		target = f.at
	}
	for target != "/" && !a.exists(target) {
		target = filepath.Dir(target)
	}
	if target == "/" || target == a.facts.Home {
		return "" // far too wide to offer as one extra path
	}
	return target
}

// grantRules are the writable rules g adds over the policy's grant, as far
// as this package knows them (the workspace, the verify scope, the user's
// tool caches); network and desktop changes add none.
func (a *Analyzer) grantRules(g grant.Grant) []policy.Rule {
	var out []policy.Rule
	cur := a.p.Grant
	if g.Files == grant.FilesWrite && cur.Files < grant.FilesWrite {
		out = append(out, policy.Rule{Path: a.p.Workdir, Access: policy.ReadWrite})
		for _, w := range a.facts.WriteScope {
			r := policy.Rule{Path: w.Path, Access: policy.ReadWrite}
			if !w.Dir {
				r.Access, r.Entry = policy.ReadFile|policy.WriteExisting, w.Entry
			}
			out = append(out, r)
		}
	}
	if g.Shell >= grant.ShellVerify && cur.Shell < grant.ShellVerify {
		for _, v := range a.facts.VerifyScope {
			acc := policy.ReadWrite
			if !v.Dir {
				acc = policy.ReadFile | policy.WriteExisting
			}
			out = append(out, policy.Rule{Path: v.Path, Access: acc})
		}
	}
	if g.Shell == grant.ShellFull && cur.Shell < grant.ShellFull {
		for _, c := range a.p.Caches {
			for _, f := range c.Full {
				if filepath.IsAbs(f.Path) {
					out = append(out, policy.Rule{Path: f.Path, Access: policy.ReadWrite})
				}
			}
		}
	}
	return out
}

// resolves reports whether adding rules would let f's denied act through.
// Socket denials are resolved by their field change alone; a file system
// one is checked with the access model, including the protected paths the
// new rules would bring (with carved protection they narrow the
// directories above them).
func (a *Analyzer) resolves(f finding, rules []policy.Rule) bool {
	if f.acc == 0 {
		return f.by.Field == "network" || f.by.Field == "desktop" || f.by.Rule == "workspace-hidden" || f.by.Rule == "git-push"
	}
	if f.by.Rule == "workspace-hidden" {
		return true
	}
	var holes []access.Hole
	if a.facts.Protection == access.ProtectCarved && a.facts.Exists != nil {
		for _, r := range rules {
			holes = append(holes, a.wouldProtect(r.Path)...)
		}
	}
	m := a.model.With(rules, holes)
	if m.Rights(f.at)&f.acc != f.acc {
		return false
	}
	_, ro := m.ReadOnlyAt(f.at)
	return !ro
}

// wouldProtect lists, as holes of the access model, the protected paths
// policy would add inside a newly writable root (policy.ProtectedIn).
func (a *Analyzer) wouldProtect(root string) []access.Hole {
	var out []access.Hole
	for _, h := range policy.ProtectedIn(root, a.p.Workdir, a.facts.Home, a.exists) {
		out = append(out, access.Hole{Hole: h, Protected: true})
	}
	return out
}

// outsideCeilingPaths says that an --allow-write of path lies outside the
// ceiling's paths.
func outsideCeilingPaths(path string, c Ceiling) string {
	return fmt.Sprintf("--allow-write %s lies outside the ceiling's %s=%s", quote.Word(path), grant.BoundWriteKey, strings.Join(c.Write, ":"))
}

// carry puts the run's own flags (Facts.Flags, and RoleFlags when the
// command runs under the run's own grant) into a route command line, just
// before its "--", so that running the line reruns what wrun's own retry
// would.
func (a *Analyzer) carry(line []string) []string {
	dash := slices.Index(line, "--")
	if dash < 0 || len(a.facts.Flags)+len(a.facts.RoleFlags) == 0 {
		return line
	}
	flags := a.facts.Flags
	if dash == 3 && line[1] == "--grant" {
		if g, err := grant.Parse(line[2]); err == nil && g.Equal(a.p.Grant) {
			flags = append(slices.Clone(flags), a.facts.RoleFlags...)
		}
	}
	out := slices.Clone(line[:dash])
	out = append(out, flags...)
	return append(out, line[dash:]...)
}
