package access

import (
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/policy"
)

// Protection says how the platform keeps protected paths unwritable, which
// changes what else is denied.
type Protection int

const (
	// ProtectCarved: protected paths are holes carved out of the writable
	// rules and nothing performs calls beside them (on Linux: where wrun
	// does not mediate, as inside another wrun). A directory
	// on the way down to a protected path loses the write rights on itself,
	// so nothing new can be created directly in it (the workspace root,
	// .git).
	ProtectCarved Protection = iota
	// ProtectExact: protected paths are exactly what is refused (wrun's
	// mediation performs every create, removal, rename and link beside
	// them and refuses their names and inodes). Only the paths
	// themselves are unwritable, their metadata cannot change either, and
	// a metadata call needs the write scope (write_file on its path).
	ProtectExact
)

// Platform holds the facts about the platform that change what a policy
// allows. The zero value is the usual case on a current kernel: carved
// protection, every file system right and TCP restricted, pathname UNIX
// sockets not confinable, rights computed from the policy.
type Platform struct {
	// Protection says how protected paths are enforced.
	Protection Protection
	// Unhandled are the file system rights the kernel does not restrict
	// (Landlock restricts each right from some ABI on): they are never
	// denied. The exception is refer: Landlock refuses every move across
	// directories it cannot grant, so while it restricts any file system
	// right an unhandled refer is always missing. policy.All means the
	// file system is not restricted at all.
	Unhandled policy.Access
	// TCPUnhandled is set when the kernel does not restrict TCP connect
	// and bind (Landlock ABI < 4): with the network off, only creating a
	// socket is refused (by seccomp), not using one the child holds.
	TCPUnhandled bool
	// UnixConfined is set when the kernel confines connecting to pathname
	// UNIX sockets (Landlock ABI 9). Without it, desktop=off refuses to
	// create AF_UNIX sockets at all.
	UnixConfined bool
	// Installed, when set, are the rules as the kernel holds them: the
	// policy's rules after policy.Carve took the holes out of them (on
	// Linux, Plan.Rules). Rights then come from these alone, as the kernel
	// computes them, instead of from simulating the holes, so an entry
	// made in a carved directory after the rules were carved, a directory
	// Carve could not list and a symbolic link among the siblings get what
	// the kernel gives them. The holes still name the cause of a denial.
	Installed []policy.Rule
	// MaskHidden: hidden paths with no rule at or beneath them
	// (policy.Maskable) are withheld whole, as a mount the child could
	// neither read nor list would withhold them, rather than as carved
	// holes: everything at and beneath them is denied, listing too, and
	// the directories above them keep their rights (on Linux where wrun
	// mediates, which performs the calls in those directories).
	MaskHidden bool
	// Entries: wrun's mediation performs the calls in the directories of
	// the policy's Entry rules, so each such rule grants policy.EntryRights
	// on its directory for its one name. Without it an Entry rule is only
	// a rule on the file.
	Entries bool
}

// Hole is a path whose rights are withheld from the rules above it.
type Hole struct {
	policy.Hole
	// Protected is set for a protected path carved out of a writable rule
	// (policy.Protected), clear for a hidden path (policy.Hidden).
	Protected bool
}

// Model says what the kernel allows under one policy as one platform
// enforces it: allow rules, holes carved out of them, exactly protected
// paths (readOnly, "read-only mounts") and pinned directories, and the
// socket rules. It is safe for concurrent use;
// nothing in it changes after New.
type Model struct {
	rules        []policy.Rule
	installed    []policy.Rule
	holes        []Hole
	masked       []Hole             // hidden paths covered by a mount (Platform.MaskHidden)
	readOnly     []policy.Protected // read-only mounts
	pins         []policy.Protected // directories that cannot be renamed or removed
	network      policy.Network
	ipc          policy.IPC
	unhandled    policy.Access
	tcpUnhandled bool
	unixConfined bool
	// exact: protected paths are exact (ProtectExact).
	exact bool
	// entries are the paths of the Entry rules the platform performs
	// (Platform.Entries, entriesOn).
	entries   map[string]bool
	entriesOn bool
}

// New returns the model of p as the platform pf enforces it. A nil policy
// grants nothing.
func New(p *policy.Policy, pf Platform) *Model {
	if p == nil {
		p = &policy.Policy{}
	}
	m := &Model{
		rules: slices.Clone(p.Rules), installed: slices.Clone(pf.Installed),
		network: p.Network, ipc: p.IPC,
		unhandled: pf.Unhandled & policy.All, tcpUnhandled: pf.TCPUnhandled, unixConfined: pf.UnixConfined,
		exact: pf.Protection == ProtectExact,
	}
	m.entriesOn = pf.Entries
	m.addEntries(p.Rules)
	for _, h := range p.Hidden {
		if pf.MaskHidden && policy.Maskable(h, p.Rules) {
			h.Withheld = policy.All // a mask cannot be listed either
			m.masked = append(m.masked, Hole{Hole: h})
			continue
		}
		m.holes = append(m.holes, Hole{Hole: h})
	}
	for _, pr := range p.Protected {
		if !pr.Exists && pr.Create == policy.CreateNone {
			continue // swept after the run: nothing stops its creation
		}
		switch {
		case pr.Pin:
			// Carved, the holes beneath a pinned directory already take
			// the rights to remove or replace it from its parent.
			if pf.Protection == ProtectExact {
				m.pins = append(m.pins, pr)
			}
		case pf.Protection == ProtectExact:
			m.readOnly = append(m.readOnly, pr)
		default:
			m.holes = append(m.holes, Hole{Hole: policy.Hole{Path: pr.Path, Withheld: policy.Write, Why: pr.Why}, Protected: true})
		}
	}
	return m
}

// addEntries notes the Entry rules among rules, where the platform
// performs them.
func (m *Model) addEntries(rules []policy.Rule) {
	if !m.entriesOn {
		return
	}
	for _, r := range rules {
		if r.Entry {
			if m.entries == nil {
				m.entries = map[string]bool{}
			}
			m.entries[filepath.Clean(r.Path)] = true
		}
	}
}

// With returns the model with extra rules and holes: what a wider policy
// would allow. On a model with Platform.Installed rules the extra rules
// are taken as installed, uncarved; the extra holes then only name causes.
func (m *Model) With(rules []policy.Rule, holes []Hole) *Model {
	c := *m
	c.rules = append(slices.Clone(m.rules), rules...)
	if m.installed != nil {
		c.installed = append(slices.Clone(m.installed), rules...)
	}
	c.holes = append(slices.Clone(m.holes), holes...)
	if slices.ContainsFunc(rules, func(r policy.Rule) bool { return r.Entry }) {
		c.entries = maps.Clone(m.entries)
		c.addEntries(rules)
	}
	c.masked = slices.DeleteFunc(slices.Clone(m.masked), func(h Hole) bool {
		// A wider rule at or beneath a masked path opens it (the platform
		// would carve it instead).
		return slices.ContainsFunc(rules, func(r policy.Rule) bool { return policy.Within(r.Path, h.Path) })
	})
	for _, h := range m.masked {
		if !slices.ContainsFunc(c.masked, func(k Hole) bool { return k.Path == h.Path }) {
			c.holes = append(c.holes, h)
		}
	}
	return &c
}

// Rights returns the file system rights the kernel leaves on path: what
// the rules grant, less what the holes withhold, plus every right the
// kernel does not restrict.
func (m *Model) Rights(path string) policy.Access { return m.rights(filepath.Clean(path)) }

// Granted returns what the policy's rules alone grant on path, before any
// hole is taken out of them.
func (m *Model) Granted(path string) policy.Access {
	path = filepath.Clean(path)
	var acc policy.Access
	for _, r := range m.rules {
		if policy.Within(path, r.Path) {
			acc |= r.Access
		}
	}
	return acc
}

// Holes returns the holes: the hidden paths (masked or carved), and the
// protected paths when they are carved.
func (m *Model) Holes() []Hole { return append(slices.Clone(m.masked), m.holes...) }

// maskAt returns the masked hidden path that path (clean) lies in, if any.
func (m *Model) maskAt(path string) *Hole {
	for i := range m.masked {
		if policy.Within(path, m.masked[i].Path) {
			return &m.masked[i]
		}
	}
	return nil
}

// ReadOnlyAt returns the read-only mount path lies in, if any.
func (m *Model) ReadOnlyAt(path string) (policy.Protected, bool) {
	if pr := m.readOnlyAt(filepath.Clean(path)); pr != nil {
		return *pr, true
	}
	return policy.Protected{}, false
}

// restricts reports whether the kernel restricts any file system right.
func (m *Model) restricts() bool { return m.unhandled != policy.All }

// free is what the kernel never refuses: the rights it does not restrict,
// but refer while it restricts anything (see Platform.Unhandled).
func (m *Model) free() policy.Access {
	if !m.restricts() {
		return policy.All
	}
	return m.unhandled &^ policy.Refer
}

// rights returns what the kernel allows on path (clean).
//
// Simulated, it mirrors policy.Carve: a rule grants its rights on its path
// and beneath; a hole at or below the rule's path withholds its rights
// from itself and everything beneath it, and from each directory on the
// way down to it (those directories keep only what no hole beneath them
// withholds); a rule inside a hole is an explicit grant that the hole does
// not narrow. Carve enumerates the siblings of the holes when the plan is
// made; the simulation assumes they existed then (an entry created later
// in a carved directory gets only the directory's narrowed rights, and the
// child cannot create one there). With Platform.Installed the rules are
// already carved, and rights are simply their union.
func (m *Model) rights(path string) policy.Access {
	// A rule holds only the rights the kernel handles (refer too: a rule
	// cannot grant what the kernel does not know).
	if m.maskAt(path) != nil {
		return 0 // a mask is an empty, read-only mount of mode 000
	}
	return m.ruled(path)&^m.unhandled | m.free()
}

// ruled is the union of what the rules grant on path, less what the holes
// withhold (see rights).
func (m *Model) ruled(path string) policy.Access {
	var acc policy.Access
	if m.maskAt(path) != nil {
		return 0 // covered by a mask: no rule lies beneath it
	}
	if m.installed != nil {
		for _, r := range m.installed {
			if policy.Within(path, r.Path) {
				acc |= r.Access
			}
		}
		return acc
	}
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

func (m *Model) readOnlyAt(path string) *policy.Protected {
	for i := range m.readOnly {
		if policy.Within(path, m.readOnly[i].Path) {
			return &m.readOnly[i]
		}
	}
	return nil
}

func (m *Model) pinAt(path string) *policy.Protected {
	for i := range m.pins {
		if m.pins[i].Path == path {
			return &m.pins[i]
		}
	}
	return nil
}

// cause says what took miss, missing at (clean), away: the kernel, a hole
// at or above at, the lack of a rule, or a hole beneath it.
func (m *Model) cause(at string, miss policy.Access) Cause {
	if miss == policy.Refer && m.restricts() && m.unhandled&policy.Refer != 0 {
		return Cause{Kind: CauseKernel}
	}
	if h := m.maskAt(at); h != nil {
		return Cause{Kind: CauseHole, Path: h.Path, Why: h.Why}
	}
	for _, h := range m.holes {
		if h.Withheld&miss != 0 && policy.Within(at, h.Path) {
			return Cause{Kind: CauseHole, Path: h.Path, Why: h.Why}
		}
	}
	if m.Granted(at)&miss != miss {
		c := Cause{Kind: CauseNoRule}
		for _, r := range m.rules {
			if policy.Within(at, r.Path) && len(r.Path) >= len(c.Path) {
				c.Path, c.Why = r.Path, r.Why
			}
		}
		return c
	}
	// The rules grant it; a hole beneath at, or beneath a directory above
	// it (an entry made there after carving), took it away.
	for dir := at; ; dir = filepath.Dir(dir) {
		for _, h := range m.holes {
			if h.Withheld&miss != 0 && policy.Within(h.Path, dir) {
				return Cause{Kind: CauseCarved, Path: h.Path, Why: h.Why}
			}
		}
		if filepath.Dir(dir) == dir {
			return Cause{Kind: CauseCarved}
		}
	}
}

// Check returns what op lacks, one Missing per path and cause; nil means
// the kernel allows it.
func (m *Model) Check(op Op) []Missing {
	var out []Missing
	// need records that want is required on at (the entry's parent for
	// directory rights, the entry itself otherwise), reporting path.
	need := func(path, at string, want policy.Access) {
		if at != path && m.entries[path] && filepath.Dir(path) == at {
			// An Entry rule: its one name in the directory.
			want &^= policy.EntryRights
		}
		if want == 0 {
			return
		}
		if want&WriteRights != 0 {
			if pr := m.readOnlyAt(at); pr != nil {
				miss := want&^m.rights(at) | want&WriteRights
				out = append(out, Missing{Path: path, Right: miss.String(), Access: miss, Reason: "read-only mount",
					Cause: Cause{Kind: CauseReadOnlyMount, Path: pr.Path, Why: pr.Why}})
				return
			}
		}
		if miss := want &^ m.rights(at); miss != 0 {
			c := m.cause(at, miss)
			reason := ""
			if c.Kind == CauseKernel {
				reason = "the kernel cannot grant refer"
			}
			out = append(out, Missing{Path: path, Right: miss.String(), Access: miss, Reason: reason, Cause: c})
		}
	}
	removeRight := func(dir bool) policy.Access {
		if dir {
			return policy.RemoveDir
		}
		return policy.RemoveFile
	}
	// A mount point cannot be removed or replaced (EBUSY).
	pinned := func(path string, dir bool) {
		pr := m.pinAt(path)
		if pr == nil {
			if ro := m.readOnlyAt(path); ro != nil && ro.Path == path {
				pr = ro
			}
		} else {
			dir = true
		}
		if pr != nil {
			right := removeRight(dir)
			out = append(out, Missing{Path: path, Right: right.String(), Access: right, Reason: "mount point",
				Cause: Cause{Kind: CauseMountPoint, Path: pr.Path, Why: pr.Why}})
		} else if h := m.maskAt(path); h != nil && h.Path == path {
			// A mask is a mount point too; a hidden path keeps its cause.
			right := removeRight(dir)
			out = append(out, Missing{Path: path, Right: right.String(), Access: right, Reason: "mount point",
				Cause: Cause{Kind: CauseHole, Path: h.Path, Why: h.Why}})
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
		m.checkMove(op, need, pinned, removeRight)
		if len(out) == 0 {
			out = append(out, m.checkGain(op)...)
		}
	case OpChmod, OpChown, OpUtime, OpXattr:
		if pr := m.readOnlyAt(op.Path); pr != nil {
			out = append(out, Missing{Path: op.Path, Right: RightMetadata, Reason: "read-only mount",
				Cause: Cause{Kind: CauseReadOnlyMount, Path: pr.Path, Why: pr.Why}})
		} else if m.exact && m.rights(op.Path)&policy.WriteFile == 0 {
			// The mediation changes metadata only inside the write scope.
			c := m.cause(op.Path, policy.WriteFile)
			out = append(out, Missing{Path: op.Path, Right: RightMetadata, Access: policy.WriteFile, Cause: c})
		}
	case OpConnect, OpBind:
		out = append(out, m.checkSocket(op)...)
	case OpSocket:
		family := strings.ToLower(op.Addr)
		switch {
		case family == "unix" || family == "local":
			if !m.ipc.PathUnixOutside && !m.unixConfined {
				out = append(out, Missing{Addr: op.Addr, Right: RightSocketUnix, Cause: Cause{Kind: CauseIPC}})
			}
		case m.network.Loopback && ipFamily(family):
		case !m.network.Allow:
			out = append(out, Missing{Addr: op.Addr, Right: RightSocketInet, Cause: Cause{Kind: CauseNetwork}})
		}
	}
	return out
}

// checkMove checks the rights a rename or link needs, as Landlock does:
// removing the source (rename) and a replaced destination, making the
// node at the destination, and refer on both directories when they differ.
func (m *Model) checkMove(op Op, need func(path, at string, want policy.Access), pinned func(string, bool), removeRight func(bool) policy.Access) {
	src, dst := op.Path, op.Dest
	node := op.Rights & nodeRights
	dir := op.Dir || node == policy.MakeDir
	if node == 0 {
		node = policy.MakeReg
		if dir {
			node = policy.MakeDir
		}
	}
	parent := filepath.Dir
	if op.Kind == OpRename {
		pinned(src, dir)
		need(src, parent(src), removeRight(dir))
	}
	if op.Replace {
		pinned(dst, dir)
		need(dst, parent(dst), removeRight(dir))
	}
	need(dst, parent(dst), node)
	if parent(src) != parent(dst) {
		need(src, parent(src), policy.Refer)
		need(dst, parent(dst), policy.Refer)
	}
}

// checkGain refuses a move across directories that would give the moved
// entry rights it does not have where it is (Landlock: EXDEV). The entry
// keeps the rules on itself and gets those of its new directory, not those
// of an entry it replaces; only file rights count for a non-directory.
func (m *Model) checkGain(op Op) []Missing {
	src, dst := op.Path, op.Dest
	if filepath.Dir(src) == filepath.Dir(dst) && !m.entries[dst] {
		return nil
	}
	// (Within one directory an entry can gain only what an Entry rule
	// gives its name: a hard link of another branch's ref as the lock
	// file would make that ref writable.)
	mask := policy.FileRights
	if op.Dir || op.Rights&nodeRights == policy.MakeDir {
		mask = policy.All &^ policy.Refer
	}
	to := filepath.Dir(dst)
	if m.entries[dst] {
		to = dst
	}
	if gain := m.rights(to) &^ m.rights(src) & mask; gain != 0 {
		return []Missing{{Path: dst, Right: policy.Refer.String(), Access: policy.Refer,
			Reason: "would gain rights (" + gain.String() + ")", Cause: Cause{Kind: CauseGain, Path: to}}}
	}
	return nil
}

// ipFamily reports whether a socket family, as an OpSocket names it,
// is IPv4 or IPv6.
func ipFamily(family string) bool {
	switch strings.TrimPrefix(family, "af_") {
	case "inet", "inet6":
		return true
	}
	return false
}

// checkLoopback is a connect, send or bind of an IP socket under
// network=loopback or hosts: a bind needs a loopback address; a connect
// or send reaches a loopback address only, and of those this model knows
// only the ones an --allow-host names (which sockets the sandbox bound is
// the mediation's to know, in the run): any other is reported missing.
func (m *Model) checkLoopback(op Op, addr, connect, bind string) []Missing {
	network := Cause{Kind: CauseNetwork}
	right := connect
	if op.Kind == OpBind {
		right = bind
	}
	ap, err := netip.ParseAddrPort(strings.TrimPrefix(addr, "udp:"))
	if err != nil {
		return []Missing{{Addr: addr, Right: right, Cause: network}}
	}
	a := ap.Addr().Unmap()
	if op.Kind == OpBind {
		if a.IsLoopback() {
			return nil
		}
		return []Missing{{Addr: addr, Right: right, Cause: network}}
	}
	for _, h := range m.network.Hosts {
		if a.IsLoopback() && h.MatchesAddr(a, int(ap.Port())) {
			return nil
		}
	}
	return []Missing{{Addr: addr, Right: right, Cause: network}}
}

func (m *Model) checkSocket(op Op) []Missing {
	addr := op.Addr
	ipc := Cause{Kind: CauseIPC}
	network := Cause{Kind: CauseNetwork}
	switch {
	case strings.HasPrefix(addr, "unix:@"):
		if op.Kind == OpConnect && !m.ipc.AbstractUnixOutside {
			return []Missing{{Addr: addr, Right: RightConnectAbstract, Cause: ipc}}
		}
	case strings.HasPrefix(addr, "unix:"):
		path := strings.TrimPrefix(addr, "unix:")
		if !m.ipc.PathUnixOutside && !m.unixConfined {
			return []Missing{{Addr: addr, Right: RightSocketUnix, Cause: ipc}}
		}
		if op.Kind == OpBind {
			return m.Check(Op{Kind: OpMknod, Path: path, Rights: policy.MakeSock})
		}
		if !m.ipc.PathUnixOutside {
			return []Missing{{Addr: addr, Right: RightConnectUnix, Cause: ipc}}
		}
	case strings.HasPrefix(addr, "udp:") && m.network.Loopback:
		return m.checkLoopback(op, addr, RightConnectUDP, RightBindUDP)
	case strings.HasPrefix(addr, "udp:"):
		if !m.network.Allow {
			return []Missing{{Addr: addr, Right: RightSocketInet, Cause: network}}
		}
	case m.network.Loopback:
		return m.checkLoopback(op, strings.TrimPrefix(addr, "tcp:"), RightConnectTCP, RightBindTCP)
	default:
		if !m.network.Allow && !m.tcpUnhandled {
			right := RightConnectTCP
			if op.Kind == OpBind {
				right = RightBindTCP
			}
			return []Missing{{Addr: strings.TrimPrefix(addr, "tcp:"), Right: right, Cause: network}}
		}
	}
	return nil
}
