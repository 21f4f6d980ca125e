package escalate

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
)

// The kinds of Alternative, in the order they are offered (narrowest
// first). KindBeyondCeiling replaces an alternative the ceiling forbids.
const (
	// KindRoute is a sanctioned way that widens nothing for this command,
	// or runs a different command first (cargo fetch, then --offline).
	KindRoute = "route"
	// KindAllowWrite adds one writable path (--allow-write PATH).
	KindAllowWrite = "allow-write"
	// KindAllowRead adds one readable path (--allow-read PATH): the file
	// or directory whose read was refused, exactly, which opens it even
	// where it is hidden (policy: a grant of exactly a hidden path opens
	// it). No grant field bounds reads, so the ceiling does not either;
	// approving one always takes naming it (Sensitive).
	KindAllowRead = "allow-read"
	// KindAllowUnix adds one UNIX socket outside the sandbox the child may
	// connect and send to (--allow-unix PATH): narrower than desktop=on,
	// and bounded by the ceiling as desktop=on is.
	KindAllowUnix = "allow-unix"
	// KindAllowHost adds one host the child may reach (--allow-host
	// HOST:PORT): under network=loopback a loopback service of the host,
	// the denied address itself. Narrower than network=on, and bounded by
	// the ceiling as the network value the entry needs is.
	KindAllowHost = "allow-host"
	// KindGrant changes grant fields (--grant SPEC).
	KindGrant = "grant"
	// KindAskParent hands the decision to whoever started the run.
	KindAskParent = "ask-parent"
	// KindBeyondCeiling is an alternative the ceiling forbids, kept so the
	// request says why it is not offered. It cannot be approved.
	KindBeyondCeiling = "beyond-ceiling"
)

// kindRank orders the kinds from the narrowest; -1 for an unknown kind.
func kindRank(kind string) int {
	switch kind {
	case KindRoute:
		return 0
	case KindAllowWrite, KindAllowRead, KindAllowUnix, KindAllowHost:
		return 1
	case KindGrant:
		return 2
	case KindAskParent:
		return 3
	}
	return -1
}

// ruleDef is one kind of denial: the grant field (or FieldProtected,
// FieldHidden, FieldBoundary, FieldUnknown) that withholds it, and the
// words for it.
type ruleDef struct {
	ID    string
	Field string
	Short string
	Why   string
}

// altDef is one alternative of the table: what it is (Kind), which rules
// it is offered for ("*": every rule), when (When), the grant fields it
// changes (Set: a grant alternative's widening, a route's grant), the path
// an allow-write, allow-read or allow-unix alternative names ("{path}" the
// denied path, "{narrowest}" the narrowest existing path that allows the
// act, "{cache_dir}" the tool cache's directory), its words and, for a
// route, the wrun command lines to run ("{argv}" as a whole token is the
// command's words; "{argv+FLAG}" with FLAG put after cargo's or npm's
// subcommand).
type altDef struct {
	ID          string
	Rules       []string
	Kind        string
	When        when
	Set         map[string]string
	Path        string
	Description string
	Try         string
	Commands    [][]string
}

// when are the conditions of an alternative; an empty one always holds.
type when struct {
	// Command, NotCommand: the run's program is (is not) one of these.
	Command, NotCommand []string
	// Program, NotProgram: the denied process is (is not) one of these (a
	// tool that writes where it must, not where it is told).
	Program, NotProgram []string
	// Tool: the tool cache (policy's ToolCache.Tool) is one of these.
	Tool []string
	// Base: the denied file's name is one of these.
	Base []string
	// If: named predicates, each of which must hold: "full-covers"
	// (shell=full would make the path writable), "shell-verify" (the grant
	// has shell=verify), "exists" (the path to allow exists), "missing"
	// (the denied path does not exist).
	If []string
}

var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{[a-z_]+(\+[^}]*)?\}`) })

// ruleOf returns the rule with id, or the unknown rule.
func ruleOf(id string) ruleDef {
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	return ruleDef{ID: id, Field: FieldUnknown, Short: "the sandbox refused it", Why: "wrun could not tell which part of the grant withheld this"}
}

// expander fills placeholders for one finding and (optionally) one
// alternative.
type expander struct {
	a          *Analyzer
	f          finding
	target     string
	newGrant   grant.Grant
	routeGrant grant.Grant
}

func (a *Analyzer) expander(f finding, alt *altDef) *expander {
	x := &expander{a: a, f: f, newGrant: a.p.Grant, routeGrant: a.p.Grant}
	if alt != nil {
		g := applySet(a.p.Grant, alt.Set)
		if alt.Kind == KindRoute {
			x.routeGrant = g
		} else {
			x.newGrant = g
		}
	}
	return x
}

func (x *expander) value(p string) string {
	g := x.a.p.Grant
	switch p {
	case "{path}":
		return quote.Word(x.f.path)
	case "{addr}":
		return quote.Word(x.f.d.Addr)
	case "{target}":
		return quote.Word(x.target)
	case "{cache}":
		if x.f.cache != nil {
			return x.f.cache.Name
		}
		return "the tool cache"
	case "{why}":
		return quote.Line(x.f.why)
	case "{hole}":
		return quote.Word(x.f.hole)
	case "{files}":
		return g.Files.String()
	case "{shell}":
		return g.Shell.String()
	case "{network}":
		return g.Network.String()
	case "{desktop}":
		return g.Desktop.String()
	case "{grant}":
		return g.Spec()
	case "{new_grant}":
		return x.newGrant.Spec()
	case "{route_grant}":
		return x.routeGrant.Spec()
	case "{command}":
		return shellJoin(x.a.argv())
	}
	if flag, ok := strings.CutPrefix(p, "{argv+"); ok {
		return shellJoin(withFlag(x.a.argv(), strings.TrimSuffix(flag, "}")))
	}
	if p == "{argv}" {
		return shellJoin(x.a.argv())
	}
	return p
}

func (x *expander) text(s string) string {
	return placeholderRE().ReplaceAllStringFunc(s, x.value)
}

// tokens expands one command: {argv} and {argv+FLAG} as whole tokens
// become the command's words.
func (x *expander) tokens(cmd []string) []string {
	var out []string
	for _, t := range cmd {
		switch {
		case t == "{argv}":
			out = append(out, x.a.argv()...)
		case strings.HasPrefix(t, "{argv+") && strings.HasSuffix(t, "}"):
			out = append(out, withFlag(x.a.argv(), strings.TrimSuffix(strings.TrimPrefix(t, "{argv+"), "}"))...)
		default:
			out = append(out, x.text(t))
		}
	}
	return out
}

// applySet returns g with the fields of set changed.
func applySet(g grant.Grant, set map[string]string) grant.Grant {
	if len(set) == 0 {
		return g
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	spec := g.String()
	// Parse takes a preset first; rebuild from the canonical fields with
	// the changes in place of the old values.
	parts := strings.Split(spec, ",")
	for i, part := range parts {
		k, _, _ := strings.Cut(part, "=")
		if v, ok := set[k]; ok {
			parts[i] = k + "=" + v
		}
	}
	out, err := grant.Parse(strings.Join(parts, ","))
	if err != nil {
		return g // the catalogue check makes this unreachable
	}
	return out
}

// withFlag puts flag after the subcommand of a cargo or npm command line
// (before any "--"), or at the end of any other; it changes nothing if the
// flag is already there.
func withFlag(argv []string, flag string) []string {
	if len(argv) == 0 || slices.Contains(argv, flag) {
		return slices.Clone(argv)
	}
	end := len(argv)
	if i := slices.Index(argv, "--"); i > 0 {
		end = i
	}
	at := end
	switch filepath.Base(argv[0]) {
	case "cargo", "npm", "go":
		for i := 1; i < end; i++ {
			if !strings.HasPrefix(argv[i], "-") && !strings.HasPrefix(argv[i], "+") {
				at = i + 1
				break
			}
		}
	}
	out := slices.Clone(argv[:at])
	out = append(out, flag)
	return append(out, argv[at:]...)
}

// shellJoin renders words as one POSIX shell command line.
func shellJoin(words []string) string { return quote.Words(words) }

// rules are the kinds of denial: the grant field or policy entry that
// withholds each, and the words for it. Placeholders: see expander.value.
var rules = []ruleDef{
	{ID: "workspace-read-only", Field: "files",
		Short: "files={files} keeps the workspace read-only",
		Why:   "the grant's files={files} lets the child read the workspace, not change it"},
	{ID: "lockfile", Field: "files",
		Short: "files={files} keeps the lock file read-only",
		Why:   "the workspace is read-only under files={files}, so a stale or missing lock file is not rewritten"},
	{ID: "workspace-hidden", Field: "files",
		Short: "files=none hides the workspace",
		Why:   "the grant's files=none keeps the workspace out of the child's sight"},
	{ID: "verify-scope", Field: "shell",
		Short: "shell={shell} writes nothing but /dev/null and TMPDIR; shell=verify would allow this build output",
		Why:   "the path is in verify mode's bounded write scope (build outputs, test temp files, git plumbing), which shell={shell} does not open"},
	{ID: "outside-scope", Field: "shell",
		Short: "no rule of the grant makes it writable",
		Why:   "outside the workspace, shell={shell} makes writable only its bounded scope (the private TMPDIR, build outputs), and this path is not in it"},
	{ID: "worktree-git-state", Field: "files",
		Short: "files={files} keeps this linked worktree's git state read-only",
		Why:   "a linked worktree's own git state (its index, HEAD and logs, its branch's ref and reflog) lies in the main repository's git dir; files=write opens it for this worktree alone, the main repository's config, hooks and other branches staying protected"},
	{ID: "tool-cache", Field: "shell",
		Short: "shell={shell} keeps {cache} read-only",
		Why:   "{cache} is shared with unsandboxed builds: an entry a sandboxed child planted there would be used by the next build run outside the sandbox"},
	{ID: "refer-gain", Field: "shell",
		Short: "moving it there would give it rights it does not have where it is",
		Why:   "Landlock refuses (EXDEV) to move or link a file into a directory where the grant gives it more rights than where it is"},
	{ID: "protected", Field: "protected",
		Short: "protected: {why}",
		Why:   "{why}"},
	{ID: "protected-ancestor", Field: "protected",
		Short: "nothing new may be created beside protected {hole}",
		Why:   "without a mount namespace (wrun lacks CAP_SYS_ADMIN) protected paths are carved out of the writable rules, and a directory holding one cannot get new entries: {why}"},
	{ID: "hidden", Field: "hidden",
		Short: "hidden: {why}",
		Why:   "{why}"},
	{ID: "not-readable", Field: "hidden",
		Short: "outside what the child reads; --allow-read {path} opens it",
		Why:   "the child reads the system's directories, the workspace, its private temp dir, the toolchains and the directories on PATH, and what --allow-read names; this path is none of them"},
	{ID: "hidden-ancestor", Field: "hidden",
		Short: "nothing new may be created beside hidden {hole}",
		Why:   "hidden paths are carved out of the broader rules, and a directory holding one cannot get new entries: {why}"},
	{ID: "network-off", Field: "network",
		Short: "network=off",
		Why:   "the grant's network=off allows no TCP and no socket family but UNIX"},
	{ID: "network-loopback", Field: "network",
		Short: "network={network} reaches loopback only: sockets this run bound, and the host's services --allow-host names",
		Why:   "the grant's network={network} lets the child bind only to loopback addresses and connect or send only to sockets its own sandbox bound in this run, to the host's loopback services an --allow-host names and, under network=hosts, to wrun's proxy (HTTPS_PROXY, HTTP_PROXY); this address is none of them"},
	{ID: "network-hosts", Field: "network",
		Short: "network=hosts reaches only the hosts --allow-host, the repository's remotes and your registries name, through wrun's proxy",
		Why:   "the grant's network=hosts lets the child reach hosts beyond loopback only through wrun's proxy (HTTPS_PROXY, HTTP_PROXY), which connects only to hosts an --allow-host, a remote in the repository's .git/config or a registry of the user's own configuration names (wrun explain lists them; a workspace's own .npmrc or .cargo/config.toml counts for nothing), and to a loopback, private or link-local address only for an entry naming the host exactly; this host is none of them"},
	{ID: "unix-socket", Field: "desktop",
		Short: "desktop=off allows no UNIX socket outside the sandbox; --allow-unix PATH allows that one socket",
		Why:   "desktop=off: the child may not connect or send to UNIX sockets bound outside its sandbox (the D-Bus session bus, an ssh agent, a docker socket, a terminal multiplexer); --allow-unix PATH lets it reach one socket, narrower than desktop=on"},
	{ID: "abstract-socket", Field: "desktop",
		Short: "desktop=off allows no abstract UNIX socket outside the sandbox",
		Why:   "desktop=off: the child may not connect to abstract UNIX sockets bound outside its sandbox (X11, D-Bus)"},
	{ID: "abstract-bind", Field: "desktop",
		Short: "desktop=off: binding a chosen abstract UNIX name is refused (an empty address, autobind, works)",
		Why:   "desktop=off: a chosen abstract name is reachable by every process outside that looks for it (a fake X11 or D-Bus endpoint); binding with an empty address lets the kernel pick a name the sandbox's own sockets can reach"},
	{ID: "unix-sockets-unconfined", Field: "desktop",
		Short: "desktop=off, and this kernel cannot confine UNIX sockets",
		Why:   "this kernel's Landlock (ABI below 9) cannot confine connect() to pathname UNIX sockets and wrun cannot mediate them here (no seccomp user notification, or no pidfd_getfd to take the command's socket, as in a container's default seccomp profile), so under desktop=off no UNIX socket can be created (stream socketpairs still work)"},
	{ID: "git-push", Field: "shell",
		Short: "shell=verify checks work and does not publish it: git push is refused",
		Why:   "shell=verify sends every git push to a remote helper that refuses it (with the network on for git fetch, this guards against a mistake; it is not a boundary, as a determined child can speak git's protocol itself)"},
	{ID: "signal-scope", Field: "boundary",
		Short: "a sandboxed process may not signal one outside the sandbox",
		Why:   "the sandbox's boundary: a sandboxed process may signal only processes of its own sandbox (Landlock scope), so it cannot stop or kill the programs around it; no grant widens this"},
	{ID: "priority-scope", Field: "boundary",
		Short: "a sandboxed process may not change the priority, scheduling or limits of one outside the sandbox",
		Why:   "the sandbox's boundary: setpriority, sched_setaffinity, sched_setattr, prlimit and ioprio_set reach only the sandbox's own processes, so it cannot starve or limit the programs around it; no grant widens this"},
	{ID: "terminal-scope", Field: "boundary",
		Short: "a sandboxed process may open only the pseudo-terminals it made",
		Why:   "the sandbox's boundary: another session's pseudo-terminal carries that session's keystrokes; the sandbox opens only pairs it made through /dev/ptmx, and its own terminal; no grant widens this"},
	{ID: "setid-file", Field: "boundary",
		Short: "a file may not be given the setuid or setgid bit",
		Why:   "the sandbox's boundary: a setuid or setgid file would run as its owner or group for any user who executes it after the run; no grant allows it (a directory's setgid bit, which only passes its group on to new entries, is made)"},
	{ID: "unix-credentials-mediated", Field: "desktop",
		Short: "SCM_CREDENTIALS cannot pass through wrun's UNIX socket mediation",
		Why:   "below Landlock ABI 9 with desktop={desktop}, a process inside the sandbox makes every send on a UNIX socket for the child, and the kernel accepts SCM_CREDENTIALS only with the sender's own pid; desktop=on does not mediate, and a kernel with Landlock ABI 9 does not need to"},
	{ID: "unknown", Field: "unknown",
		Short: "the sandbox refused it",
		Why:   "wrun could not tell which part of the grant withheld this"},
}

// lockfiles are the names of the lock files of the build tools (rule
// lockfile).
var lockfiles = []string{"Cargo.lock", "go.sum", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"}

// alternatives are what each kind of denial (rules) may be offered
// instead, in the order offered within a kind.
var alternatives = []altDef{
	{ID: "cargo-generate-lockfile", Rules: []string{"lockfile"}, Kind: KindRoute,
		When:        when{Command: []string{"cargo"}, Base: []string{"Cargo.lock"}, If: []string{"missing"}},
		Set:         map[string]string{"files": "write"},
		Description: "create the missing Cargo.lock first with `cargo generate-lockfile` under a grant that may write the workspace ({route_grant}), then run the command again under this grant (check the new lock file in)",
		Try:         "cargo generate-lockfile under --grant {route_grant}, then run it again",
		Commands:    [][]string{[]string{"wrun", "--grant", "{route_grant}", "--", "cargo", "generate-lockfile"}, []string{"wrun", "--grant", "{grant}", "--", "{argv}"}}},
	{ID: "use-tmpdir", Rules: []string{"workspace-read-only", "outside-scope"}, Kind: KindRoute,
		When:        when{NotProgram: []string{"git", "cargo", "rustc", "go", "npm", "npx", "node"}},
		Description: "write it under the private temp dir ($TMPDIR), which this grant makes writable, instead of {path}",
		Try:         "write it under $TMPDIR instead"},
	{ID: "cargo-target-dir", Rules: []string{"workspace-read-only"}, Kind: KindRoute,
		When:        when{Command: []string{"cargo"}},
		Description: "keep build output out of the source tree: point CARGO_TARGET_DIR inside the writable scope (here $TMPDIR/target); build scripts should write to OUT_DIR",
		Try:         "set CARGO_TARGET_DIR to $TMPDIR/target inside the sandbox (the route's command does)",
		Commands:    [][]string{[]string{"wrun", "--grant", "{grant}", "--", "sh", "-c", "CARGO_TARGET_DIR=\"$TMPDIR/target\" exec \"$@\"", "sh", "{argv}"}}},
	{ID: "cargo-fetch-first", Rules: []string{"tool-cache"}, Kind: KindRoute,
		When:        when{Tool: []string{"cargo"}, Command: []string{"cargo"}, Program: []string{"cargo"}, If: []string{"full-covers"}},
		Set:         map[string]string{"shell": "full", "network": "on"},
		Description: "fill cargo's cache first with `cargo fetch` under a grant that may write it ({route_grant}), then run the command offline under this grant",
		Try:         "cargo fetch under --grant {route_grant}, then {argv+--offline}",
		Commands:    [][]string{[]string{"wrun", "--grant", "{route_grant}", "--", "cargo", "fetch"}, []string{"wrun", "--grant", "{grant}", "--", "{argv+--offline}"}}},
	{ID: "cargo-fetch", Rules: []string{"tool-cache"}, Kind: KindRoute,
		When:        when{Tool: []string{"cargo"}, NotCommand: []string{"cargo"}, Program: []string{"cargo"}, If: []string{"full-covers"}},
		Set:         map[string]string{"shell": "full", "network": "on"},
		Description: "fill cargo's cache first with `cargo fetch` under a grant that may write it ({route_grant}), then run cargo with --offline under this grant",
		Try:         "cargo fetch under --grant {route_grant}, then cargo with --offline",
		Commands:    [][]string{[]string{"wrun", "--grant", "{route_grant}", "--", "cargo", "fetch"}}},
	{ID: "go-mod-download-first", Rules: []string{"tool-cache"}, Kind: KindRoute,
		When:        when{Tool: []string{"go-mod"}},
		Set:         map[string]string{"shell": "full", "network": "on"},
		Description: "fill the module cache first with `go mod download` under a grant that may write it ({route_grant}), then run the command again under this grant",
		Try:         "go mod download under --grant {route_grant}, then run it again",
		Commands:    [][]string{[]string{"wrun", "--grant", "{route_grant}", "--", "go", "mod", "download"}, []string{"wrun", "--grant", "{grant}", "--", "{argv}"}}},
	{ID: "private-gocache", Rules: []string{"tool-cache"}, Kind: KindRoute,
		When:        when{Tool: []string{"go-build"}, If: []string{"shell-verify"}},
		Description: "leave GOCACHE as wrun sets it: verify runs get a build cache of their own that stays warm between runs and that unconfined builds never read",
		Try:         "do not override GOCACHE",
		Commands:    [][]string{[]string{"wrun", "--grant", "{grant}", "--", "{argv}"}}},
	{ID: "npm-private-cache", Rules: []string{"tool-cache"}, Kind: KindRoute,
		When:        when{Tool: []string{"npm"}, Command: []string{"npm", "npx"}},
		Description: "give npm a cache of its own inside the writable scope (npm_config_cache=$TMPDIR/npm-cache)",
		Try:         "set npm_config_cache to $TMPDIR/npm-cache inside the sandbox (the route's command does)",
		Commands:    [][]string{[]string{"wrun", "--grant", "{grant}", "--", "sh", "-c", "npm_config_cache=\"$TMPDIR/npm-cache\" exec \"$@\"", "sh", "{argv}"}}},
	{ID: "cargo-offline", Rules: []string{"network-off", "network-loopback"}, Kind: KindRoute,
		When:        when{Command: []string{"cargo"}},
		Description: "run cargo offline: it builds from what is already in its cache and names anything missing",
		Try:         "{argv+--offline}",
		Commands:    [][]string{[]string{"wrun", "--grant", "{grant}", "--", "{argv+--offline}"}}},
	{ID: "npm-offline", Rules: []string{"network-off", "network-loopback"}, Kind: KindRoute,
		When:        when{Command: []string{"npm"}},
		Description: "run npm offline: it uses only what is already in its cache",
		Try:         "{argv+--offline}",
		Commands:    [][]string{[]string{"wrun", "--grant", "{grant}", "--", "{argv+--offline}"}}},
	{ID: "copy-not-move", Rules: []string{"refer-gain"}, Kind: KindRoute,
		Description: "copy it to {path} and remove the original, rather than moving or linking it across directories",
		Try:         "copy instead of moving"},
	{ID: "allow-write-lockfile", Rules: []string{"lockfile"}, Kind: KindAllowWrite,
		When:        when{If: []string{"exists"}},
		Path:        "{path}",
		Description: "let this run write the lock file {target} and nothing else in the workspace",
		Try:         "--allow-write {target}"},
	{ID: "allow-write", Rules: []string{"workspace-read-only", "outside-scope"}, Kind: KindAllowWrite,
		Path:        "{narrowest}",
		Description: "let this run write {target} as well",
		Try:         "--allow-write {target}"},
	{ID: "allow-write-cache", Rules: []string{"tool-cache"}, Kind: KindAllowWrite,
		Path:        "{cache_dir}",
		Description: "let this run write {target}; later builds that run unconfined will use what it puts there",
		Try:         "--allow-write {target}"},
	{ID: "files-write", Rules: []string{"workspace-read-only", "lockfile", "worktree-git-state"}, Kind: KindGrant,
		Set:         map[string]string{"files": "write"},
		Description: "let the child write the workspace (git config and hooks stay protected)",
		Try:         "--grant {new_grant}"},
	{ID: "files-read", Rules: []string{"workspace-hidden"}, Kind: KindGrant,
		Set:         map[string]string{"files": "read"},
		Description: "let the child read the workspace",
		Try:         "--grant {new_grant}"},
	{ID: "shell-verify", Rules: []string{"verify-scope"}, Kind: KindGrant,
		Set:         map[string]string{"shell": "verify"},
		Description: "let the child write verify mode's bounded scope: build outputs, test temp files, git plumbing",
		Try:         "--grant {new_grant}"},
	{ID: "shell-full", Rules: []string{"tool-cache"}, Kind: KindGrant,
		When:        when{If: []string{"full-covers"}},
		Set:         map[string]string{"shell": "full"},
		Description: "let the child write the user's tool caches (shell=full)",
		Try:         "--grant {new_grant}"},
	{ID: "allow-read", Rules: []string{"not-readable", "hidden"}, Kind: KindAllowRead,
		When:        when{If: []string{"exists"}},
		Path:        "{path}",
		Description: "let this run read {target} as well, and nothing else beside it",
		Try:         "--allow-read {target}"},
	{ID: "allow-host", Rules: []string{"network-loopback", "network-hosts"}, Kind: KindAllowHost,
		Description: "let this run reach {target} as well (no other host or service outside the sandbox)",
		Try:         "--allow-host {target}"},
	{ID: "network-on", Rules: []string{"network-off", "network-loopback", "network-hosts"}, Kind: KindGrant,
		Set:         map[string]string{"network": "on"},
		Description: "let the child use the network",
		Try:         "--grant {new_grant}"},
	{ID: "allow-unix", Rules: []string{"unix-socket"}, Kind: KindAllowUnix,
		Path:        "{path}",
		Description: "let this run connect to the UNIX socket {target} as well (no other socket outside the sandbox)",
		Try:         "--allow-unix {target}"},
	{ID: "desktop-on", Rules: []string{"unix-socket", "abstract-socket", "abstract-bind", "unix-sockets-unconfined", "unix-credentials-mediated"}, Kind: KindGrant,
		Set:         map[string]string{"desktop": "on"},
		Description: "let the child reach the desktop session and UNIX sockets outside the sandbox",
		Try:         "--grant {new_grant}"},
	{ID: "push-grant", Rules: []string{"git-push"}, Kind: KindGrant,
		Set:         map[string]string{"files": "write", "network": "on"},
		Description: "push under a grant that may publish: files=write with network=on (no push guard; git config and hooks stay protected)",
		Try:         "--grant {new_grant}"},
	{ID: "ask-parent", Rules: []string{"*"}, Kind: KindAskParent,
		Description: "ask the parent (the person or agent that started this run) to do it, or to approve a wider grant; the reason it was refused: {why}",
		Try:         "ask the parent"},
}
