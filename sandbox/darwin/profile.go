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
// one the Linux backend enforces) and what a run adds to it.
type Input struct {
	Policy *policy.Policy
	// RunID tags every denial of this run in the system log ("wrun-RUNID").
	// It enters the profile text, so it is limited to [0-9A-Za-z-].
	RunID string
	// AllowUnix are pathname UNIX sockets outside the sandbox the child may
	// connect to although desktop is off (a named socket, --allow-unix).
	AllowUnix []string
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
	{ops: append([]string{"file-write-data"}, metadataOps...), need: policy.WriteFile},
	{ops: []string{"file-ioctl"}, need: policy.IoctlDev},
	{ops: []string{"file-write-create"}, need: policy.MakeReg | policy.MakeDir, beneath: true},
	{ops: []string{"file-write-unlink"}, need: policy.RemoveFile | policy.RemoveDir, beneath: true},
	{ops: []string{"file-link"}, need: policy.MakeReg | policy.Refer, beneath: true},
	// The sandbox's own UNIX sockets: bound and connected to where it may
	// make sockets (its writable directories).
	{ops: []string{"network-bind", "network-outbound"}, need: policy.MakeSock, beneath: true},
}

// The mach services, each with why it is open and what it risks.
type machService struct {
	name, why string
	// when: "" always, "network" with network=on, "desktop" with
	// desktop=on, "keychain" when Input.Keychain is set.
	when string
}

var machServices = []machService{
	{"com.apple.system.opendirectoryd.libinfo", "user and group names (getpwuid, getgrgid): ls -l, id, git, ssh", ""},
	{"com.apple.system.notification_center", "notify(3), which libinfo and the resolver use to learn of changes", ""},
	{"com.apple.system.DirectoryService.libinfo_v1", "user and group names on older systems", ""},
	{"com.apple.mDNSResponder", "DNS name resolution; a DNS query carries data to any domain's name servers (an exfiltration route), so only with network=on", "network"},
	{"com.apple.trustd", "TLS certificate checks (Security framework: go, cargo, git, curl); trustd fetches revocation data and intermediates on the child's behalf (an exfiltration route), so only with network=on", "network"},
	{"com.apple.trustd.agent", "TLS certificate checks against the user's trust settings; network=on only, as trustd", "network"},
	{"com.apple.ocspd", "certificate revocation (OCSP, CRL) on older systems; network=on only", "network"},
	{"com.apple.SecurityServer", "the keychain (securityd): a credential store, git credential-osxkeychain reads it; closed unless the grant opens it", "keychain"},
	{"com.apple.securityd.xpc", "the keychain (securityd over XPC); closed unless the grant opens it", "keychain"},
	{"com.apple.windowserver.active", "the window server (desktop=on)", "desktop"},
	{"com.apple.pasteboard.1", "the pasteboard: reading it takes whatever the user copied (desktop=on)", "desktop"},
	{"com.apple.coreservices.appleevents", "Apple Events: scripting other applications (desktop=on)", "desktop"},
	{"com.apple.coreservices.launchservicesd", "opening documents and applications (open(1)) (desktop=on)", "desktop"},
	{"com.apple.axserver", "accessibility (desktop=on)", "desktop"},
}

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
	msg    string
}

// param returns the name of the parameter holding path, of kind (READ,
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

func (g *gen) line(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

func ref(name string) string { return `(param "` + name + `")` }

// Generate builds the Seatbelt profile of in.Policy. Paths reach the
// profile only as parameters: the text depends on how the policy's paths
// relate (which lies within which), never on what they are.
func Generate(in Input) (Profile, error) {
	p := in.Policy
	if p == nil {
		return Profile{}, errors.New("no policy")
	}
	if !runIDOK(in.RunID) {
		return Profile{}, fmt.Errorf("run id %q: want 1 to 64 letters, digits and dashes", in.RunID)
	}
	canon := func(path string) string { return Canonical(path, in.Canon) }
	leaf := func(path string) string {
		path = filepath.Clean(path)
		if path == "/" {
			return path
		}
		return filepath.Join(canon(filepath.Dir(path)), filepath.Base(path))
	}
	for _, s := range in.AllowUnix {
		if !filepath.IsAbs(s) {
			return Profile{}, fmt.Errorf("UNIX socket %q: not an absolute path", s)
		}
	}
	g := &gen{names: map[string]string{}, counts: map[string]int{}, msg: "wrun-" + in.RunID}
	tag := `(with message "` + g.msg + `")`

	// Canonical copies of the policy's paths.
	type rule struct {
		path string
		acc  policy.Access
	}
	var rules []rule
	for _, r := range p.Rules {
		rules = append(rules, rule{canon(r.Path), r.Access})
	}
	type hole struct {
		path     string
		withheld policy.Access
	}
	var holes []hole
	for _, h := range p.Hidden {
		holes = append(holes, hole{canon(h.Path), h.Withheld})
	}

	desktop := p.Grant.Desktop == grant.DesktopOn

	g.line("(version 1)")
	g.line(";; wrun: grant %s. Generated from the computed policy; every path is a parameter (-D).", sanitizeComment(p.GrantSpec))
	g.line("(deny default %s)", tag)
	g.line("")
	g.line(";; Processes: forking and executing (where the policy allows execute, below);")
	g.line(";; signals and process information only within this sandbox.")
	g.line("(allow process-fork)")
	if p.IPC.SignalOutside {
		g.line("(allow signal)")
	} else {
		g.line("(allow signal (target same-sandbox))")
	}
	g.line("(allow process-info* (target same-sandbox))")
	g.line(";; Reading system settings (CPU count, page size, OS version), never writing them.")
	g.line("(allow sysctl-read)")
	g.line(";; Metadata (stat, access) everywhere, as on Linux: Landlock does not restrict it.")
	g.line("(allow file-read-metadata file-test-existence)")
	g.line(";; Pseudo-terminals: new ones through /dev/ptmx. Other terminals (/dev/ttys*) stay")
	g.line(";; closed, as /dev/pts on Linux: reading one steals its keystrokes.")
	g.line("(allow pseudo-tty)")
	g.line(`(allow file-read-data file-write-data file-ioctl (literal "/dev/ptmx"))`)
	g.line(";; Terminal ioctls (window size, job control) on terminals the command already")
	g.line(";; holds open, such as the one it inherits: opening one is not allowed here.")
	g.line(`(allow file-ioctl (regex #"^/dev/ttys[0-9]+$"))`)
	g.line(";; libnotify's shared memory (with the notification service below).")
	g.line(`(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))`)
	g.line("")
	g.line(";; Mach services, each named with why:")
	var open []string
	for _, s := range machServices {
		on := false
		switch s.when {
		case "":
			on = true
		case "network":
			on = p.Network.Allow
		case "desktop":
			on = desktop
		case "keychain":
			on = in.Keychain
		}
		state := "closed"
		if on {
			state = "open"
			open = append(open, s.name)
		}
		g.line(";;   %s (%s): %s", s.name, state, s.why)
	}
	if len(open) > 0 {
		g.line("(allow mach-lookup")
		for _, n := range open {
			g.line(`  (global-name "%s")`, n)
		}
		g.line(")")
	}
	if desktop {
		g.line(";; desktop=on: Apple Events to other applications.")
		g.line("(allow appleevent-send)")
	}
	g.line("")

	// The file system: one allow per rule and group of operations, each
	// taking out the hidden paths beneath the rule that withhold its
	// rights. Only allows, so their order does not matter: an operation
	// is allowed when any of them matches.
	g.line(";; File system, rule by rule of the policy.")
	linkAllow := map[int]string{} // rule index -> its file-link allow
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
			var conds []string
			if og.beneath {
				conds = append(conds, "(require-not (literal "+ref(rp)+"))")
			}
			for _, h := range holes {
				if h.withheld&og.need != 0 && policy.Within(h.path, r.path) {
					conds = append(conds, "(require-not (subpath "+ref(g.param("HIDE", h.path))+"))")
				}
			}
			if og.filter != "" {
				conds = append(conds, og.filter)
			}
			st := allowStatement(og.ops, rp, conds)
			g.b.WriteString(st)
			if og.ops[0] == "file-link" {
				linkAllow[i] = st
			}
		}
	}
	g.line("")

	// Denials after every allow: Seatbelt takes the last matching rule.
	writable := func(path string) bool {
		for _, r := range rules {
			if r.acc&(policy.RemoveFile|policy.RemoveDir) != 0 && policy.Within(path, r.path) && path != r.path {
				return true
			}
		}
		return false
	}
	var anchors []string // paths whose ancestors must not move
	g.line(";; Hidden paths are never the source of a hard link; the writable rules inside")
	g.line(";; them link again (the later rule wins).")
	for _, h := range holes {
		if h.withheld&policy.ReadFile != 0 {
			g.line("(deny file-link (subpath %s) %s)", ref(g.param("HIDE", h.path)), tag)
			if writable(h.path) {
				anchors = append(anchors, h.path)
			}
		}
	}
	for i, r := range rules {
		for _, h := range holes {
			if st, ok := linkAllow[i]; ok && h.withheld&policy.ReadFile != 0 && policy.Within(r.path, h.path) {
				g.b.WriteString(st)
				break
			}
		}
	}
	g.line(";; Protected paths: never written, created, removed, renamed or linked, even")
	g.line(";; inside a writable tree; the path itself and everything beneath it, so a")
	g.line(";; protected directory cannot be created either.")
	for _, pr := range p.Protected {
		// The path itself, its directory resolved (a protected path that
		// is a symbolic link is protected as the link), and, when it is
		// a link, also what it points to.
		path := leaf(pr.Path)
		paths := []string{path}
		if full := canon(pr.Path); full != path {
			paths = append(paths, full)
		}
		for _, path := range paths {
			if pr.Pin {
				n := g.param("PIN", path)
				g.line(";; pinned: %s", sanitizeComment(pr.Why))
				g.line("(deny file-write-unlink (literal %s) %s)", ref(n), tag)
			} else {
				n := g.param("PROTECT", path)
				g.line(";; %s", sanitizeComment(pr.Why))
				g.line("(deny file-write* file-link network-bind (literal %s) (subpath %s) %s)", ref(n), ref(n), tag)
			}
			anchors = append(anchors, path)
		}
	}
	// Seatbelt matches paths, not files: renaming a directory above a
	// protected or hidden path would move it out from under its rule.
	var ancestors []string
	for _, a := range anchors {
		for d := filepath.Dir(a); d != "/" && d != "."; d = filepath.Dir(d) {
			if writable(d) && !slices.Contains(ancestors, d) {
				ancestors = append(ancestors, d)
			}
		}
	}
	if len(ancestors) > 0 {
		g.line(";; Directories above protected and hidden paths: not removed or renamed, since")
		g.line(";; the protection follows the path, not the directory.")
		for _, d := range ancestors {
			g.line("(deny file-write-unlink (literal %s) %s)", ref(g.param("ABOVE", d)), tag)
		}
	}
	g.line("")

	g.line(";; Network.")
	if p.Network.Allow {
		g.line(";; network=on: outbound connections anywhere, and listening on local addresses.")
		g.line("(allow network-outbound (remote ip))")
		g.line("(allow network-bind network-inbound (local ip))")
	} else {
		g.line(";; network=off: no IP connection, no listening; DNS and certificate services closed above.")
	}
	if p.IPC.PathUnixOutside {
		g.line(";; desktop=on: UNIX sockets outside the sandbox (the agent, other applications).")
		g.line(`(allow network-outbound (subpath "/"))`)
	}
	if len(in.AllowUnix) > 0 {
		g.line(";; UNIX sockets named for this run.")
		for _, s := range in.AllowUnix {
			g.line("(allow network-outbound (literal %s))", ref(g.param("SOCKET", canon(s))))
		}
	}
	return Profile{Text: g.b.String(), Params: g.params}, nil
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
