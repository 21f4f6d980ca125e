package linux

// The support matrix: for each environment wrun may find itself in (the
// Landlock ABI it may use and the privileges it runs with), which
// mechanism holds each protection a grant needs, or why nothing can.
// NewPlan runs, refuses (exit 125) or, with --best-effort, runs degraded
// from it alone; wrun doctor shows this machine's row, explain names the
// mechanism of each protection, and the README's matrix is generated from
// it (TestREADMEMatrix checks that the two agree). Like abi.go it makes no
// system call and has no build tag.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
)

// Env is a row of the matrix: what wrun finds on a machine.
type Env struct {
	// Landlock is the kernel's Landlock as wrun may use it (ABI 0: none).
	Landlock landlockKernel
	// Root: wrun runs as uid 0.
	Root bool
	// SysAdmin: wrun holds CAP_SYS_ADMIN, so it makes namespaces itself.
	SysAdmin bool
	// UserNS: unprivileged user namespaces can be created.
	UserNS bool
	// MountAPI: the kernel has open_tree, move_mount and mount_setattr,
	// which the stage's view of the file system is made with.
	MountAPI bool
	// Nested: wrun runs inside another wrun, whose seccomp filter refuses
	// mounts and new user namespaces.
	Nested bool
	// ProcMasked: /proc has mounts over parts of it (a container's masked
	// paths), so a user namespace cannot mount a fresh /proc.
	ProcMasked bool
}

// stage reports whether wrun can make the stage's namespaces here.
func (e Env) stage() bool {
	return e.MountAPI && !e.Nested && (e.SysAdmin || e.UserNS)
}

// freshProc reports whether the stage can mount a /proc of its own PID
// namespace (a user namespace cannot where /proc is masked).
func (e Env) freshProc() bool { return e.stage() && (e.SysAdmin || !e.ProcMasked) }

// Privilege names the privilege part of the row.
func (e Env) Privilege() string {
	var s string
	switch {
	case e.Nested:
		s = "inside another wrun"
	case e.Root && e.SysAdmin:
		s = "root"
	case e.Root && e.UserNS:
		s = "root without CAP_SYS_ADMIN, with user namespaces"
	case e.Root:
		s = "root without CAP_SYS_ADMIN, without user namespaces"
	case e.SysAdmin:
		s = "a user with CAP_SYS_ADMIN"
	case e.UserNS:
		s = "a user with user namespaces"
	default:
		s = "a user without user namespaces"
	}
	if e.ProcMasked && !e.Nested {
		s += ", /proc masked"
	}
	if !e.MountAPI {
		s += ", no open_tree/mount_setattr (before Linux 5.12)"
	}
	return s
}

// Name names the row: "a user with user namespaces, Landlock ABI 4".
func (e Env) Name() string {
	return fmt.Sprintf("%s, Landlock ABI %d", e.Privilege(), e.Landlock.ABI)
}

// Need says what a grant needs here beyond the grant's fields: facts of
// the plan that decide a cell.
type Need struct {
	// CreateBeside: a writable tree holds a protected path in a directory
	// where the grant lets the child create files (the workspace root
	// beside .git, .git beside its config): only a mount holds that.
	CreateBeside bool
}

// Protection is one thing the sandbox holds for a grant: a column of the
// matrix's detailed form.
type Protection struct {
	// Key is a short stable name ("files.metadata").
	Key string
	// Field is the grant field it belongs to: files, shell, network,
	// desktop.
	Field string
	// What says what is held, in plain words.
	What string
}

// Cell is how an environment holds one protection: the mechanisms that
// hold it, or why nothing does.
type Cell struct {
	By []string
	// Refused says what is missing; empty when the protection is held.
	Refused string
	// Note is a limit of the mechanisms that hold it.
	Note string
}

// Held reports whether something holds the protection.
func (c Cell) Held() bool { return c.Refused == "" }

// Mechanism names, short, as the README's matrix uses them.
const (
	mechLandlock  = "Landlock"
	mechView      = "read-only view"
	mechBinds     = "read-only binds"
	mechCarved    = "carved rules"
	mechPIDNS     = "PID namespace"
	mechIPCNS     = "IPC namespace"
	mechNetNS     = "network namespace"
	mechSeccomp   = "seccomp"
	mechFreshProc = "own /proc"
	mechMediation = "socket mediation"
	mechMasks     = "masks"
)

// enableUserNS is what a user can do where user namespaces are missing.
const enableUserNS = "enable unprivileged user namespaces for wrun: on Ubuntu 23.10 and later `sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile for wrun that allows `userns,`; elsewhere `sysctl user.max_user_namespaces=15000` (or `kernel.unprivileged_userns_clone=1`); in a container, run it with user namespaces allowed (e.g. docker's `--security-opt seccomp=unconfined` or a profile allowing unshare), or run wrun as root with CAP_SYS_ADMIN"

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
		{"shell.processes", "shell", "no access to other processes' memory, environment or descriptors"},
		{"shell.wrun", "shell", "the command cannot stop wrun's checks after the run, nor outlive a wrun killed with SIGKILL"},
		{"shell.ipc", "shell", "no SysV IPC or POSIX message queue outside the sandbox"},
		{"network.off", "network", "no network socket (network=off)"},
		{"desktop.unix", "desktop", "no connect to pathname UNIX sockets outside the sandbox: D-Bus, ssh agent, docker (desktop=off)"},
		{"desktop.abstract", "desktop", "no abstract UNIX socket outside the sandbox (desktop=off)"},
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
	case "desktop.unix", "desktop.abstract":
		return g.Desktop == grant.DesktopOff
	}
	return true
}

// Hold is the matrix's cell: how e holds protection key for grant g, given
// what the plan needs.
func (e Env) Hold(key string, g grant.Grant, n Need) Cell {
	k := e.Landlock
	r := k.rights()
	ll := k.ABI >= 1
	stage := e.stage()
	switch key {
	case "files.write":
		return cellOf(mechIf(ll, mechLandlock), mechIf(stage, mechView),
			"Landlock or a mount namespace")
	case "files.hidden":
		switch {
		case ll && stage:
			return Cell{By: []string{mechMasks, mechLandlock}, Note: "a hidden path with no granted path beneath it is covered by an empty mount of mode 000; the others (the home directory, /dev) are carved out of the Landlock rules"}
		case stage:
			return Cell{By: []string{mechMasks}, Note: "a hidden path is covered by an empty mount of mode 000, or, where granted paths lie beneath it (the home directory, /dev), by a read-only tmpfs holding only those (listing it shows only them)"}
		}
		return cellOf(mechIf(ll, mechLandlock), "",
			abiName(1)+" or a mount namespace: without either hidden paths are readable; Landlock must be built in (CONFIG_SECURITY_LANDLOCK) and listed in the lsm= boot parameter")
	case "files.plain":
		if ll {
			return Cell{By: []string{mechLandlock}}
		}
		return Cell{By: []string{mechSeccomp}, Note: "symbolic links and FIFOs cannot be made anywhere (TMPDIR included); a pathname socket can still be bound there (a later run's write to it fails, nothing is redirected)"}
	case "files.truncate":
		return cellOf(mechIf(r.FS&llTruncate != 0, mechLandlock), mechIf(stage, mechView),
			abiName(3)+" or the read-only view of a mount namespace")
	case "files.metadata":
		return cellOf(mechIf(stage, mechView), "",
			"the read-only view of a mount namespace (Landlock has no hook for chmod, chown, utimes or xattrs)")
	case "files.protected":
		switch {
		case stage:
			return Cell{By: []string{mechBinds}}
		case ll:
			return Cell{By: []string{mechCarved}, Note: "carved rules take create and remove rights from the directories that hold protected paths"}
		}
		return Cell{Refused: "Landlock or a mount namespace"}
	case "files.create":
		switch {
		case stage:
			return Cell{By: []string{mechBinds}}
		case !n.CreateBeside && ll:
			return Cell{By: []string{mechCarved}, Note: "no writable tree holds a protected path here"}
		}
		return Cell{Refused: "a mount namespace (without one only carved Landlock rules hold .git/config and the other protected paths, and they allow nothing new in the directories that hold them: the workspace root, .git, so git commit fails); --best-effort runs with carved rules"}
	case "shell.signals":
		scope := r.Scoped&llScopeSignal != 0
		return cellOf(mechIf(scope, mechLandlock), mechIf(stage, mechPIDNS),
			k.need(landlockVersionOf(6))+" or a PID namespace")
	case "shell.processes":
		c := cellOf(mechSeccomp, mechIf(ll, mechLandlock), "")
		if e.freshProc() {
			c.By = append(c.By, mechFreshProc, mechPIDNS)
		} else {
			c.Note = "/proc lists the processes outside the sandbox (their names and arguments); Landlock keeps their memory, environment and descriptors out of reach"
			if !ll {
				c = Cell{Refused: abiName(1) + " or a /proc of the sandbox's own (without both the command reads other processes' environment and descriptors through /proc; " + e.whyNoFreshProc() + ")"}
			}
		}
		return c
	case "shell.wrun":
		return cellOf(mechIf(stage, mechPIDNS), "",
			"a PID namespace (without one the command is forked from a restricted thread of wrun, which it can signal, ending wrun before its checks after the run, and what it starts can outlive a wrun killed with SIGKILL)")
	case "shell.ipc":
		if stage {
			return Cell{By: []string{mechIPCNS}}
		}
		return Cell{By: []string{mechSeccomp}, Note: "SysV IPC and POSIX message queues are refused"}
	case "network.off":
		return cellOf(mechSeccomp, mechIf(r.Net&llNetConnectTCP != 0, mechLandlock), "")
	case "desktop.unix":
		if r.FS&llResolveUnix != 0 {
			return Cell{By: []string{mechLandlock}}
		}
		if stage {
			return Cell{By: []string{mechMediation}, Note: "wrun performs connect, bind and addressed sends for the command, reaching only sockets the sandbox bound and --allow-unix ones (without seccomp user notification: UNIX sockets cannot be created)"}
		}
		return Cell{By: []string{mechSeccomp}, Note: "UNIX sockets cannot be created; stream and seqpacket socketpairs still work"}
	case "desktop.abstract":
		switch {
		case r.Scoped&llScopeAbstractUnix != 0:
			return Cell{By: []string{mechLandlock}}
		case stage && g.Network == grant.NetworkOff:
			return Cell{By: []string{mechNetNS, mechSeccomp}}
		case stage:
			return Cell{By: []string{mechMediation}, Note: "the mediation refuses every connect or send to an abstract address"}
		}
		return Cell{By: []string{mechSeccomp}, Note: "UNIX sockets cannot be created, nor datagram socketpairs"}
	}
	return Cell{Refused: "unknown protection " + key}
}

// Remedy says what the user can do where wrun can make no namespace:
// how to give it one ("" where it can).
func (e Env) Remedy() string {
	switch {
	case e.stage():
		return ""
	case e.Nested:
		return "run wrun outside the other wrun (a nested wrun can only narrow its grant)"
	case !e.MountAPI:
		return "use Linux 5.12 or later"
	}
	return enableUserNS
}

// whyNoStage says why wrun can make no namespace here.
func (e Env) whyNoStage() string {
	switch {
	case e.Nested:
		return "inside another wrun, whose seccomp filter refuses mounts and user namespaces"
	case !e.MountAPI:
		return "the kernel lacks open_tree, move_mount and mount_setattr (Linux 5.12)"
	case !e.SysAdmin && !e.UserNS:
		return "wrun lacks CAP_SYS_ADMIN and user namespaces are unavailable"
	}
	return "it can"
}

// whyNoFreshProc says why the stage cannot mount a /proc of its own.
func (e Env) whyNoFreshProc() string {
	if !e.stage() {
		return e.whyNoStage()
	}
	return "/proc is masked, and a user namespace may mount proc only where all of it is visible"
}

func mechIf(ok bool, m string) string {
	if ok {
		return m
	}
	return ""
}

// cellOf is held by the non-empty mechanisms, or refused for reason.
func cellOf(a, b, refused string) Cell {
	var by []string
	for _, m := range []string{a, b} {
		if m != "" {
			by = append(by, m)
		}
	}
	if len(by) == 0 {
		return Cell{Refused: refused}
	}
	return Cell{By: by}
}

// Refusal is a protection nothing holds in an environment.
type Refusal struct {
	Protection Protection
	Why        string
}

// Refusals lists what e cannot hold of g: empty when wrun runs g here in
// full.
func (e Env) Refusals(g grant.Grant, n Need) []Refusal {
	var out []Refusal
	for _, p := range protections() {
		if !applies(p, g) {
			continue
		}
		if c := e.Hold(p.Key, g, n); !c.Held() {
			out = append(out, Refusal{Protection: p, Why: c.Refused})
		}
	}
	return out
}

// Mechanisms says, line by line, how e holds each protection g needs:
// explain's list for this machine.
func (e Env) Mechanisms(g grant.Grant, n Need) []string {
	var out []string
	for _, p := range protections() {
		if !applies(p, g) {
			continue
		}
		c := e.Hold(p.Key, g, n)
		line := p.What + ": "
		if c.Held() {
			line += strings.Join(c.By, " + ")
			if c.Note != "" {
				line += " (" + c.Note + ")"
			}
		} else {
			line += "NOT HELD: " + c.Refused
		}
		out = append(out, line)
	}
	return out
}

// namedGrants are the matrix's grant columns.
func namedGrants() []struct {
	Name  string
	Grant grant.Grant
} {
	var out []struct {
		Name  string
		Grant grant.Grant
	}
	for _, n := range []string{"inspect", "verify", "write", "full"} {
		g, err := grant.Parse(n)
		if err != nil {
			continue
		}
		out = append(out, struct {
			Name  string
			Grant grant.Grant
		}{n, g})
	}
	return out
}

// Verdict is one grant column of a row: "runs", or "refused: ..." naming
// the protections nothing holds.
func (e Env) Verdict(g grant.Grant, n Need) string {
	rs := e.Refusals(g, n)
	if len(rs) == 0 {
		return "runs"
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Protection.Key)
	}
	return "refused (" + strings.Join(keys, ", ") + ")"
}

// fieldCell is a field column of a row: the mechanisms holding the
// field's protections (for the widest grant that needs them), or what is
// refused.
func (e Env) fieldCell(field string, n Need) string {
	wide := grant.Grant{Files: grant.FilesWrite, Shell: grant.ShellFull, Network: grant.NetworkOff, Desktop: grant.DesktopOff}
	seen := map[string]bool{}
	var by, refused []string
	for _, p := range protections() {
		if p.Field != field {
			continue
		}
		c := e.Hold(p.Key, wide, n)
		if !c.Held() {
			refused = append(refused, strings.TrimPrefix(p.Key, field+"."))
			continue
		}
		for _, m := range c.By {
			if !seen[m] {
				seen[m] = true
				by = append(by, m)
			}
		}
	}
	s := strings.Join(by, ", ")
	if len(refused) > 0 {
		s += "; refused: " + strings.Join(refused, ", ")
	}
	return s
}

// MatrixEnvs are the matrix's rows: each privilege setting at every
// Landlock ABI from 0 (none) to the newest the table knows that wrun uses.
func MatrixEnvs() []Env {
	var privs = []Env{
		{Root: true, SysAdmin: true, MountAPI: true},
		{Root: true, UserNS: true, MountAPI: true},
		{Root: true, MountAPI: true},
		{UserNS: true, MountAPI: true},
		{MountAPI: true},
		{UserNS: true, MountAPI: true, ProcMasked: true},
		{Nested: true, MountAPI: true},
	}
	var out []Env
	for _, p := range privs {
		for abi := 0; abi <= 7; abi++ {
			e := p
			e.Landlock = landlockKernel{ABI: abi, Errata: ^uint64(0)}
			out = append(out, e)
		}
	}
	return out
}

// MatrixMarkdown is the README's support matrix, generated from the table:
// rows that differ only in the ABI, with equal cells, are merged.
func MatrixMarkdown() string {
	var b strings.Builder
	n := Need{CreateBeside: true}
	gs := namedGrants()
	fmt.Fprintf(&b, "| environment | Landlock ABI |")
	for _, g := range gs {
		fmt.Fprintf(&b, " %s |", g.Name)
	}
	b.WriteString(" files | shell | network | desktop |\n|---|---|")
	for range gs {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|\n")
	type row struct {
		priv, cells string
		lo, hi      int
	}
	var rows []row
	for _, e := range MatrixEnvs() {
		var cells []string
		for _, g := range gs {
			cells = append(cells, e.Verdict(g.Grant, n))
		}
		for _, f := range []string{"files", "shell", "network", "desktop"} {
			cells = append(cells, e.fieldCell(f, n))
		}
		c := strings.Join(cells, " | ")
		if l := len(rows) - 1; l >= 0 && rows[l].priv == e.Privilege() && rows[l].cells == c {
			rows[l].hi = e.Landlock.ABI
			continue
		}
		rows = append(rows, row{e.Privilege(), c, e.Landlock.ABI, e.Landlock.ABI})
	}
	for _, r := range rows {
		abi := fmt.Sprint(r.lo)
		if r.hi > r.lo {
			abi = fmt.Sprintf("%d-%d", r.lo, r.hi)
		}
		if r.hi == 7 {
			abi += "+"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.priv, abi, r.cells)
	}
	return b.String()
}

// RefusalReasons lists, once each, every reason the matrix refuses for,
// with the protection it is about: the README prints them under the
// matrix.
func RefusalReasons() []string {
	seen := map[string]bool{}
	var out []string
	wide := grant.Grant{Files: grant.FilesWrite, Shell: grant.ShellFull, Network: grant.NetworkOff, Desktop: grant.DesktopOff}
	for _, e := range MatrixEnvs() {
		for _, r := range e.Refusals(wide, Need{CreateBeside: true}) {
			s := fmt.Sprintf("`%s` (%s): %s", r.Protection.Key, e.whyKey(), r.Why)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// whyKey groups rows for RefusalReasons.
func (e Env) whyKey() string {
	if e.stage() {
		return "with namespaces"
	}
	return "without namespaces"
}
