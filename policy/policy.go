package policy

import (
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/verify"
)

// Create says what wrun creates before the child starts when a path is
// missing.
type Create string

// The values of Create.
const (
	CreateNone Create = ""
	CreateDir  Create = "dir"
	CreateFile Create = "file"
)

// Rule grants Access on Path and everything beneath it.
type Rule struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
	// Why says in plain words who needs this path and for what.
	Why string `json:"why"`
	// Source is what put the rule here: "grant", "verify:cargo",
	// "--allow-write", "stdio", ...
	Source string `json:"source"`
	// Create is set when wrun creates the path before the child starts.
	Create Create `json:"create,omitempty"`
	// Optional rules are skipped when the path does not exist; a missing
	// non-optional path is an error before the child starts.
	Optional bool `json:"optional,omitempty"`
	// Beneath, when set, is a trusted directory above Path whose contents
	// are untrusted (the workspace): Path must be reached from it without
	// following any symbolic link, so a planted link cannot redirect a
	// grant elsewhere.
	Beneath string `json:"beneath,omitempty"`
	// NoFollow: the last component must not be followed if it is a
	// symbolic link (set on sibling rules made by Carve).
	NoFollow bool `json:"-"`
	// Entry: the rule is on one name in its directory, not on a tree. It
	// grants its Access on the path itself and, for that name only, the
	// rights to make a regular file there and to remove or replace it
	// (EntryRights): a branch's ref and its lock file in the refs/heads
	// that holds every other branch. Landlock gives those rights to a
	// directory, for every name in it, so only wrun's mediation holds
	// such a rule (it performs each call there); without the mediation
	// the rule grants its Access on an existing file and nothing more.
	Entry bool `json:"entry,omitempty"`
}

// EntryRights are the rights an Entry rule grants on its directory, for
// its one name.
const EntryRights = MakeReg | RemoveFile

// Hole is a path the child may not read (or, per Withheld, use at all) even
// though a broader rule covers it: the home directory, files no other user
// may read, other terminals.
type Hole struct {
	Path     string `json:"path"`
	Withheld Access `json:"withheld"`
	Why      string `json:"why"`
}

// Protected is a path that is never writable, even inside a writable rule,
// because a child that could write it escapes at the next unsandboxed run
// of git or a shell.
type Protected struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir"`
	// Exists is false for a path that must not come into existence.
	Exists bool `json:"exists"`
	// Create is set when wrun creates the (empty) path first so that it can
	// be protected; a missing hooks directory, for example.
	Create Create `json:"create,omitempty"`
	// Pin is set for a directory that must not be renamed, removed or
	// replaced (a repository's gitdir), though its contents may change.
	Pin bool `json:"pin,omitempty"`
	// Within is the writable rule path that contains this path. The path is
	// reached from it without following symbolic links.
	Within string `json:"within"`
	Why    string `json:"why"`
}

// Network is the network part of a policy.
type Network struct {
	// Allow is true when the child may use TCP and non-UNIX sockets, to
	// any address (network=on).
	Allow bool `json:"allow"`
	// Loopback is true under network=loopback and network=hosts: the
	// child may make IP sockets, but binds only to loopback addresses and
	// connects and sends only to sockets its own sandbox bound, to the
	// host's loopback services Hosts names and, with Proxy, to wrun's
	// proxy.
	Loopback bool `json:"loopback,omitempty"`
	// Proxy is true under network=hosts: wrun's proxy reaches the hosts
	// Hosts names for the child.
	Proxy bool `json:"proxy,omitempty"`
	// Hosts are the --allow-host entries and, under network=hosts, the
	// Derived ones.
	Hosts []grant.Host `json:"hosts,omitempty"`
	// Derived are the hosts under network=hosts that the repository's
	// remotes and the user's registries name, each with why.
	Derived []verify.NetHost `json:"derived_hosts,omitempty"`
}

// NetworkOf is the network part of a policy for the grant's network
// value n, before any --allow-host entry.
func NetworkOf(n grant.Network) Network {
	return Network{Allow: n == grant.NetworkOn,
		Loopback: n == grant.NetworkLoopback || n == grant.NetworkHosts,
		Proxy:    n == grant.NetworkHosts}
}

// IPC is the inter-process part of a policy.
type IPC struct {
	// SignalOutside: the child may signal processes outside its sandbox.
	SignalOutside bool `json:"signal_outside"`
	// AbstractUnixOutside: the child may connect to abstract UNIX sockets
	// bound outside its sandbox.
	AbstractUnixOutside bool `json:"abstract_unix_outside"`
	// PathUnixOutside: the child may connect to pathname UNIX sockets bound
	// outside its sandbox (the D-Bus session bus, an ssh agent, a docker
	// socket, a terminal multiplexer's socket).
	PathUnixOutside bool `json:"path_unix_outside"`
	// UnixSockets are pathname sockets bound outside the sandbox that the
	// child may connect and send to although PathUnixOutside is off
	// (--allow-unix PATH).
	UnixSockets []string `json:"unix_sockets,omitempty"`
}

// EnvVar is one change to the child's environment, with the reason.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
	Why   string `json:"why"`
}

// Policy is everything the platform layer must enforce for one child.
type Policy struct {
	Grant     grant.Grant `json:"-"`
	GrantSpec string      `json:"grant"`
	GrantName string      `json:"grant_name"`
	Workdir   string      `json:"workdir"`
	// Cwd is where the child starts.
	Cwd string `json:"cwd"`
	// TempDir is the private temp dir exported as TMPDIR ("" in explain,
	// where no run is made).
	TempDir   string      `json:"tempdir,omitempty"`
	Rules     []Rule      `json:"rules"`
	Hidden    []Hole      `json:"hidden"`
	Protected []Protected `json:"protected"`
	Network   Network     `json:"network"`
	IPC       IPC         `json:"ipc"`
	EnvSet    []EnvVar    `json:"env_set"`
	// EnvUnset are the invoking environment's variables the child does
	// not get (not on the allowlist, EnvFamilies), by name, never value.
	EnvUnset []EnvVar `json:"env_removed"`
	// EnvPassed names the invoking environment's variables the child
	// gets: on the allowlist or kept with --keep-env. EnvSet may replace
	// their values.
	EnvPassed []string `json:"env_passed"`
	// Env is the child's complete environment. It is not in the JSON form:
	// it holds whatever the invoking environment held.
	Env []string `json:"-"`
	// Prepare and Finish are steps wrun takes itself, unsandboxed, before
	// the child starts and after everything it started has ended (see
	// verify.Step).
	Prepare []verify.Step `json:"prepare,omitempty"`
	Finish  []verify.Step `json:"finish,omitempty"`
	Notes   []string      `json:"notes,omitempty"`

	// Caches are the user's tool caches (verify.ToolCaches), under every
	// grant: what a denial there needs to know (whose cache it is, what
	// shell=full opens in it). Not in the JSON form: Rules hold what the
	// grant makes writable of them.
	Caches []verify.ToolCache `json:"-"`

	// ReadOnly lists paths that stay unwritable although a tool writes
	// beside them (a git repository's config and objects, Cargo.lock,
	// CARGO_HOME, the user's GOCACHE), with the attack that stops. Nothing
	// grants them; they are listed so that explain can say why.
	ReadOnly []verify.ReadOnly `json:"kept_read_only,omitempty"`
}

// Writable reports whether any rule lets the child write beneath path.
func (p *Policy) Writable() []Rule {
	var out []Rule
	for _, r := range p.Rules {
		if r.Access&(Write&^WriteExisting) != 0 || r.Access&WriteFile != 0 {
			out = append(out, r)
		}
	}
	return out
}
