package run

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// ExitFailed is the exit status of a run that failed before the command
// started (bad grant, unenforceable grant, unreadable path). Otherwise a
// run ends with the command's own status, 128+N when signal N killed it,
// 126 when the command could not be executed and 127 when it was not found
// (sandbox.StartError carries those two).
const ExitFailed = 125

// Spec is what shapes the policy of a run, shared by Run and Explain. The
// paths it names must exist.
type Spec struct {
	// Grant is the requested grant spec: a preset and/or fields
	// ("verify,network=off"). It is narrowed to its bounds (Resolve).
	Grant string
	// Workdir is the workspace root the grant's files field applies to;
	// "" means the current directory.
	Workdir string
	// AllowRead and AllowWrite are extra readable and writable paths.
	AllowRead, AllowWrite []string
	// AllowUnix are pathname UNIX sockets outside the sandbox the child
	// may connect and send to (--allow-unix).
	AllowUnix []string
	// AllowHost are --allow-host entries (HOST[:PORT]): the host's
	// loopback services under network=loopback, and the hosts wrun's
	// proxy reaches under network=hosts.
	AllowHost []string
	// KeepEnv names variables passed through although the grant would
	// remove them.
	KeepEnv []string
	// Records are wrun's records of runs (the receipts' directory, the
	// roster), hidden whole from the child; Hide are more paths to hide
	// (the user's config).
	Records, Hide []string
	// BestEffort runs even when the kernel cannot enforce the whole grant;
	// the run is then degraded.
	BestEffort bool
	// Env is the invoking environment; nil means os.Environ().
	Env []string
	// OS is the system whose readable directories the policy names
	// (policy.SystemRoots); "" means this one (runtime.GOOS). wrun
	// profile --os darwin sets it.
	OS string
	// Platform enforces the policy; nil means Native().
	Platform Platform
}

func (s *Spec) env() []string {
	if s.Env == nil {
		return os.Environ()
	}
	return s.Env
}

func (s *Spec) platform() Platform {
	if s.Platform == nil {
		return Native()
	}
	return s.Platform
}

// OnDenial says what a run does when the sandbox denied something.
type OnDenial string

// The values of Config.OnDenial.
const (
	// Report builds the escalation request and stops there.
	Report OnDenial = "report"
	// Ask also asks the approver for a decision on the request.
	Ask OnDenial = "ask"
	// Retry asks, then reruns the command once with the approved
	// widening.
	Retry OnDenial = "retry"
	// Hold holds, while the command runs, each call the supervisor sees
	// that the kernel would refuse and wrun can perform (a write or
	// create beyond the write scope), and asks over Config.Control; an
	// approved --allow-write is performed by wrun for the rest of the run
	// (sandbox.Options.Hold). What it cannot hold is reported. Linux only,
	// where the exact observer runs.
	Hold OnDenial = "hold"
)

// Config is one sandboxed run of a command.
type Config struct {
	Spec
	// Ceiling is the requested ceiling spec; "" means WRUN_CEILING, else
	// the user's own authority (see Resolve). It is exported to the child
	// as WRUN_CEILING. Its syntax is grant.Bound's.
	Ceiling string
	// CeilingSource says where Ceiling came from (grant.CeilingFlag,
	// grant.CeilingUserConfig, ...; "" means grant.CeilingFlag), for the
	// request's ceiling_source.
	CeilingSource string
	// RunID names the run (NewID): the summary, the request, the receipt
	// and the roster entry carry it; "" makes one.
	RunID string
	// Argv is the command and its arguments.
	Argv []string
	// Flags are the wrun flags of this run that shape it (--workdir,
	// --allow-read, --allow-write, --allow-unix, --keep-env, --ceiling,
	// --best-effort, ...), as a command line gives them; RoleFlags are its
	// --role, --model and --thinking. Every route command the request
	// offers carries Flags (and RoleFlags when it runs under the run's own
	// grant), so running it reruns what Retry would; Retry accepts a route
	// command only with exactly those flags.
	Flags, RoleFlags []string
	// Stdin, Stdout and Stderr are the command's; nil means the calling
	// process's own.
	Stdin, Stdout, Stderr *os.File
	// KeepBackground leaves processes the command started in the
	// background running after it exits (and its temp dir in place).
	KeepBackground bool
	// NoObserve switches off the exact denial records (the mediation
	// still runs: it holds part of the grant); denials are then inferred
	// from the command's stderr. A nested run always has it off.
	NoObserve bool
	// KillAfter: after wrun forwards a SIGTERM, SIGINT or SIGHUP, the
	// command has this long to end; then everything in the sandbox is
	// killed. Zero waits without a limit.
	KillAfter time.Duration
	// OnDenial says what to do about denials; "" means Report.
	OnDenial OnDenial
	// RetrySafe lets Retry rerun the command without asking Confirm.
	RetrySafe bool
	// Approver decides on requests under Ask and Retry; nil denies them.
	Approver Approver
	// Session is the session the run belongs to (policy.EnvSession): its
	// remembered approvals decide without asking, and an approval of
	// scope "session" is remembered there. Nil: an approval of scope
	// "session" is refused.
	Session Session
	// Confirm asks whether a command not RetrySafe may run again; nil
	// means no.
	Confirm Confirmer
	// StateMax bounds the private state of sandboxed runs (their build
	// caches, one key per workspace and authority, verify.UseState): when
	// a run ends beyond it, the least recently used keys no live run holds
	// are removed. Zero means verify.DefaultStateMax.
	StateMax int64
	// Hooks are told what happens as it happens.
	Hooks Hooks
	// Search is the search for the files only this user may read
	// (StartSearch), started by the caller as early as it can so that it
	// overlaps with the caller's own work; the first attempt hides what
	// it found. Nil: Run starts it as it begins. A retry searches again.
	Search *policy.PrivateSearch
	// Events, if set, is told what happens while the command runs: its
	// start, each denial as it happens, each held call and its answer
	// (--events-fd). The caller ends it (Events.Exited) with the summary.
	Events *Events
	// Control is the channel Hold asks on (--control-fd).
	Control *Control
	// Context, if set, ends the run when it is done: before the command
	// starts, Run returns its error and starts nothing; once it runs, the
	// command gets SIGTERM as a forwarded signal, then, KillAfter later
	// (ten seconds when KillAfter is zero), everything in the sandbox is
	// killed. A wait for the approver ends as a signal would end it.
	Context context.Context
}

// cancelGrace is how long a cancelled run's command has to end after its
// SIGTERM when KillAfter is zero.
const cancelGrace = 10 * time.Second

func (c *Config) check() error {
	switch c.OnDenial {
	case "", Report, Ask, Retry:
	case Hold:
		if c.Control == nil {
			return fmt.Errorf("on denial %s needs a control channel to ask on", Hold)
		}
		if c.KeepBackground {
			return fmt.Errorf("on denial %s and keeping background processes: not supported", Hold)
		}
	default:
		return fmt.Errorf("on denial %q: want %s, %s, %s or %s", c.OnDenial, Report, Ask, Retry, Hold)
	}
	if len(c.Argv) == 0 {
		return fmt.Errorf("no command to run")
	}
	return nil
}

// Hooks are told what a run does as it does it, in this order, so that a
// caller can say so while the command's own output goes by. Every hook is
// optional; each is called on the goroutine that called Run.
type Hooks struct {
	// Note is called with each note on how the grant or ceiling was
	// narrowed, before anything runs.
	Note func(note string)
	// Planned is called with each attempt's enforcement report once its
	// plan is made, before the command starts (Report.Degraded says the
	// run is degraded).
	Planned func(rep sandbox.Report)
	// Ran is called after each attempt that ran the command, with its
	// summary: what was removed, warnings and the escalation request. It
	// is not called for an attempt wrun failed to carry out.
	Ran func(s *Summary)
	// Decided is called with the decision on a request (under Ask and
	// Retry).
	Decided func(req *escalate.Request, d *DecisionSummary)
	// Retrying is called before the command runs again, with the flags
	// of the approved widening.
	Retrying func(args []string)
	// RetryFailed is called when wrun failed to carry out the rerun.
	RetryFailed func(err error)
	// NotRerun is called when an approved widening is not rerun: the
	// command is not RetrySafe and Confirm did not confirm.
	NotRerun func()
}
