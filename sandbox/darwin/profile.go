package darwin

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// Platform names the enforcement, as the child sees it in WRUN_SANDBOX.
const Platform = "seatbelt"

// SandboxExec is the program that applies a profile and executes the
// command. Always by absolute path: no PATH entry can stand in for it.
const SandboxExec = "/usr/bin/sandbox-exec"

// Input is what a profile is generated from: the computed policy (the same
// one the Linux backend enforces, its --allow-unix sockets included) and
// what a run adds to it.
type Input struct {
	Policy *policy.Policy
	// RunID tags every denial of this run in the system log ("wrun-RUNID").
	// It enters the profile text, so it is limited to [0-9A-Za-z-].
	RunID string
	// Keychain opens the keychain services (the login keychain is a
	// credential store). No grant sets it today; it stays closed.
	Keychain bool
	// Canon canonicalises a path as macOS resolves it before matching
	// (Canonical with symbolic links resolved on a Mac). Nil applies only
	// the fixed /tmp, /var and /etc mappings.
	Canon func(string) string
}

// Param is one -D parameter of sandbox-exec: every path enters the profile
// this way, never as text.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Profile is a generated Seatbelt profile and its parameters.
type Profile struct {
	Text   string  `json:"profile"`
	Params []Param `json:"params"`
}

// Args returns the -D arguments of sandbox-exec, in order.
func (p Profile) Args() []string {
	out := make([]string, 0, 2*len(p.Params))
	for _, pr := range p.Params {
		out = append(out, "-D", pr.Name+"="+pr.Value)
	}
	return out
}

// Argv returns the whole command line that runs argv under the profile:
// sandbox-exec by absolute path, the profile, its parameters, then argv.
func (p Profile) Argv(argv []string) []string {
	out := []string{SandboxExec, "-p", p.Text}
	out = append(out, p.Args()...)
	return append(append(out, "--"), argv...)
}

// Canonical maps path onto the name macOS's sandbox matches: /tmp, /var
// and /etc are links into /private, and a profile naming /tmp would match
// nothing. resolve, when set, first resolves symbolic links (of the
// longest existing prefix, on a Mac: ResolveExisting).
func Canonical(path string, resolve func(string) string) string {
	path = filepath.Clean(path)
	if resolve != nil {
		path = filepath.Clean(resolve(path))
	}
	for _, l := range []string{"/tmp", "/var", "/etc"} {
		if path == l || strings.HasPrefix(path, l+"/") {
			return "/private" + path
		}
	}
	return path
}

// opGroup is a set of Seatbelt operations that one set of policy rights
// allows, checked the way Landlock checks those rights.
type opGroup struct {
	ops []string
	// need are the rights a rule must grant (all of them).
	need policy.Access
	// beneath: a directory right (make, remove, refer), which Landlock
	// checks on the parent directory and Seatbelt on the entry itself: the
	// entry must lie strictly beneath the rule's path.
	beneath bool
	// writes: the group changes what is at a path, so the protected paths
	// are carved out of it.
	writes bool
	// pinned: removing and renaming, so the pinned directories and the
	// directories above protected and hidden paths are carved out too.
	pinned bool
	// link: making a hard link, so the hidden paths whose contents are
	// withheld are carved out too (a link would be a second, readable name).
	link bool
	// noInject: an ioctl, which must never be TIOCSTI.
	noInject bool
	// filter narrows the object ("(vnode-type DIRECTORY)").
	filter string
}

// metadataOps change a file's mode, owner, times, flags or extended
// attributes. Landlock does not control them; here they follow write_file
// (stricter than Linux, never wider).
var metadataOps = []string{"file-write-mode", "file-write-owner", "file-write-times", "file-write-flags", "file-write-xattr"}

// opGroups maps the policy's rights onto Seatbelt operations, right by
// right. Seatbelt's file-read-data covers reading a file and listing a
// directory; vnode-type tells them apart as read_file and read_dir do.
var opGroups = []opGroup{
	{ops: []string{"file-read-data"}, need: policy.ReadDir, filter: `(vnode-type DIRECTORY)`},
	{ops: []string{"file-read-data", "file-read-xattr"}, need: policy.ReadFile, filter: `(require-not (vnode-type DIRECTORY))`},
	{ops: []string{"process-exec*", "file-map-executable"}, need: policy.Execute},
	{ops: append([]string{"file-write-data"}, metadataOps...), need: policy.WriteFile, writes: true},
	{ops: []string{"file-ioctl"}, need: policy.IoctlDev, noInject: true},
	{ops: []string{"file-write-create"}, need: policy.MakeReg | policy.MakeDir, beneath: true, writes: true},
	{ops: []string{"file-write-unlink"}, need: policy.RemoveFile | policy.RemoveDir, beneath: true, writes: true, pinned: true},
	{ops: []string{"file-link"}, need: policy.MakeReg | policy.Refer, beneath: true, writes: true, link: true},
	// The sandbox's own UNIX sockets: bound and connected to where it may
	// make sockets (its writable directories).
	{ops: []string{"network-bind", "network-outbound"}, need: policy.MakeSock, beneath: true, writes: true},
}

// noInject keeps an ioctl allow from typing into a terminal: TIOCSTI
// queues input that the shell reading the terminal runs once the command
// has ended. (ioctl-command TIOCSTI) needs macOS 13 or later.
const noInject = "(require-not (ioctl-command TIOCSTI))"

// runIDOK reports whether id may enter the profile text.
func runIDOK(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// gen builds a profile: its text and its parameters.
type gen struct {
	b      strings.Builder
	params []Param
	names  map[string]string // kind + value -> name
	counts map[string]int
}

// param returns the name of the parameter holding path, of kind (RULE,
// HIDE, ...), adding it the first time.
func (g *gen) param(kind, value string) string {
	key := kind + "\x00" + value
	if n, ok := g.names[key]; ok {
		return n
	}
	n := fmt.Sprintf("%s_%d", kind, g.counts[kind])
	g.counts[kind]++
	g.names[key] = n
	g.params = append(g.params, Param{Name: n, Value: value})
	return n
}

// has returns the name of the parameter of kind holding value, if any.
func (g *gen) has(kind, value string) (string, bool) {
	n, ok := g.names[kind+"\x00"+value]
	return n, ok
}

func (g *gen) line(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

func ref(name string) string { return `(param "` + name + `")` }

// carving is what is taken out of every allow: the hidden, protected and
// pinned paths, canonical.
type carving struct {
	holes []hole
	// protect are the protected paths (each as its name and, when it is
	// a symbolic link, as what it points to), with why.
	protect []protected
	// pins are directories that must not be removed or renamed: the
	// pinned repository directories, and the directories above protected
	// and hidden paths inside a tree whose entries may be removed.
	pins []pin
}

type hole struct {
	path     string
	withheld policy.Access
}

type protected struct{ path, why string }

type pin struct{ kind, path string }

// Generate builds the Seatbelt profile of in.Policy. Paths reach the
// profile only as parameters: the text depends on how the policy's paths
// relate (which lies within which), never on what they are.
//
// The profile holds every protection without depending on the order of
// its rules: it begins with (deny default), and each allow carries,
// as (require-not ...), every hidden, protected and pinned path it would
// otherwise cover. Whether Seatbelt lets the last matching rule decide, or
// a rule on a specific operation outrank one on a wildcard (peers report
// both from real Macs), what is refused is refused by no allow matching
// it. The only other denial, of process information, covers what (deny
// default) is said not to, and no allow takes any of it back but for the
// sandbox's own processes.
func Generate(in Input) (Profile, error) {
	p := in.Policy
	if p == nil {
		return Profile{}, errors.New("no policy")
	}
	if !runIDOK(in.RunID) {
		return Profile{}, fmt.Errorf("run id %q: want 1 to 64 letters, digits and dashes", in.RunID)
	}
	canon := func(path string) string { return Canonical(path, in.Canon) }
	// leaf canonicalises the directory of path and keeps its own name: a
	// symbolic link there is not followed.
	leaf := func(path string) string {
		path = filepath.Clean(path)
		if path == "/" {
			return path
		}
		return filepath.Join(canon(filepath.Dir(path)), filepath.Base(path))
	}
	for _, s := range p.IPC.UnixSockets {
		if !filepath.IsAbs(s) {
			return Profile{}, fmt.Errorf("UNIX socket %q: not an absolute path", s)
		}
	}
	g := &gen{names: map[string]string{}, counts: map[string]int{}}
	tag := `(with message "` + Tag(in.RunID) + `")`
	desktopOn := p.Grant.Desktop == grant.DesktopOn
	open := func(w when) bool {
		switch w {
		case network:
			return p.Network.Allow
		case desktop:
			return desktopOn
		case keychain:
			return in.Keychain
		}
		return true
	}

	type rule struct {
		path string
		acc  policy.Access
	}
	var rules []rule
	for _, r := range p.Rules {
		rules = append(rules, rule{canon(r.Path), r.Access})
	}
	var cv carving
	for _, h := range p.Hidden {
		cv.holes = append(cv.holes, hole{canon(h.Path), h.Withheld})
	}
	// removable reports whether entries strictly beneath some rule may be
	// removed at path: then it can be renamed or removed.
	removable := func(path string) bool {
		for _, r := range rules {
			if r.acc&(policy.RemoveFile|policy.RemoveDir) != 0 && policy.Within(path, r.path) && path != r.path {
				return true
			}
		}
		return false
	}
	var anchors []string // paths whose ancestors must not move
	for _, h := range cv.holes {
		if h.withheld&policy.ReadFile != 0 && removable(h.path) {
			anchors = append(anchors, h.path)
		}
	}
	for _, pr := range p.Protected {
		// The path itself, its directory resolved (a protected path that
		// is a symbolic link is protected as the link), and, when it is
		// a link, also what it points to.
		paths := []string{leaf(pr.Path)}
		if full := canon(pr.Path); full != paths[0] {
			paths = append(paths, full)
		}
		for _, path := range paths {
			if pr.Pin {
				cv.pins = append(cv.pins, pin{"PIN", path})
			} else {
				cv.protect = append(cv.protect, protected{path, pr.Why})
			}
			anchors = append(anchors, path)
		}
	}
	// Seatbelt matches paths, not files: renaming a directory above a
	// protected or hidden path would move it out from under its rule.
	for _, a := range anchors {
		for d := filepath.Dir(a); d != "/" && d != "."; d = filepath.Dir(d) {
			if removable(d) && !slices.ContainsFunc(cv.pins, func(pn pin) bool { return pn.path == d }) {
				cv.pins = append(cv.pins, pin{"ABOVE", d})
			}
		}
	}

	g.line("(version 1)")
	g.line(";; wrun: grant %s. Generated from the computed policy; every path is a parameter (-D).", sanitizeComment(p.GrantSpec))
	g.line(";; Every allow below takes out, with require-not, what it must not cover: no rule")
	g.line(";; denies anything an allow grants, so the order of the rules decides nothing.")
	g.line("(deny default %s)", tag)
	g.line("")
	g.line(";; Processes: forking and executing (where the policy allows execute, below).")
	g.line("(allow process-fork)")
	if p.IPC.SignalOutside {
		g.line("(allow signal)")
	} else {
		g.line(";; Signals only within this sandbox.")
		g.line("(allow signal (target same-sandbox))")
	}
	if desktopOn {
		g.line(";; desktop=on: process information about any process (ps, pgrep, top).")
		g.line("(allow process-info*)")
	} else {
		g.line(";; Process information only within this sandbox; (deny default) is said not to")
		g.line(";; cover it, so it is denied first for every other process.")
		g.line("(deny process-info* %s)", tag)
		g.line("(allow process-info* (target same-sandbox))")
	}
	g.line(";; sysctl: these names only. Never kern.procargs2 or kern.procargs: the arguments")
	g.line(";; and environment of every process of the user.")
	g.line("(allow sysctl-read")
	for _, s := range sysctlReads {
		if !open(s.when) {
			continue
		}
		if s.prefix {
			g.line(`  (sysctl-name-prefix "%s")`, s.name)
		} else {
			g.line(`  (sysctl-name "%s")`, s.name)
		}
	}
	g.line(")")
	g.line(";; Metadata (stat, access) everywhere, as on Linux: Landlock does not restrict it.")
	g.line("(allow file-read-metadata file-test-existence)")
	g.line("")
	g.line(";; Terminals. New pseudo-terminals through /dev/ptmx, and those the sandbox made")
	g.line(";; (they carry the pty extension); no other terminal can be opened, as /dev/pts on")
	g.line(";; Linux: reading one steals its keystrokes.")
	g.line("(allow pseudo-tty)")
	g.line(`(allow file-read-data file-write-data (literal "/dev/ptmx"))`)
	g.line(`(allow file-read-data file-write-data (require-all (regex #"^/dev/ttys[0-9]+$") (extension "%s")))`, ptyExtension)
	g.line(";; Terminal ioctls (window size, modes, job control) on those and on terminals the")
	g.line(";; command holds open already, such as the one it inherits; dyld's registration")
	g.line(";; through /dev/dtracehelper at every start. Never TIOCSTI, which types into a")
	g.line(";; terminal what its shell runs once the command has ended.")
	g.line(`(allow file-ioctl (require-all (require-any (literal "/dev/ptmx") (literal "/dev/dtracehelper") (regex #"^/dev/ttys[0-9]+$")) %s))`, noInject)
	g.line(`(allow file-read-data file-write-data (literal "/dev/dtracehelper"))`)
	g.line(";; /dev/fd/N: the descriptors the command holds already (<(...) in bash, /dev/stdout).")
	g.line(`(allow file-read-data file-write-data (subpath "/dev/fd"))`)
	g.line("")
	g.line(";; IPC. Shared memory the system's libraries read: notify(3) and preferences.")
	g.line(`(allow ipc-posix-shm-read* (ipc-posix-name "apple.shm.notification_center") (ipc-posix-name-prefix "apple.cfprefs."))`)
	g.line(";; POSIX semaphores (python's multiprocessing locks). Their names are the user's,")
	g.line(";; not the sandbox's: a command can open another process's semaphore by its name.")
	g.line("(allow ipc-posix-sem)")
	g.line(";; Preferences: the global domain only (locale, units). An application's own domain")
	g.line(";; is the hidden home's data, and cfprefsd answers only what this opens.")
	g.line(`(allow user-preference-read (preference-domain "kCFPreferencesAnyApplication"))`)
	g.line("")
	g.line(";; Mach services, each named with why:")
	var globals, locals []string
	for _, s := range machServices {
		state := "closed"
		if open(s.when) {
			state = "open"
			globals = append(globals, s.name)
			if s.local {
				locals = append(locals, s.name)
			}
		}
		g.line(";;   %s (%s): %s", s.name, state, s.why)
	}
	g.line("(allow mach-lookup")
	for _, n := range globals {
		g.line(`  (global-name "%s")`, n)
	}
	for _, n := range locals {
		g.line(`  (local-name "%s")`, n)
	}
	g.line(")")
	if desktopOn {
		g.line(";; desktop=on: Apple Events to other applications.")
		g.line("(allow appleevent-send)")
	}
	g.line("")

	// The file system: one allow per rule and group of operations, each
	// taking out what it must not cover. Only allows, so their order does
	// not matter: an operation is allowed when any of them matches.
	g.line(";; File system, rule by rule of the policy.")
	for i, r := range rules {
		src := p.Rules[i]
		first := true
		for _, og := range opGroups {
			if r.acc&og.need != og.need {
				continue
			}
			if first {
				g.line(";; %s: %s (%s)", g.param("RULE", r.path), sanitizeComment(src.Source), sanitizeComment(src.Access.Words()))
				first = false
			}
			rp := g.param("RULE", r.path)
			g.b.WriteString(allowStatement(og.ops, rp, g.carve(og, r.path, cv)))
		}
	}
	g.line("")
	if len(cv.protect) > 0 || len(cv.pins) > 0 {
		g.line(";; Taken out of the allows above (none of them covers these):")
		for _, pr := range cv.protect {
			if n, ok := g.has("PROTECT", pr.path); ok {
				g.line(";;   %s: never written, created, removed, renamed or linked: %s", n, sanitizeComment(pr.why))
			}
		}
		for _, pn := range cv.pins {
			if n, ok := g.has(pn.kind, pn.path); ok {
				why := "a directory above a protected or hidden path: a rule follows the path, so it must not move"
				if pn.kind == "PIN" {
					why = "pinned: not removed or renamed"
				}
				g.line(";;   %s: %s", n, why)
			}
		}
		g.line("")
	}

	g.line(";; Network and UNIX sockets. Making a UNIX socket reaches nothing: connecting and")
	g.line(";; binding are checked by path (the sandbox's own, above, in its writable directories).")
	g.line("(allow system-socket (socket-domain AF_UNIX))")
	if p.Network.Allow {
		g.line(";; network=on: outbound connections anywhere, and listening on local addresses.")
		g.line("(allow network-outbound (remote ip))")
		g.line("(allow network-bind network-inbound (local ip))")
		g.line(";; DNS: getaddrinfo asks mDNSResponder over its UNIX socket and orders the answers")
		g.line(";; through the netsrc kernel control; route sockets follow network changes.")
		g.line(`(allow network-outbound (literal "%s") (control-name "com.apple.netsrc"))`, mDNSResponderSocket)
		g.line("(allow system-socket (socket-domain AF_ROUTE) (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))")
	} else {
		g.line(";; network=off: no IP connection, no listening, no DNS; its services are closed above.")
	}
	if p.IPC.PathUnixOutside {
		g.line(";; desktop=on: UNIX sockets outside the sandbox (the agent, other applications).")
		g.line(`(allow network-outbound (subpath "/"))`)
	} else if len(p.IPC.UnixSockets) > 0 {
		g.line(";; UNIX sockets named for this run (--allow-unix): the socket at that path itself,")
		g.line(";; its directory resolved; a symbolic link there leads nowhere.")
		for _, s := range p.IPC.UnixSockets {
			g.line("(allow network-outbound (literal %s))", ref(g.param("SOCKET", leaf(s))))
		}
	}
	return Profile{Text: g.b.String(), Params: g.params}, nil
}

// carve returns the conditions that narrow og's allow on the rule at path
// rp to what it may cover.
func (g *gen) carve(og opGroup, rp string, cv carving) []string {
	var conds []string
	if og.beneath {
		conds = append(conds, "(require-not (literal "+ref(g.param("RULE", rp))+"))")
	}
	for _, h := range cv.holes {
		withheld := h.withheld&og.need != 0 || og.link && h.withheld&policy.ReadFile != 0
		if withheld && policy.Within(h.path, rp) {
			conds = append(conds, "(require-not (subpath "+ref(g.param("HIDE", h.path))+"))")
		}
	}
	if og.writes {
		// A protected path beneath the rule, or one the rule lies in (a
		// rule inside a protected tree does not open it).
		for _, pr := range cv.protect {
			if policy.Within(pr.path, rp) || policy.Within(rp, pr.path) {
				n := ref(g.param("PROTECT", pr.path))
				conds = append(conds, "(require-not (literal "+n+")) (require-not (subpath "+n+"))")
			}
		}
	}
	if og.pinned {
		for _, pn := range cv.pins {
			if policy.Within(pn.path, rp) && pn.path != rp {
				conds = append(conds, "(require-not (literal "+ref(g.param(pn.kind, pn.path))+"))")
			}
		}
	}
	if og.filter != "" {
		conds = append(conds, og.filter)
	}
	if og.noInject {
		conds = append(conds, noInject)
	}
	return conds
}

// allowStatement writes (allow OPS (subpath RULE)), narrowed by conds.
func allowStatement(ops []string, rule string, conds []string) string {
	if len(conds) == 0 {
		return "(allow " + strings.Join(ops, " ") + " (subpath " + ref(rule) + "))\n"
	}
	var b strings.Builder
	b.WriteString("(allow " + strings.Join(ops, " ") + " (require-all (subpath " + ref(rule) + ")\n")
	for _, c := range conds {
		b.WriteString("  " + c + "\n")
	}
	b.WriteString("))\n")
	return b.String()
}

// sanitizeComment keeps a comment on one line of harmless characters: a
// policy's words are not paths, but nothing from outside may break out of
// a comment.
func sanitizeComment(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
