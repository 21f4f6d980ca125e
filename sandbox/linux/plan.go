//go:build linux

package linux

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Plan is a policy made concrete for this machine: the command's Landlock
// ruleset and seccomp filter, what wrun mediates and performs itself, the
// checks after the run, and, for each protection, the mechanism that
// holds it (Holds), from which everything that describes a run is said.
type Plan struct {
	Policy   *policy.Policy `json:"-"`
	Features Features       `json:"features"`
	ABI      int            `json:"landlock_abi"`
	attr     rulesetAttr
	// Rules are the command's Landlock rules: the policy's, with the
	// hidden and protected paths carved out.
	Rules []policy.Rule `json:"-"`
	// Holds says, protection by protection, what holds the grant here.
	Holds []Hold `json:"holds"`
	// Mediated are the directories inside writable trees that carving
	// left without the rights to make or remove entries (those on the way
	// down to a protected or hidden path: the workspace root, .git):
	// there wrun performs each call itself (mediation.go).
	Mediated []string `json:"mediated,omitempty"`
	// Sweep lists protected paths that must not remain after the run;
	// they are checked, and removed, once nothing of the command can write.
	Sweep []policy.Protected `json:"-"`
	// Create lists what wrun creates before the child starts.
	Create []creation `json:"-"`
	// perfRules are the rules of the threads that perform mediated calls:
	// the writable trees whole and the sandbox's private devices.
	perfRules []policy.Rule
	seccomp   seccompSpec
	// mediate: wrun holds the seccomp listener and performs calls.
	mediate bool
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
	need     Need
	// audit: read Landlock's audit records of the run where the kernel
	// offers them (ABI 7) and auditing is on.
	audit bool
	// Unix says how pathname UNIX sockets outside the sandbox are kept
	// out.
	Unix UnixMechanism `json:"unix_sockets"`
	// NetMediated: network=loopback or hosts, held by wrun deciding and
	// performing every call on an IP socket that names an address, and
	// every listen (inet.go). Where it cannot, no IP socket can be made
	// (and the support matrix refuses the grant).
	NetMediated bool `json:"net_mediated,omitempty"`
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

	// The mediation, wherever the machine allows it. Processes kept in the
	// background outlive wrun, and with it the listener: every call the
	// filter sends it would then fail with ENOSYS (which is what keeps
	// them from changing what the checks after the run hold).
	pl.mediate = f.mediates()
	pl.seccomp = seccompSpec{
		DenyInet: !p.Network.Allow,
		Mediate:  pl.mediate,
		Truncate: pl.mediate && offered.FS&llTruncate == 0,
		Signals:  pl.mediate && offered.Scoped&llScopeSignal == 0,
		Nested:   f.Nested,
	}
	pl.audit = offered.Flags&llRestrictSelfLogNewExecOn != 0 && !o.NoObserve
	// The mediation never sees a read (only opens that write go to wrun:
	// sending every open would cost each one a round trip, about 0.25 ms
	// measured, 2.6x on git grep), so a refused read is the kernel's
	// alone to tell, through its audit records.
	why := "this kernel writes no Landlock audit records (" + abiName(firstWith(llRights{Flags: llRestrictSelfLogNewExecOn}).ABI) + ")"
	if pl.audit {
		why = "where auditing is off or its records are not readable (they need CAP_AUDIT_READ: root)"
	}
	pl.Notes = append(pl.Notes, "refused reads (a hidden path: ~/.ssh, other users' files) are reported exactly from the kernel's audit records only; "+why+", only when the command's output says so (no other mechanism sees a read the kernel refuses without slowing every open)")
	pl.planUnix(f, offered)
	pl.planNet(f)
	// Without Landlock, links and FIFOs are kept out of the places later
	// unsandboxed runs write into by refusing them everywhere.
	pl.seccomp.DenyPlant = pl.ABI == 0 && plainRules(p.Rules)

	// Hidden and protected paths are carved out of the rules; a protected
	// path that must not appear is carved too, so that its directory is
	// one the mediation watches, and is checked after the run.
	holes := slices.Clone(p.Hidden)
	for _, pr := range p.Protected {
		if !pr.Exists && pr.Create == policy.CreateNone {
			pl.Sweep = append(pl.Sweep, pr)
		}
		if pr.Pin {
			// The holes beneath a gitdir already take the rights to
			// remove or replace it from its parent.
			continue
		}
		holes = append(holes, policy.Hole{Path: pr.Path, Withheld: policy.Write, Why: pr.Why})
		if pr.Create != policy.CreateNone {
			pl.Create = append(pl.Create, creation{Path: pr.Path, Dir: pr.Create == policy.CreateDir, Beneath: pr.Within})
		}
	}
	for _, r := range p.Rules {
		if r.Create != policy.CreateNone {
			pl.Create = append(pl.Create, creation{Path: r.Path, Dir: r.Create == policy.CreateDir, Beneath: r.Beneath})
		}
	}
	rules, notes := policy.Carve(p.Rules, holes, policy.OSLister)
	pl.Rules = rules
	pl.Notes = append(pl.Notes, notes...)
	pl.Mediated = carvedDirs(p.Rules, holes)
	if pl.mediate {
		pl.Mediated = withEntryDirs(pl.Mediated, p.Rules)
	}
	pl.need = Need{CreateBeside: len(pl.Mediated) > 0 && p.Grant.Files == grant.FilesWrite}
	switch {
	case len(pl.Mediated) == 0:
	case pl.mediate:
		pl.Protection = "carved Landlock rules, and wrun performing each call in the directories that hold protected paths (the protected names and inodes refused)"
		pl.perfRules = performerRules(p.Rules)
	default:
		pl.Protection = "carved Landlock rules: nothing new can be made directly in a directory that holds a protected path (the workspace root, .git)"
		pl.Notes = append(pl.Notes, "protected paths are enforced by carved rules alone: new entries cannot be created directly in a directory that holds a protected path (the workspace root, .git)")
	}
	if pl.mediate && pl.perfRules == nil {
		pl.perfRules = performerRules(p.Rules)
	}
	if len(pl.Sweep) > 0 {
		pl.Notes = append(pl.Notes, "paths that must not appear (listed as protected, absent) are checked after the run and removed if the command created them")
	}

	// The support matrix decides: what nothing on this machine holds
	// refuses the run, or with --best-effort degrades it.
	pl.Holds = Holds(f, p.Grant, pl.need)
	for _, h := range refused(pl.Holds) {
		pl.Gaps = append(pl.Gaps, sandbox.Gap{What: h.What, Consequence: "nothing holds it here: " + f.Name(), Need: h.Refused, Essential: true})
	}
	if slices.ContainsFunc(pl.Gaps, func(g sandbox.Gap) bool { return g.Essential }) {
		if !o.BestEffort {
			return pl, &sandbox.UnenforceableError{Gaps: pl.Gaps}
		}
		pl.Degraded = true
	}
	if !pl.mediate {
		pl.Notes = append(pl.Notes, "no mediation ("+mediationMissing(f, o)+"): chmod, utimes and the other metadata calls, creates beside protected paths and, below Landlock ABI 6, signals are refused or held by the kernel alone (see the protections below)")
	}
	return pl, nil
}

// mediationMissing says why f gives no mediation.
func mediationMissing(f Features, _ sandbox.Options) string {
	switch {
	case f.Nested && f.Outer == OuterWrun:
		return "inside another wrun, which holds the seccomp listener: the kernel allows one"
	case f.Nested:
		return "another supervisor holds the seccomp listener: the kernel allows one"
	case !f.Seccomp || !f.UserNotif:
		return "no seccomp user notification (Linux 5.0)"
	case !f.AddFD:
		return "no SECCOMP_IOCTL_NOTIF_ADDFD (Linux 5.9)"
	case !f.ProcMem:
		return "no ptrace access to the command's memory (Yama's kernel.yama.ptrace_scope is 2 or more)"
	}
	return "unavailable"
}

// carvedDirs are the directories that carving rules around holes leaves
// without the rights to make or remove entries, though a rule grants
// them: each directory from a writable rule's path down to the parent of
// a hole beneath it. Entries made there, and beneath what is made there,
// get no Landlock right the command could use: wrun performs those calls.
func carvedDirs(rules []policy.Rule, holes []policy.Hole) []string {
	const entries = policy.MakeReg | policy.MakeDir | policy.RemoveFile | policy.RemoveDir
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Access&entries == 0 {
			continue
		}
		for _, h := range holes {
			if h.Withheld&entries == 0 || h.Path == r.Path || !policy.Within(h.Path, r.Path) {
				continue
			}
			for d := filepath.Dir(h.Path); policy.Within(d, r.Path); d = filepath.Dir(d) {
				seen[d] = true
				if d == r.Path || d == "/" {
					break
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// withEntryDirs adds to dirs the directories of the Entry rules: the
// command gets no right to make or remove entries there, and wrun
// performs each call, for the rules' names only (the access model's
// Platform.Entries).
func withEntryDirs(dirs []string, rules []policy.Rule) []string {
	for _, r := range rules {
		if d := filepath.Dir(r.Path); r.Entry && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// performerRules are the Landlock rules of the threads that perform the
// command's mediated calls: every rule of the policy that writes, whole
// (uncarved: the performer makes entries beside protected paths, and wrun
// refuses the protected names and inodes itself), and the sandbox's
// private devices, where it opens terminals and shared memory for the
// command. The kernel then keeps every performed call inside the write
// scope, whatever wrun's own checks decide.
func performerRules(rules []policy.Rule) []policy.Rule {
	var out []policy.Rule
	for _, r := range rules {
		if r.Entry {
			// The directory of an Entry rule: wrun's checks hold its
			// other names (see withEntryDirs).
			out = append(out, policy.Rule{Path: filepath.Dir(r.Path), Access: policy.ReadFile | policy.WriteExisting | policy.EntryRights,
				Why: r.Why, Source: r.Source, Optional: true, Beneath: r.Beneath})
			continue
		}
		if r.Access&policy.Write != 0 {
			out = append(out, r)
		}
	}
	for _, d := range privateDevices() {
		out = append(out, policy.Rule{Path: d.path, Access: d.access, Why: d.why, Source: "mediation", Optional: true})
	}
	return out
}

// fsRules turns rules into Landlock rules.
func fsRules(rules []policy.Rule) []fsRule {
	out := make([]fsRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, fsRule{Path: r.Path, Access: toLandlock(r.Access), Optional: r.Optional, NoFollow: r.NoFollow, Beneath: r.Beneath})
	}
	return out
}

// relayRules are the command's Landlock rules for a run whose terminal a
// pty relay replaces (internal/ptyrelay). A rule on the user's terminal
// (outer reports it: the policy grants what descriptors 0-2 are open on)
// goes: the command no longer holds that terminal, and could otherwise
// read its keystrokes beside the relay. The relay's inner terminal,
// slave, which the command holds on descriptor 0 (and on 1 and 2 where
// they were the user's terminal), gets a terminal's rights instead, so
// that reopening /dev/stdout works as it does without a relay. And wrun's
// own binary may be read and executed, as the relay's monitor is: wrun
// re-executed inside the sandbox as /proc/self/exe, whose rule the kernel
// attaches to the binary's inode, so a binary replaced on disk since wrun
// started still works. The binary is no secret and the rule gives no
// write; the monitor runs with the command's rights only.
func relayRules(rules []policy.Rule, outer func(path string) bool, slave string) []policy.Rule {
	out := make([]policy.Rule, 0, len(rules)+2)
	for _, r := range rules {
		if !outer(r.Path) {
			out = append(out, r)
		}
	}
	return append(out,
		policy.Rule{Path: slave, Access: policy.Device, Source: "relay",
			Why: "the pty relay's terminal, the command's in place of the user's: its standard streams, which it may reopen (/dev/stdout)"},
		policy.Rule{Path: "/proc/self/exe", Access: policy.ReadFile | policy.Execute, Source: "relay",
			Why: "wrun itself: the pty relay's monitor, which leads the command's session"})
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
	if pl.mediate {
		parts = append(parts, "wrun's mediation (seccomp user notification)")
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

// UnixMechanism says how pathname UNIX sockets outside the sandbox are
// kept out under a plan.
type UnixMechanism string

const (
	// UnixOpen: the grant reaches them (desktop=on).
	UnixOpen UnixMechanism = "open"
	// UnixLandlock: Landlock's RESOLVE_UNIX right (ABI 9) confines
	// connect and send by path.
	UnixLandlock UnixMechanism = "landlock"
	// UnixMediated: the seccomp filter sends every call that names an
	// address to wrun, which performs it (sockets.go).
	UnixMediated UnixMechanism = "mediated"
	// UnixRefused: AF_UNIX sockets and datagram socketpairs are refused.
	UnixRefused UnixMechanism = "refused"
)

// planUnix decides how pathname UNIX sockets outside the sandbox are kept
// out: by Landlock where it can (ABI 9), else by the mediation where it
// can take the command's sockets, else by refusing AF_UNIX sockets.
func (pl *Plan) planUnix(f Features, offered llRights) {
	p := pl.Policy
	switch {
	case p.IPC.PathUnixOutside:
		pl.Unix = UnixOpen
	case offered.FS&llResolveUnix != 0:
		pl.Unix = UnixLandlock
	case pl.mediate && f.takesSockets():
		pl.Unix = UnixMediated
		pl.seccomp.Sockets = true
		pl.Notes = append(pl.Notes, fmt.Sprintf("UNIX sockets are mediated: this kernel's Landlock ABI %d cannot confine connect() to pathname sockets, so wrun performs every connect, bind and addressed send for the command, and connects only to sockets this sandbox bound (or --allow-unix names); %s confines them itself", f.LandlockABI, abiName(firstWith(llRights{FS: llResolveUnix}).ABI)))
	default:
		pl.Unix = UnixRefused
		pl.seccomp.DenyUnix = true
		why := "the mediation is not available here"
		if pl.mediate {
			why = "the mediation needs pidfd_getfd to take the command's socket, which this machine refuses"
		}
		pl.Notes = append(pl.Notes, fmt.Sprintf("UNIX sockets cannot be created (stream and seqpacket socketpairs still work, datagram ones do not): this kernel's Landlock ABI %d cannot confine connect() to pathname sockets such as the D-Bus session bus, an ssh agent or a docker socket, and %s; %s can", f.LandlockABI, why, abiName(firstWith(llRights{FS: llResolveUnix}).ABI)))
	}
}

// planNet decides how network=loopback and hosts are held: by the
// mediation where it can take the command's sockets; elsewhere no IP
// socket can be made, as under network=off. Landlock's TCP rules stay on
// the command (with no port allowed, its own TCP connects and binds are
// refused: every one is wrun's to make), not on the performers.
func (pl *Plan) planNet(f Features) {
	if !pl.Policy.Network.Loopback {
		return
	}
	if pl.mediate && f.takesSockets() {
		pl.NetMediated = true
		pl.seccomp.Sockets = true
		pl.seccomp.Inet = true
		pl.seccomp.DenyInet = false
		return
	}
	why := mediationMissing(f, pl.Options)
	if pl.mediate {
		why = "pidfd_getfd, to take the command's socket, is refused here"
	}
	pl.Notes = append(pl.Notes, fmt.Sprintf("network=%s needs wrun's mediation (%s): no IP socket can be made, as under network=off", pl.Policy.Grant.Network, why))
}

// perfNet is what of the network the performers' Landlock domain
// handles: nothing when they make the command's IP calls
// (network=loopback and hosts: the address is wrun's to check, and
// Landlock names only ports), else what the command's does.
func (pl *Plan) perfNet() uint64 {
	if pl.NetMediated {
		return 0
	}
	return pl.attr.handledNet
}

// unixLine rewrites, in explain's network and IPC lines, the one about
// UNIX sockets outside the sandbox to name the mechanism that holds them
// under this plan.
func (pl *Plan) unixLine(lines []string) []string {
	var say string
	switch pl.Unix {
	case UnixMediated:
		say = "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): not reachable: every connect, bind and addressed send is performed by wrun for the command, only to sockets this sandbox bound"
		if n := len(pl.Policy.IPC.UnixSockets); n > 0 {
			say += fmt.Sprintf(" or the %d --allow-unix names", n)
		}
		say += "; binding a chosen abstract name is refused; inside a wrun nested in this one, UNIX sockets are refused"
	case UnixRefused:
		say = "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): not reachable: AF_UNIX sockets and datagram socketpairs are refused (seccomp; no mediation here)"
	default:
		return lines
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if strings.HasPrefix(l, "UNIX sockets outside the sandbox") {
			l = say
		}
		out = append(out, l)
	}
	return out
}
