package escalate

import (
	"fmt"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// Protection says how the platform keeps protected paths unwritable, which
// changes what else is denied (see access.Protection).
type Protection = access.Protection

// The values of Protection (access's, under the names run and the
// harness code use here).
const (
	// ProtectCarved: protected paths are holes carved out of the writable
	// rules (see access.ProtectCarved).
	ProtectCarved = access.ProtectCarved
	// ProtectExact: protected paths are refused exactly, by wrun's
	// mediation (see access.ProtectExact).
	ProtectExact = access.ProtectExact
)

// Facts are what the analysis needs besides the policy: facts about the
// invocation and the platform. The zero value is usable: it assumes carved
// protection, a kernel that restricts every file system right and TCP, an
// unknown home and environment, every path existing, and the default
// ceiling.
type Facts struct {
	// Home is the invoking user's home directory (policy.Host.Home).
	Home string
	// Env is the invoking environment (policy.Host.Env), not the child's:
	// it tells whether this wrun is nested (WRUN_GRANT). (The user's tool
	// caches are the policy's: policy.Policy.Caches.)
	Env []string
	// Protection says how protected paths are enforced on this platform.
	Protection access.Protection
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
	// WriteScope is what files=write would make writable beyond the
	// workspace: a linked worktree's own git state and branch
	// (verify.WorktreeScope), so a denial there under a narrower files
	// can name files=write. Nil when unknown or none.
	WriteScope []verify.Path
	// Argv is the command being run; routes rewrite it ("cargo test
	// --offline").
	Argv []string
	// Flags are the run's own wrun flags that shape it (--workdir,
	// --allow-write, --keep-env, --ceiling, ...): every route command
	// carries them, so that running it is running what wrun's own retry
	// runs. RoleFlags (--role, --model, --thinking) are carried only by a
	// route command under the run's own grant: a role's grant would
	// narrow any other.
	Flags, RoleFlags []string
	// Exists reports whether a path exists (os.Lstat succeeds). It picks
	// an existing path for --allow-write (wrun refuses a missing one), the
	// repository whose config a new writable root would carve around, and
	// whether a refused write in the output was to an existing file or a
	// new one. Nil assumes every path exists.
	Exists func(path string) bool
}

// Analyzer answers questions about denials under one policy: whether the
// kernel denies an operation, why, and what to do instead. It is safe for
// concurrent use; nothing in it changes after New.
type Analyzer struct {
	p       *policy.Policy
	facts   Facts
	model   *access.Model
	ceiling Ceiling
	nested  bool
	guarded []string // Guarded
}

// New returns an Analyzer for policy p. It fails only if p is nil.
func New(p *policy.Policy, f Facts) (*Analyzer, error) {
	if p == nil {
		return nil, fmt.Errorf("escalate: nil policy")
	}
	a := &Analyzer{p: p, facts: f, model: access.New(p, f.platform())}
	if f.Ceiling != nil {
		a.ceiling = *f.Ceiling
	} else {
		a.ceiling = Ceiling{Grant: grant.Ceiling(), Source: grant.CeilingDefault}
	}
	parent, _ := envlist.Lookup(f.Env, grant.EnvGrant)
	a.nested = parent != ""
	a.guarded = a.Guarded()
	return a, nil
}

func (a *Analyzer) argv() []string { return a.facts.Argv }

// platform is what the access model needs to know of the platform.
func (f Facts) platform() access.Platform {
	// Where protected paths are held exactly (wrun mediates), hidden paths
	// are withheld whole too (access.Platform.MaskHidden), and Entry rules
	// hold (wrun performs the calls in their directories).
	return access.Platform{Protection: f.Protection, UnixConfined: f.UnixConfined, MaskHidden: f.Protection == access.ProtectExact, Entries: f.Protection == access.ProtectExact}
}

// Check returns the rights op lacks under the policy, one Missing per path
// and cause; nil means the kernel allows it. It is the access model's
// answer (access.Model.Check) for the platform the Facts describe.
func (a *Analyzer) Check(op access.Op) []access.Missing { return a.model.Check(op) }

// WouldDeny reports whether the kernel will deny op under the policy.
func (a *Analyzer) WouldDeny(op access.Op) bool { return len(a.Check(op)) > 0 }

// Rights returns the file system rights the policy leaves on path.
func (a *Analyzer) Rights(path string) policy.Access { return a.model.Rights(path) }

// WouldDeny reports whether the kernel will deny op under p, assuming
// carved protection and a kernel without pathname UNIX socket confinement
// (the usual case); use New with Facts to say otherwise.
func WouldDeny(p *policy.Policy, op access.Op) bool {
	return len(access.New(p, access.Platform{}).Check(op)) > 0
}
