package linux

// The kernel facts wrun depends on, in one table: each Landlock ABI version
// with the first kernel that has it, the rights and features it adds, and
// what those mean for wrun; and the Landlock errata wrun checks for. The
// rights a ruleset handles, the gaps of a plan, the kernel names in
// messages, wrun doctor's Landlock rows and explain's network and IPC lines
// are all derived from it. This file makes no system call and has no build
// tag, so the table and its derivations are tested on any system.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Landlock access bits, as in <linux/landlock.h>. policy.Access uses the
// same bit positions for file system rights; toLandlock maps them anyway so
// the two can never drift apart silently.
const (
	llExecute     = 1 << 0
	llWriteFile   = 1 << 1
	llReadFile    = 1 << 2
	llReadDir     = 1 << 3
	llRemoveDir   = 1 << 4
	llRemoveFile  = 1 << 5
	llMakeChar    = 1 << 6
	llMakeDir     = 1 << 7
	llMakeReg     = 1 << 8
	llMakeSock    = 1 << 9
	llMakeFifo    = 1 << 10
	llMakeBlock   = 1 << 11
	llMakeSym     = 1 << 12
	llRefer       = 1 << 13
	llTruncate    = 1 << 14
	llIoctlDev    = 1 << 15
	llResolveUnix = 1 << 16

	llNetBindTCP    = 1 << 0
	llNetConnectTCP = 1 << 1

	llScopeAbstractUnix = 1 << 0
	llScopeSignal       = 1 << 1

	// landlock_restrict_self flags. LogNewExecOn logs the denials of the
	// programs executed after it too; by default Landlock logs only the
	// restricting program's own.
	llRestrictSelfLogSameExecOff   = 1 << 0
	llRestrictSelfLogNewExecOn     = 1 << 1
	llRestrictSelfLogSubdomainsOff = 1 << 2
	llRestrictSelfTSync            = 1 << 3
)

// llRights is a set of what Landlock can restrict or do: file system and
// network rights a ruleset can handle, scopes, landlock_restrict_self flags.
type llRights struct {
	FS, Net, Scoped, Flags uint64
}

func (a llRights) union(b llRights) llRights {
	return llRights{a.FS | b.FS, a.Net | b.Net, a.Scoped | b.Scoped, a.Flags | b.Flags}
}

func (a llRights) minus(b llRights) llRights {
	return llRights{a.FS &^ b.FS, a.Net &^ b.Net, a.Scoped &^ b.Scoped, a.Flags &^ b.Flags}
}

// overlaps reports whether a and b share anything.
func (a llRights) overlaps(b llRights) bool {
	return a.FS&b.FS != 0 || a.Net&b.Net != 0 || a.Scoped&b.Scoped != 0 || a.Flags&b.Flags != 0
}

// covers reports whether a holds all of b.
func (a llRights) covers(b llRights) bool {
	return b.FS&^a.FS == 0 && b.Net&^a.Net == 0 && b.Scoped&^a.Scoped == 0 && b.Flags&^a.Flags == 0
}

// landlockVersion is one version of the Landlock ABI: what it adds, and
// what that means for wrun.
type landlockVersion struct {
	// ABI is the version landlock_create_ruleset reports.
	ABI int
	// Kernel is the first mainline release with it ("6.12"), "" while
	// none is known.
	Kernel string
	// Adds is what the version adds to what the kernel can restrict.
	Adds llRights
	// Meaning says, in plain words, what it adds.
	Meaning string

	// Feature names it in wrun doctor ("" for what wrun does not use).
	Feature string
	// With says what wrun does with it, Without what follows on a kernel
	// without it.
	With, Without string
	// Missing names the gap a kernel without it leaves in every plan (""
	// for none); an essential gap refuses the run unless --best-effort.
	Missing   string
	Essential bool
}

// landlockVersions is the Landlock ABI, version by version, oldest first
// (Documentation/userspace-api/landlock.rst).
func landlockVersions() []landlockVersion {
	return []landlockVersion{
		{
			ABI: 1, Kernel: "5.13",
			Adds: llRights{FS: llExecute | llWriteFile | llReadFile | llReadDir | llRemoveDir | llRemoveFile |
				llMakeChar | llMakeDir | llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym},
			Meaning: "executing, reading, writing, listing, creating and removing files",
			Feature: "landlock",
			With:    "file system access is restricted by the kernel",
			Without: "the file system is not restricted at all",
			Missing: "Landlock", Essential: true,
		},
		{
			ABI: 2, Kernel: "5.19",
			Adds:    llRights{FS: llRefer},
			Meaning: "renaming and linking files across directories (REFER)",
			Feature: "landlock.refer",
			With:    "files can be renamed across directories inside writable trees (git, cargo)",
			Without: "files can never be renamed or linked into another directory, so git and cargo may fail",
			Missing: "renames and links across directories (REFER)",
		},
		{
			ABI: 3, Kernel: "6.2",
			Adds:    llRights{FS: llTruncate},
			Meaning: "truncating files (TRUNCATE)",
			Feature: "landlock.truncate",
			With:    "truncating files is restricted like writing them",
			Without: "the child could truncate any file it can read",
			Missing: "truncate control", Essential: true,
		},
		{
			ABI: 4, Kernel: "6.7",
			Adds:    llRights{Net: llNetBindTCP | llNetConnectTCP},
			Meaning: "binding and connecting TCP sockets",
			Feature: "landlock.tcp",
			With:    "network=off is enforced by Landlock TCP rules as well as seccomp",
			Without: "network=off relies on the seccomp socket filter alone",
		},
		{
			ABI: 5, Kernel: "6.10",
			Adds:    llRights{FS: llIoctlDev},
			Meaning: "ioctl on device files (IOCTL_DEV)",
			Feature: "landlock.ioctl_dev",
			With:    "ioctl on device files is restricted",
			Without: "device ioctls are not restricted (terminal injection is still refused by seccomp)",
			Missing: "ioctl control on devices",
		},
		{
			ABI: 6, Kernel: "6.12",
			Adds:    llRights{Scoped: llScopeAbstractUnix | llScopeSignal},
			Meaning: "scoping signals and abstract UNIX sockets to the sandbox",
			Feature: "landlock.scopes",
			With:    "the child cannot signal processes outside its sandbox nor reach abstract UNIX sockets outside it",
			Without: "the child could signal (kill) the user's other processes",
			Missing: "signal scoping", Essential: true,
		},
		{
			ABI: 7, Kernel: "6.15",
			Adds:    llRights{Flags: llRestrictSelfLogSameExecOff | llRestrictSelfLogNewExecOn | llRestrictSelfLogSubdomainsOff},
			Meaning: "audit records of denials",
			Feature: "landlock.audit",
			With:    "the kernel can write an audit record of each denial, which wrun reads to confirm what it reports",
			Without: "denials leave no kernel audit record: they come from wrun's observer (and the child's output) alone",
		},
		{
			ABI: 8, Kernel: "7.0",
			Adds:    llRights{Flags: llRestrictSelfTSync},
			Meaning: "restricting every thread of a process at once (TSYNC); wrun restricts one thread and does not use it",
		},
		{
			ABI:     9,
			Adds:    llRights{FS: llResolveUnix},
			Meaning: "connecting and sending to pathname UNIX sockets (RESOLVE_UNIX)",
			Feature: "landlock.unix_path",
			With:    "connect() to pathname UNIX sockets is confined by path",
			Without: "with desktop=off, wrun performs every connect, bind and addressed send for the command (seccomp user notification) and connects only to sockets the sandbox bound or --allow-unix names; where it cannot (no pidfd_getfd, or a wrun inside another) UNIX sockets cannot be created at all (stream socketpairs still work, datagram ones do not)",
		},
	}
}

// landlockErratum is a fix the kernel reports through
// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA): bit
// Number-1 of the mask it returns is set when the fix is in. A kernel that
// predates the query refuses the flag, and so reports no fix.
type landlockErratum struct {
	Number int
	// ABI is the version whose behaviour it fixes.
	ABI int
	// Fixes says what the fix changes; Unfixed what that means for wrun
	// on a kernel without it.
	Fixes, Unfixed string
	// Withholds is what wrun does not use on a kernel without the fix.
	Withholds llRights
}

// landlockErrata are the errata the kernel documents
// (security/landlock/errata/abi-*.h).
func landlockErrata() []landlockErratum {
	return []landlockErratum{
		{
			Number: 1, ABI: 4,
			Fixes:   "TCP rules restrict only TCP sockets",
			Unfixed: "Landlock's TCP rules also refuse SMC, MPTCP and SCTP sockets (which network=off refuses anyway)",
		},
		{
			Number: 2, ABI: 6,
			Fixes:   "threads of one process may always signal each other",
			Unfixed: "signals are not scoped: the scope would also stop signals between wrun's own threads",
			// go-landlock, too, treats such a kernel as ABI 5.
			Withholds: llRights{Scoped: llScopeSignal},
		},
		{
			Number: 3, ABI: 1,
			Fixes:   "a directory moved out of a bind mount cannot widen access through rename or link",
			Unfixed: "in complex mount set-ups, renames through a disconnected directory could widen access",
		},
	}
}

// latestKernel is the newest kernel the table names.
func latestKernel() string {
	k := ""
	for _, v := range landlockVersions() {
		if v.Kernel != "" {
			k = v.Kernel
		}
	}
	return k
}

// landlockVersionOf is the table's entry for abi (ABI 0 for an unknown one).
func landlockVersionOf(abi int) landlockVersion {
	for _, v := range landlockVersions() {
		if v.ABI == abi {
			return v
		}
	}
	return landlockVersion{}
}

// abiKernel names the first mainline kernel with a Landlock ABI.
func abiKernel(abi int) string {
	if v := landlockVersionOf(abi); v.Kernel != "" {
		return "Linux " + v.Kernel
	}
	return "a kernel newer than Linux " + latestKernel()
}

// abiName names a Landlock ABI with its first kernel, as messages do:
// "Landlock ABI 6 (Linux 6.12)".
func abiName(abi int) string {
	return fmt.Sprintf("Landlock ABI %d (%s)", abi, abiKernel(abi))
}

// firstWith is the first version that adds any of r.
func firstWith(r llRights) landlockVersion {
	for _, v := range landlockVersions() {
		if v.Adds.overlaps(r) {
			return v
		}
	}
	return landlockVersion{}
}

// landlockKernel is what a kernel's Landlock offers: the ABI version it
// reports (or wrun is capped to, WRUN_LANDLOCK_ABI) and the errata it
// reports fixed.
type landlockKernel struct {
	ABI    int
	Errata uint64
}

func (k landlockKernel) fixed(e landlockErratum) bool {
	return e.Number > 0 && k.Errata&(1<<(e.Number-1)) != 0
}

// unfixed lists the errata of k's versions that k does not report fixed.
func (k landlockKernel) unfixed() []landlockErratum {
	var out []landlockErratum
	for _, e := range landlockErrata() {
		if e.ABI <= k.ABI && !k.fixed(e) {
			out = append(out, e)
		}
	}
	return out
}

// rights is everything the versions up to k.ABI add, less what unfixed
// errata withhold: what wrun may use on this kernel.
func (k landlockKernel) rights() llRights {
	var r llRights
	for _, v := range landlockVersions() {
		if v.ABI <= k.ABI {
			r = r.union(v.Adds)
		}
	}
	for _, e := range k.unfixed() {
		r = r.minus(e.Withholds)
	}
	return r
}

// has reports whether wrun may use all that v adds on this kernel.
func (k landlockKernel) has(v landlockVersion) bool {
	return k.ABI >= v.ABI && k.rights().covers(v.Adds)
}

// need says what a kernel must have for all that v adds: "Landlock ABI 6
// (Linux 6.12)", and the fixes this one lacks where it has the version.
func (k landlockKernel) need(v landlockVersion) string {
	s := abiName(v.ABI)
	if k.ABI < v.ABI {
		return s
	}
	for _, e := range k.unfixed() {
		if e.Withholds.overlaps(v.Adds) {
			s += fmt.Sprintf(" with erratum %d fixed (%s)", e.Number, e.Fixes)
		}
	}
	return s
}

// handledFS is every file system right the given ABI can restrict.
func handledFS(abi int) uint64 { return landlockKernel{ABI: abi}.rights().FS }

// gaps lists what this kernel's Landlock cannot enforce, for every plan.
// Without Landlock that is the one gap; landlockError says why.
func (k landlockKernel) gaps(landlockError string) []sandbox.Gap {
	var out []sandbox.Gap
	for _, v := range landlockVersions() {
		if v.Missing == "" || k.has(v) {
			continue
		}
		what := v.Missing
		if v.ABI == 1 && landlockError != "" {
			what += " (" + landlockError + ")"
		}
		out = append(out, sandbox.Gap{What: what, Consequence: v.Without, Need: k.need(v), Essential: v.Essential})
		if v.ABI == 1 {
			break // nothing else is restricted either
		}
	}
	return out
}

// doctor is wrun doctor's Landlock rows: one for each version wrun uses,
// then the errata. landlockError says why there is no Landlock.
func (k landlockKernel) doctor(landlockError string) []sandbox.Feature {
	var out []sandbox.Feature
	for _, v := range landlockVersions() {
		if v.Feature == "" {
			continue
		}
		f := sandbox.Feature{Name: v.Feature, Available: k.has(v), Detail: k.need(v) + ": " + v.Meaning, Consequence: v.With}
		if v.ABI == 1 {
			f.Detail = fmt.Sprintf("ABI %d", k.ABI)
			if k.ABI < 1 && landlockError != "" {
				f.Detail = landlockError
			}
		}
		if !f.Available {
			f.Consequence = v.Without
			if v.Essential {
				f.Consequence = v.Without + ", unless another mechanism holds it (the matrix rows below say which; where none does, wrun refuses to run)"
			}
		}
		out = append(out, f)
	}
	return append(out, k.errataFeature())
}

// errataFeature is the doctor row of the errata the kernel reports fixed.
func (k landlockKernel) errataFeature() sandbox.Feature {
	var fixed []string
	for _, e := range landlockErrata() {
		if k.fixed(e) {
			fixed = append(fixed, strconv.Itoa(e.Number))
		}
	}
	detail := fmt.Sprintf("%#x: ", k.Errata)
	if len(fixed) == 0 {
		detail += "none reported fixed"
	} else {
		detail += "errata " + strings.Join(fixed, ", ") + " fixed"
	}
	unfixed := k.unfixed()
	f := sandbox.Feature{Name: "landlock.errata", Available: k.ABI > 0 && len(unfixed) == 0, Detail: detail,
		Consequence: "every Landlock fix wrun checks for is in"}
	if k.ABI < 1 {
		f.Consequence = "no Landlock"
		return f
	}
	var missing []string
	for _, e := range unfixed {
		missing = append(missing, fmt.Sprintf("erratum %d (%s) is not fixed: %s", e.Number, e.Fixes, e.Unfixed))
	}
	if len(missing) > 0 {
		f.Consequence = strings.Join(missing, "; ")
	}
	return f
}

// networkIPC says, line by line, how the network and IPC limits of a
// policy are enforced on this kernel, for wrun explain. seccomp: the
// seccomp filter is loaded.
func (k landlockKernel) networkIPC(n policy.Network, ipc policy.IPC, seccomp, mediate bool) []string {
	r := k.rights()
	var out []string
	switch {
	case n.Allow:
		out = append(out, "network: allowed")
	case n.Loopback && mediate:
		l := "network: loopback only: wrun performs every connect, bind, listen and addressed send of an IP socket, binding to loopback addresses only and reaching only sockets this sandbox bound"
		var loop, named []string
		for _, h := range n.Hosts {
			if h.Loopback() {
				loop = append(loop, h.String())
			} else {
				named = append(named, h.String())
			}
		}
		if len(loop) > 0 {
			l += ", and the host's loopback services " + strings.Join(loop, ", ") + " (--allow-host)"
		}
		if n.Proxy {
			l += "; beyond loopback, only wrun's proxy (HTTPS_PROXY, HTTP_PROXY; NO_PROXY for loopback), which reaches "
			if len(named) == 0 {
				l += "no host: no --allow-host names one"
			} else {
				l += strings.Join(named, ", ") + " (--allow-host; a loopback, private or link-local address only for an entry naming the host exactly)"
			}
		}
		out = append(out, l)
	default:
		var by []string
		if r.Net&(llNetBindTCP|llNetConnectTCP) != 0 {
			by = append(by, "TCP bind and connect are refused (Landlock)")
		}
		if seccomp {
			by = append(by, "no socket family but UNIX can be created (seccomp)")
		}
		if len(by) == 0 {
			out = append(out, "network: off, but NOT enforced on this kernel (see below)")
		} else {
			out = append(out, "network: off: "+strings.Join(by, ", and "))
		}
	}
	if r.Scoped&llScopeSignal != 0 {
		out = append(out, "signals: only to processes inside the sandbox")
	} else if mediate {
		out = append(out, "signals: only to processes inside the sandbox (wrun sends each, after checking its target descends from the command)")
	} else {
		out = append(out, "signals: NOT limited on this kernel (see below)")
	}
	switch {
	case ipc.PathUnixOutside:
		out = append(out, "UNIX sockets outside the sandbox: reachable (desktop=on)")
	case r.FS&llResolveUnix != 0 || seccomp:
		out = append(out, "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): not reachable")
	default:
		out = append(out, "UNIX sockets outside the sandbox (D-Bus, ssh agent, docker, tmux): NOT limited on this kernel (see below)")
	}
	if seccomp {
		out = append(out, "always refused: ptrace, process_vm_*, io_uring, bpf, perf_event_open, userfaultfd, keyrings, mount, module and clock calls, TIOCSTI/TIOCLINUX",
			"refused by argument: new user namespaces (unshare/clone with CLONE_NEWUSER, setns), signals to wrun's own threads, priority, scheduling and resource limits of a process outside the sandbox, setuid and setgid mode bits")
	}
	return out
}
