package linux

// The support matrix: for each machine wrun may find itself on (its
// Features), which mechanism holds each protection a grant needs, or why
// nothing can. NewPlan decides from Holds alone (it runs, refuses with
// exit 125, or with --best-effort runs degraded), and records the cells
// it decided on in the plan; wrun doctor shows this machine's row, explain
// names the mechanism of each protection, and the matrix in docs/linux.md is
// MatrixMarkdown: Holds run over simulated machines. Like abi.go it makes
// no system call and has no build tag.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
)

// Need is what a plan's policy asks beyond the grant's fields.
type Need struct {
	// CreateBeside: a writable tree holds a protected path (a repository's
	// .git, a start-up file), so new entries beside it (the workspace
	// root, .git) need the mediation: Landlock can give a directory the
	// right to make entries only with a right that reaches everything
	// beneath it.
	CreateBeside bool
}

// Protection is one thing a grant promises.
type Protection struct {
	// Key is short and stable: files.write, shell.signals, ...
	Key string
	// Field is the grant field it belongs to: files, shell, network,
	// desktop.
	Field string
	// What says what is held, in plain words.
	What string
}

// Cell is how a machine holds one protection: the mechanisms that hold
// it, or why nothing does.
type Cell struct {
	By []string `json:"by,omitempty"`
	// Refused says what is missing; empty when the protection is held.
	Refused string `json:"refused,omitempty"`
	// Note is a limit of the mechanisms that hold it.
	Note string `json:"note,omitempty"`
}

// Held reports whether something holds the protection.
func (c Cell) Held() bool { return c.Refused == "" }

// Hold is one protection of a plan and how it is held.
type Hold struct {
	Protection
	Cell
}

// Mechanism names, short, as the matrix in docs/linux.md uses them.
const (
	mechLandlock  = "Landlock"
	mechCarved    = "carved rules"
	mechSeccomp   = "seccomp"
	mechMediation = "mediation"
	mechOuter     = "the enclosing wrun"
)

// protections is every protection, in the order explain lists them.
func protections() []Protection {
	return []Protection{
		{"files.write", "files", "no write outside the write scope"},
		{"files.hidden", "files", "no read of hidden paths (the home directory's secrets, other users' private files)"},
		{"files.plain", "files", "no symbolic link or FIFO planted where later unsandboxed runs write (build outputs, git refs)"},
		{"files.truncate", "files", "no truncation outside the write scope"},
		{"files.metadata", "files", "no chmod, chown, utimes or xattr change outside the write scope"},
		{"files.protected", "files", "protected paths inside writable trees stay unwritable (.git/config, hooks, start-up files)"},
		{"files.create", "files", "new files beside protected paths (the workspace root, .git) while those stay protected"},
		{"shell.signals", "shell", "no signal to a process outside the sandbox"},
		{"shell.priority", "shell", "no priority, scheduling or resource limit of a process outside the sandbox changed"},
		{"shell.processes", "shell", "no access to other processes' memory, environment or descriptors"},
		{"shell.wrun", "shell", "the command cannot stop wrun's checks after the run, and what survives a killed wrun changes nothing they hold"},
		{"shell.ipc", "shell", "no SysV IPC or POSIX message queue outside the sandbox"},
		{"network.off", "network", "no network socket (network=off)"},
		{"network.hosts", "network", "the hosts --allow-host names, through wrun's proxy, and no other (network=hosts)"},
		{"network.loopback", "network", "IP sockets on loopback only: binds to loopback addresses, connects and sends to sockets the sandbox bound and --allow-host ones (network=loopback, hosts)"},
		{"desktop.unix", "desktop", "no connect to pathname UNIX sockets outside the sandbox: D-Bus, ssh agent, docker (desktop=off)"},
		{"desktop.abstract", "desktop", "no abstract UNIX socket outside the sandbox, and no abstract name claimed for outside clients (desktop=off)"},
	}
}

// applies reports whether g needs protection p.
func applies(p Protection, g grant.Grant) bool {
	switch p.Key {
	case "files.create":
		return g.Files == grant.FilesWrite
	case "files.plain":
		return g.Shell >= grant.ShellVerify
	case "network.off":
		return g.Network == grant.NetworkOff
	case "network.loopback":
		return g.Network == grant.NetworkLoopback || g.Network == grant.NetworkHosts
	case "network.hosts":
		return g.Network == grant.NetworkHosts
	case "desktop.unix", "desktop.abstract":
		return g.Desktop == grant.DesktopOff
	}
	return true
}

// needMediation is what a machine must offer for the mediation.
const needMediation = "seccomp user notification with SECCOMP_IOCTL_NOTIF_ADDFD (Linux 5.9) and ptrace access to the command (Yama's kernel.yama.ptrace_scope below 2), and no other supervisor holding the seccomp listener"

// holdOf is the matrix's cell: how f holds protection key for grant g,
// given what the plan needs.
func holdOf(f Features, key string, g grant.Grant, n Need) Cell {
	k := f.landlock()
	r := k.rights()
	ll := k.ABI >= 1
	med := f.mediates()
	outer := f.Nested && f.Outer == OuterWrun
	replay := ""
	if med && !f.WaitKillable {
		replay = "; without SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19) a call a signal restarts is answered from what wrun already did, never performed twice"
	}
	noLandlock := abiName(1) + ": Landlock must be built in (CONFIG_SECURITY_LANDLOCK) and listed in the lsm= boot parameter"
	switch key {
	case "files.write", "files.hidden", "files.plain":
		if ll {
			c := Cell{By: []string{mechLandlock}}
			if key == "files.hidden" {
				c.By = []string{mechLandlock, mechCarved}
			}
			return c
		}
		return Cell{Refused: noLandlock}
	case "files.truncate":
		switch {
		case r.FS&llTruncate != 0:
			return Cell{By: []string{mechLandlock}}
		case ll && med:
			return Cell{By: []string{mechLandlock, mechMediation}, Note: "every truncate and O_TRUNC open is performed by wrun, inside the write scope only" + replay}
		}
		return Cell{Refused: abiName(3) + ", or " + needMediation}
	case "files.metadata":
		switch {
		case ll && med:
			return Cell{By: []string{mechMediation}, Note: "wrun performs every chmod, chown, utimes and xattr call, as the command, on the file it resolved beneath the write scope (Landlock has no hook for them)" + replay}
		case ll && outer:
			return Cell{By: []string{mechOuter}, Note: "the enclosing wrun refuses every metadata call of a nested sandbox (EPERM): chmod and utimes fail even inside the write scope"}
		}
		return Cell{Refused: needMediation + " (Landlock has no hook for chmod, chown, utimes or xattrs)"}
	case "files.protected":
		if !ll {
			return Cell{Refused: noLandlock}
		}
		if med {
			return Cell{By: []string{mechCarved, mechMediation}}
		}
		return Cell{By: []string{mechCarved}, Note: "carved rules take create and remove rights from the directories that hold protected paths"}
	case "files.create":
		switch {
		case ll && med:
			return Cell{By: []string{mechMediation}, Note: "wrun performs each create, rename, link and removal in the directories that hold protected paths (and beneath what it made there), refusing the protected names and inodes" + replay}
		case ll && !n.CreateBeside:
			return Cell{By: []string{mechCarved}, Note: "no writable tree holds a protected path here"}
		case !ll:
			return Cell{Refused: noLandlock}
		}
		return Cell{Refused: needMediation + " (without it only carved Landlock rules hold .git/config and the other protected paths, and they allow nothing new in the directories that hold them: the workspace root, .git, so git commit fails); --best-effort runs with carved rules"}
	case "shell.signals":
		switch {
		case r.Scoped&llScopeSignal != 0:
			return Cell{By: []string{mechLandlock, mechSeccomp}, Note: "seccomp refuses the calls that name wrun's own threads by number"}
		case ll && med:
			return Cell{By: []string{mechMediation, mechSeccomp}, Note: "below " + abiName(6) + " wrun sends each signal itself, after checking, on a pidfd opened first, that its target descends from the command"}
		}
		return Cell{Refused: k.need(landlockVersionOf(6)) + ", or " + needMediation}
	case "shell.priority":
		if !f.Seccomp {
			return Cell{Refused: "seccomp"}
		}
		if med {
			return Cell{By: []string{mechSeccomp, mechMediation}, Note: "the command's own process and group pass; any other target is checked to descend from the command"}
		}
		return Cell{By: []string{mechSeccomp}, Note: "only the caller's own process and group: setpriority, ioprio_set, sched_set* and prlimit on any other pid are refused"}
	case "shell.processes":
		switch {
		case ll && f.Seccomp:
			return Cell{By: []string{mechSeccomp, mechLandlock}, Note: "/proc lists the processes outside the sandbox (their names and arguments); their memory, environment and descriptors are out of reach (Landlock's ptrace scope)"}
		case !f.Seccomp:
			return Cell{Refused: "seccomp"}
		}
		return Cell{Refused: noLandlock + " (without it the command reads other processes' environment and descriptors through /proc)"}
	case "shell.wrun":
		switch {
		case f.Seccomp && med:
			by := []string{mechSeccomp, mechMediation}
			if r.Scoped&llScopeSignal != 0 {
				by = []string{mechSeccomp, mechLandlock, mechMediation}
			}
			return Cell{By: by, Note: "no PID namespace: processes can outlive a wrun killed with SIGKILL, but every call the mediation receives then fails with ENOSYS, so they can only write files they hold open"}
		case f.Seccomp && outer:
			return Cell{By: []string{mechOuter}, Note: "what outlives this wrun stays in the enclosing sandbox, whose checks run after it"}
		case f.Seccomp && r.Scoped&llScopeSignal != 0:
			// Nothing is mediated, so nothing depends on wrun: what
			// outlives it keeps the Landlock domain and filter it had,
			// and the signal scope keeps wrun's threads out of reach.
			return Cell{By: []string{mechSeccomp, mechLandlock}, Note: "nothing is mediated: what outlives wrun keeps its Landlock domain and seccomp filter"}
		case f.Seccomp:
			return Cell{Refused: needMediation + ", or Landlock ABI 6 (Linux 6.12) (without either the command can signal any thread of wrun's, ending it before its checks after the run)"}
		}
		return Cell{Refused: "seccomp"}
	case "shell.ipc":
		if f.Seccomp {
			return Cell{By: []string{mechSeccomp}, Note: "SysV IPC and POSIX message queues are refused"}
		}
		return Cell{Refused: "seccomp"}
	case "network.off":
		if !f.Seccomp {
			return Cell{Refused: "seccomp"}
		}
		if r.Net&llNetConnectTCP != 0 {
			return Cell{By: []string{mechSeccomp, mechLandlock}}
		}
		return Cell{By: []string{mechSeccomp}}
	case "network.hosts":
		// The rest of network=hosts is network=loopback; what the proxy
		// adds holds where the connects that reach it are wrun's.
		c := holdOf(f, "network.loopback", g, n)
		if c.Held() {
			c.Note = "wrun's proxy (HTTPS_PROXY, HTTP_PROXY) connects to the hosts --allow-host names, deciding on the name the client asked for; the command's connects go only to it and to what network=loopback reaches, and the proxy serves only connects wrun made for this sandbox"
		}
		return c
	case "network.loopback":
		switch {
		case f.Seccomp && f.takesSockets():
			c := Cell{By: []string{mechMediation}, Note: "wrun performs every connect, bind, listen and addressed send of an IP socket: binds only to loopback addresses (an unbound socket's listen or first datagram bound to loopback first), connects and sends only to sockets the sandbox bound (sock_diag's answer) and --allow-host addresses; Landlock's TCP rules name ports, not addresses, so they cannot hold it alone"}
			if r.Net&llNetConnectTCP != 0 {
				c.By = []string{mechMediation, mechLandlock}
				c.Note += "; they refuse the command's own TCP binds and connects, which are all wrun's to make"
			}
			return c
		case !f.Seccomp:
			return Cell{Refused: "seccomp"}
		case med:
			return Cell{Refused: "pidfd_getfd, to take the command's socket (a container's default seccomp profile refuses it without CAP_SYS_PTRACE); --best-effort runs it as network=off"}
		}
		return Cell{Refused: needMediation + ", and pidfd_getfd (Landlock's TCP rules name ports, not addresses); --best-effort runs it as network=off"}
	case "desktop.unix":
		switch {
		case r.FS&llResolveUnix != 0:
			return Cell{By: []string{mechLandlock}}
		case f.Seccomp && f.takesSockets():
			return Cell{By: []string{mechMediation}, Note: "wrun performs connect, bind and addressed sends for the command, reaching only sockets the sandbox bound and --allow-unix ones"}
		case f.Seccomp:
			return Cell{By: []string{mechSeccomp}, Note: "UNIX sockets cannot be created; stream and seqpacket socketpairs still work (the mediation needs pidfd_getfd to take the command's socket)"}
		}
		return Cell{Refused: "seccomp"}
	case "desktop.abstract":
		switch {
		case f.Seccomp && f.takesSockets():
			return Cell{By: []string{mechMediation}, Note: "connects and sends reach only abstract sockets the sandbox bound; binding a chosen abstract name is refused (autobind works)"}
		case f.Seccomp && r.FS&llResolveUnix != 0 && r.Scoped&llScopeAbstractUnix != 0:
			return Cell{By: []string{mechLandlock}, Note: "an abstract name the command binds can be reached from outside"}
		case f.Seccomp:
			return Cell{By: []string{mechSeccomp}, Note: "UNIX sockets cannot be created, nor datagram socketpairs"}
		}
		return Cell{Refused: "seccomp"}
	}
	return Cell{Refused: "unknown protection " + key}
}

// Holds is how f holds each protection g needs, in order.
func Holds(f Features, g grant.Grant, n Need) []Hold {
	var out []Hold
	for _, p := range protections() {
		if applies(p, g) {
			out = append(out, Hold{p, holdOf(f, p.Key, g, n)})
		}
	}
	return out
}

// Refusals lists what f cannot hold of g: empty when wrun runs g there in
// full.
func Refusals(f Features, g grant.Grant, n Need) []Hold { return refused(Holds(f, g, n)) }

// refused lists the protections of hs nothing holds.
func refused(hs []Hold) []Hold {
	var out []Hold
	for _, h := range hs {
		if !h.Held() {
			out = append(out, h)
		}
	}
	return out
}

// mechanisms says, line by line, how each protection of hs is held:
// explain's list for this machine.
func mechanisms(hs []Hold) []string {
	var out []string
	for _, h := range hs {
		line := h.What + ": "
		if h.Held() {
			line += strings.Join(h.By, " + ")
			if h.Note != "" {
				line += " (" + h.Note + ")"
			}
		} else {
			line += "NOT HELD: needs " + h.Refused
		}
		out = append(out, line)
	}
	return out
}

// namedGrant is one grant column of the matrix.
type namedGrant struct {
	Name  string
	Grant grant.Grant
}

// namedGrants are the matrix's grant columns.
func namedGrants() []namedGrant {
	var out []namedGrant
	for _, n := range []string{"inspect", "verify", "write", "full"} {
		if g, err := grant.Parse(n); err == nil {
			out = append(out, namedGrant{n, g})
		}
	}
	return out
}

// verdict is one grant column of a row: "runs", or "refused (...)"
// naming the protections nothing holds.
func verdict(f Features, g grant.Grant, n Need) string {
	rs := refused(Holds(f, g, n))
	if len(rs) == 0 {
		return "runs"
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Key)
	}
	return "refused (" + strings.Join(keys, ", ") + ")"
}

// fieldCell is a field column of a row: the mechanisms holding the
// field's protections (for the widest grant that needs them), or what is
// refused.
func fieldCell(f Features, field string, n Need) string {
	wide := grant.Grant{Files: grant.FilesWrite, Shell: grant.ShellFull, Network: grant.NetworkOff, Desktop: grant.DesktopOff}
	seen := map[string]bool{}
	var by, nothing []string
	for _, h := range Holds(f, wide, n) {
		if h.Field != field {
			continue
		}
		if !h.Held() {
			nothing = append(nothing, strings.TrimPrefix(h.Key, field+"."))
			continue
		}
		for _, m := range h.By {
			if !seen[m] {
				seen[m] = true
				by = append(by, m)
			}
		}
	}
	var parts []string
	if len(by) > 0 {
		parts = append(parts, strings.Join(by, ", "))
	}
	if len(nothing) > 0 {
		parts = append(parts, "refused: "+strings.Join(nothing, ", "))
	}
	return strings.Join(parts, "; ")
}

// matrixRow is a kind of machine: every row of it differs only in the
// Landlock ABI.
type matrixRow struct {
	name string
	f    Features
}

// matrixRows are the kinds of machine the matrix lists, each at every
// Landlock ABI from 0 to the newest the table knows that wrun uses.
func matrixRows() []matrixRow {
	full := Features{Seccomp: true, UserNotif: true, AddFD: true, AddFDSend: true, WaitKillable: true,
		PidfdThread: true, PidfdGetfd: true, ProcMem: true}
	with := func(mod func(*Features)) Features {
		f := full
		mod(&f)
		return f
	}
	return []matrixRow{
		{"root, or a user (namespaces play no part)", full},
		{"a container's default seccomp profile (no pidfd_getfd)", with(func(f *Features) { f.PidfdGetfd = false })},
		{"a kernel before 5.19 (no WAIT_KILLABLE_RECV)", with(func(f *Features) { f.WaitKillable, f.PidfdThread = false, false })},
		{"a user under Yama ptrace_scope 2", with(func(f *Features) { f.ProcMem = false })},
		{"inside another wrun", with(func(f *Features) { f.Nested, f.Outer = true, OuterWrun })},
		{"under another seccomp supervisor", with(func(f *Features) { f.Nested, f.Outer = true, OuterOther })},
	}
}

// MatrixEnvs are the matrix's machines: each row kind at every Landlock
// ABI from 0 to 7.
func MatrixEnvs() []Features {
	var out []Features
	for _, r := range matrixRows() {
		for abi := 0; abi <= 7; abi++ {
			f := r.f
			f.LandlockABI, f.LandlockErrata = abi, ^uint64(0)
			out = append(out, f)
		}
	}
	return out
}

// MatrixMarkdown is the support matrix of docs/linux.md, generated from Holds:
// ABIs of a row kind with equal cells are merged.
func MatrixMarkdown() string {
	var b strings.Builder
	n := Need{CreateBeside: true}
	gs := namedGrants()
	b.WriteString("| machine | Landlock ABI |")
	for _, g := range gs {
		fmt.Fprintf(&b, " %s |", g.Name)
	}
	b.WriteString(" files | shell | network | desktop |\n|---|---|")
	for range gs {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|\n")
	for _, r := range matrixRows() {
		type span struct {
			cells  string
			lo, hi int
		}
		var spans []span
		for abi := 0; abi <= 7; abi++ {
			f := r.f
			f.LandlockABI, f.LandlockErrata = abi, ^uint64(0)
			var cells []string
			for _, g := range gs {
				cells = append(cells, verdict(f, g.Grant, n))
			}
			for _, field := range []string{"files", "shell", "network", "desktop"} {
				cells = append(cells, fieldCell(f, field, n))
			}
			c := strings.Join(cells, " | ")
			if l := len(spans) - 1; l >= 0 && spans[l].cells == c {
				spans[l].hi = abi
				continue
			}
			spans = append(spans, span{c, abi, abi})
		}
		for _, s := range spans {
			abi := fmt.Sprint(s.lo)
			if s.hi > s.lo {
				abi = fmt.Sprintf("%d-%d", s.lo, s.hi)
			}
			if s.hi == 7 {
				abi += "+"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", r.name, abi, s.cells)
		}
	}
	return b.String()
}

// RefusalReasons lists, once each, every reason the matrix refuses for,
// with the protection it is about: docs/linux.md prints them under the
// matrix.
func RefusalReasons() []string {
	seen := map[string]bool{}
	var out []string
	wide := grant.Grant{Files: grant.FilesWrite, Shell: grant.ShellFull, Network: grant.NetworkOff, Desktop: grant.DesktopOff}
	for _, f := range MatrixEnvs() {
		for _, h := range refused(Holds(f, wide, Need{CreateBeside: true})) {
			s := fmt.Sprintf("`%s`: %s", h.Key, h.Refused)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}
