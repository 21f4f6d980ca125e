package escalate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// Protection says how the platform keeps protected paths unwritable, which
// changes what else is denied.
type Protection int

const (
	// ProtectCarved: protected paths are holes carved out of the writable
	// rules (no mount namespace; the usual case without root). A directory
	// on the way down to a protected path loses the write rights on itself,
	// so nothing new can be created directly in it (the workspace root,
	// .git).
	ProtectCarved Protection = iota
	// ProtectMounted: protected paths are read-only bind mounts in a private
	// mount namespace (wrun holds CAP_SYS_ADMIN). Only the paths themselves
	// are unwritable, and their metadata cannot change either.
	ProtectMounted
)

// Facts are what the analysis needs besides the policy: facts about the
// invocation and the platform. The zero value is usable: it assumes carved
// protection, an unknown home and environment, every path existing, and
// the default ceiling.
type Facts struct {
	// Home is the invoking user's home directory (policy.Host.Home).
	Home string
	// Env is the invoking environment (policy.Host.Env), not the child's:
	// it locates the user's tool caches (CARGO_HOME, GOCACHE, GOMODCACHE,
	// XDG_CACHE_HOME) and tells whether this wrun is nested (WRUN_GRANT).
	Env []string
	// Protection says how protected paths are enforced on this platform.
	Protection Protection
	// UnixConfined is set when the kernel confines connecting to pathname
	// UNIX sockets (Landlock ABI 9). Without it, desktop=off refuses to
	// create AF_UNIX sockets at all.
	UnixConfined bool
	// Ceiling bounds every alternative; nil means the default ceiling,
	// grant.Ceiling() (see run.Resolve).
	Ceiling *Ceiling
	// VerifyScope is what shell=verify would make writable in this
	// workspace (verify.Compute), so a denial under a narrower shell can
	// name shell=verify. Nil when unknown.
	VerifyScope []verify.Path
	// Argv is the command being run; routes rewrite it ("cargo test
	// --offline").
	Argv []string
	// Exists reports whether a path exists (os.Lstat succeeds). It picks
	// an existing path for --allow-write (wrun refuses a missing one), the
	// repository whose config a new writable root would carve around, and
	// whether a refused write in the output was to an existing file or a
	// new one. Nil assumes every path exists.
	Exists func(path string) bool
}

// hole is a path whose rights are withheld from the rules above it.
type hole struct {
	policy.Hole
	protected bool // from policy.Protected rather than policy.Hidden
}

// model is the access model: what the kernel will allow, computed from
// allow rules, carved holes, read-only mounts and pinned directories.
type model struct {
	rules        []policy.Rule
	holes        []hole
	readOnly     []policy.Protected // read-only mounts
	pins         []policy.Protected // directories that cannot be renamed or removed
	network      policy.Network
	ipc          policy.IPC
	unixConfined bool
}

// newModel builds the access model of p, as the platform enforces it.
func newModel(p *policy.Policy, prot Protection, unixConfined bool) *model {
	m := &model{rules: slices.Clone(p.Rules), network: p.Network, ipc: p.IPC, unixConfined: unixConfined}
	for _, h := range p.Hidden {
		m.holes = append(m.holes, hole{Hole: h})
	}
	for _, pr := range p.Protected {
		if !pr.Exists && pr.Create == policy.CreateNone {
			continue // swept after the run: nothing stops its creation
		}
		switch {
		case pr.Pin:
			// Carved, the holes beneath a pinned directory already take
			// the rights to remove or replace it from its parent.
			if prot == ProtectMounted {
				m.pins = append(m.pins, pr)
			}
		case prot == ProtectMounted:
			m.readOnly = append(m.readOnly, pr)
		default:
			m.holes = append(m.holes, hole{Hole: policy.Hole{Path: pr.Path, Withheld: policy.Write, Why: pr.Why}, protected: true})
		}
	}
	return m
}

// with returns a copy of m with extra rules and holes.
func (m *model) with(rules []policy.Rule, holes []hole) *model {
	c := *m
	c.rules = append(slices.Clone(m.rules), rules...)
	c.holes = append(slices.Clone(m.holes), holes...)
	return &c
}

// rights returns what the kernel allows on path. It mirrors policy.Carve:
// a rule grants its rights on its path and beneath; a hole at or below the
// rule's path withholds its rights from itself and everything beneath it,
// and from each directory on the way down to it (those directories keep
// only what no hole beneath them withholds); a rule inside a hole is an
// explicit grant that the hole does not narrow. Carve enumerates the
// siblings of the holes when the plan is made; this model assumes they
// existed then (an entry created later in a carved directory gets only the
// directory's narrowed rights, and the child cannot create one there).
func (m *model) rights(path string) policy.Access {
	var acc policy.Access
	for _, r := range m.rules {
		if !policy.Within(path, r.Path) {
			continue
		}
		got := r.Access
		for _, h := range m.holes {
			if h.Withheld&r.Access == 0 || !policy.Within(h.Path, r.Path) {
				continue
			}
			if policy.Within(path, h.Path) || policy.Within(h.Path, path) {
				got &^= h.Withheld
			}
		}
		acc |= got
	}
	return acc
}

// baseRights is what the rules alone grant on path, before any hole.
func (m *model) baseRights(path string) policy.Access {
	var acc policy.Access
	for _, r := range m.rules {
		if policy.Within(path, r.Path) {
			acc |= r.Access
		}
	}
	return acc
}

func (m *model) readOnlyAt(path string) *policy.Protected {
	for i := range m.readOnly {
		if policy.Within(path, m.readOnly[i].Path) {
			return &m.readOnly[i]
		}
	}
	return nil
}

func (m *model) pinAt(path string) *policy.Protected {
	for i := range m.pins {
		if m.pins[i].Path == path {
			return &m.pins[i]
		}
	}
	return nil
}

// check returns what op lacks; nil means the kernel allows it.
func (m *model) check(op Op) []Missing {
	var out []Missing
	// need records that want is required on at (the entry's parent for
	// directory rights, the entry itself otherwise), reporting path.
	need := func(path, at string, want policy.Access) {
		if want == 0 {
			return
		}
		miss := want &^ m.rights(at)
		reason := ""
		if want&writeRights != 0 {
			if pr := m.readOnlyAt(at); pr != nil {
				miss |= want & writeRights
				reason = "read-only mount"
			}
		}
		if miss != 0 {
			out = append(out, Missing{Path: path, Right: miss.String(), Access: miss, Reason: reason})
		}
	}
	removeRight := func(dir bool) policy.Access {
		if dir {
			return policy.RemoveDir
		}
		return policy.RemoveFile
	}
	makeRight := func(dir bool) policy.Access {
		if dir {
			return policy.MakeDir
		}
		return policy.MakeReg
	}
	// A mount point cannot be removed or replaced (EBUSY).
	pinned := func(path string, dir bool) {
		if m.pinAt(path) != nil || m.readOnlyAt(path) != nil && m.readOnlyAt(path).Path == path {
			right := removeRight(dir || m.pinAt(path) != nil)
			out = append(out, Missing{Path: path, Right: right.String(), Access: right, Reason: "mount point"})
		}
	}
	parent := filepath.Dir
	switch op.Kind {
	case OpOpen:
		want := op.Rights & policy.FileRights
		if want == 0 {
			want = policy.ReadFile
		}
		if op.Dir && want&policy.ReadFile != 0 {
			want = want&^policy.ReadFile | policy.ReadDir
		}
		need(op.Path, op.Path, want)
	case OpCreate:
		want := op.Rights & policy.FileRights
		if want == 0 {
			want = policy.WriteFile
		}
		// Landlock refuses the creation before the open: a file that
		// cannot be made is not also reported as unwritable.
		need(op.Path, parent(op.Path), policy.MakeReg)
		if len(out) == 0 {
			need(op.Path, op.Path, want)
		}
	case OpMkdir:
		need(op.Path, parent(op.Path), policy.MakeDir)
	case OpMknod:
		want := op.Rights & (policy.MakeReg | policy.MakeChar | policy.MakeBlock | policy.MakeFifo | policy.MakeSock)
		if want == 0 {
			want = policy.MakeReg
		}
		need(op.Path, parent(op.Path), want)
	case OpSymlink:
		need(op.Path, parent(op.Path), policy.MakeSym)
	case OpUnlink, OpRmdir:
		dir := op.Dir || op.Kind == OpRmdir
		pinned(op.Path, dir)
		need(op.Path, parent(op.Path), removeRight(dir))
	case OpTrunc:
		need(op.Path, op.Path, policy.Truncate)
	case OpExec:
		need(op.Path, op.Path, policy.Execute)
	case OpRename, OpLink:
		src, dst := op.Path, op.Dest
		if op.Kind == OpRename {
			pinned(src, op.Dir)
			need(src, parent(src), removeRight(op.Dir))
		}
		if op.Replace {
			pinned(dst, op.Dir)
			need(dst, parent(dst), removeRight(op.Dir))
		}
		need(dst, parent(dst), makeRight(op.Dir))
		if parent(src) != parent(dst) {
			need(src, parent(src), policy.Refer)
			need(dst, parent(dst), policy.Refer)
			// Landlock refuses (EXDEV) a move that would give the moved
			// entry rights it does not have where it is.
			mask := policy.FileRights
			if op.Dir {
				mask = policy.All &^ policy.Refer
			}
			if gain := m.rights(dst) &^ m.rights(src) & mask; gain != 0 && len(out) == 0 {
				out = append(out, Missing{Path: dst, Right: policy.Refer.String(), Access: policy.Refer, Reason: "would gain rights (" + gain.String() + ")"})
			}
		}
	case OpChmod, OpChown, OpUtime, OpXattr:
		if m.readOnlyAt(op.Path) != nil {
			out = append(out, Missing{Path: op.Path, Right: RightMetadata, Reason: "read-only mount"})
		}
	case OpConnect, OpBind:
		out = append(out, m.checkSocket(op)...)
	case OpSocket:
		family := strings.ToLower(op.Addr)
		switch {
		case family == "unix" || family == "local":
			if !m.ipc.PathUnixOutside && !m.unixConfined {
				out = append(out, Missing{Addr: op.Addr, Right: RightSocketUnix})
			}
		case !m.network.Allow:
			out = append(out, Missing{Addr: op.Addr, Right: RightSocketInet})
		}
	}
	return out
}

func (m *model) checkSocket(op Op) []Missing {
	addr := op.Addr
	switch {
	case strings.HasPrefix(addr, "unix:@"):
		if op.Kind == OpConnect && !m.ipc.AbstractUnixOutside {
			return []Missing{{Addr: addr, Right: RightConnectAbstract}}
		}
	case strings.HasPrefix(addr, "unix:"):
		path := strings.TrimPrefix(addr, "unix:")
		if !m.ipc.PathUnixOutside && !m.unixConfined {
			return []Missing{{Addr: addr, Right: RightSocketUnix}}
		}
		if op.Kind == OpBind {
			return m.check(Op{Kind: OpMknod, Path: path, Rights: policy.MakeSock})
		}
		if !m.ipc.PathUnixOutside {
			return []Missing{{Addr: addr, Right: RightConnectUnix}}
		}
	case strings.HasPrefix(addr, "udp:"):
		if !m.network.Allow {
			return []Missing{{Addr: addr, Right: RightSocketInet}}
		}
	default:
		if !m.network.Allow {
			right := RightConnectTCP
			if op.Kind == OpBind {
				right = RightBindTCP
			}
			return []Missing{{Addr: strings.TrimPrefix(addr, "tcp:"), Right: right}}
		}
	}
	return nil
}

// Analyzer answers questions about denials under one policy: whether the
// kernel denies an operation, why, and what to do instead. It is safe for
// concurrent use; nothing in it changes after New.
type Analyzer struct {
	p       *policy.Policy
	facts   Facts
	model   *model
	ceiling Ceiling
	nested  bool
	caches  []toolCache
	cat     *catalogue
	getenv  func(string) string
}

// New returns an Analyzer for policy p. It fails only if the embedded
// catalogue of alternatives is broken.
func New(p *policy.Policy, f Facts) (*Analyzer, error) {
	if p == nil {
		return nil, fmt.Errorf("escalate: nil policy")
	}
	cat, err := loadCatalogue()
	if err != nil {
		return nil, err
	}
	a := &Analyzer{p: p, facts: f, model: newModel(p, f.Protection, f.UnixConfined), cat: cat}
	a.getenv = func(name string) string {
		v, _ := lookupEnv(f.Env, name)
		return v
	}
	if f.Ceiling != nil {
		a.ceiling = *f.Ceiling
	} else {
		a.ceiling = Ceiling{Grant: grant.Ceiling(), Source: CeilingDefault}
	}
	parent, _ := lookupEnv(f.Env, EnvGrant)
	a.nested = parent != ""
	a.caches = toolCaches(p.Workdir, f.Home, a.getenv)
	return a, nil
}

func (a *Analyzer) argv() []string { return a.facts.Argv }

// Check returns the rights op lacks under the policy, one Missing per path
// and cause; nil means the kernel allows it. The observer calls it for
// every mutating call it sees and records a denial for each Missing (see
// Op.Denials); it never decides anything itself.
func (a *Analyzer) Check(op Op) []Missing { return a.model.check(op) }

// WouldDeny reports whether the kernel will deny op under the policy.
func (a *Analyzer) WouldDeny(op Op) bool { return len(a.model.check(op)) > 0 }

// Rights returns the file system rights the policy leaves on path.
func (a *Analyzer) Rights(path string) policy.Access { return a.model.rights(filepath.Clean(path)) }

// WouldDeny reports whether the kernel will deny op under p, assuming
// carved protection and a kernel without pathname UNIX socket confinement
// (the usual case); use New with Facts to say otherwise.
func WouldDeny(p *policy.Policy, op Op) bool {
	return len(newModel(p, ProtectCarved, false).check(op)) > 0
}

func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}
