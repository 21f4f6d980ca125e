package sandbox

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
)

// Options change how a policy is enforced.
type Options struct {
	// BestEffort runs even when the kernel cannot enforce the whole policy;
	// every output then says "degraded" and what is not enforced.
	BestEffort bool
	// KeepBackground leaves processes the command started in the
	// background running after it exits.
	KeepBackground bool
	// NoObserve switches off the exact record of denials: the mediation
	// still holds the grant, but wrun neither predicts nor records what
	// the kernel refuses; denials are then only inferred from output.
	NoObserve bool
	// KillAfter is the grace a command gets after wrun forwards it a
	// SIGTERM, SIGINT or SIGHUP: then everything in the sandbox is killed
	// (SIGKILL) and the run ends. Zero waits for as long as the command
	// takes.
	KillAfter time.Duration
	// Proxy is wrun's proxy under network=hosts (package proxy): the one
	// address beyond the sandbox's own sockets and --allow-host ones that
	// the command's TCP connects may reach. Nil without network=hosts.
	Proxy Proxy
	// Denied, if set, is told of each distinct denial the exact observer
	// records, as it records it (a repeat is only counted). It runs on
	// the supervisor's thread: it must not block.
	Denied func(Denial)
	// Hold, if set, is asked about each call the supervisor sees that the
	// kernel would refuse and that wrun can perform instead (a write,
	// create or removal beyond the write scope; a connect to a UNIX
	// socket outside the sandbox where wrun performs connects): the call
	// waits until Hold returns. The approved path widens the rest of the
	// run: for a file system call a directory (an --allow-write inside
	// the ceiling), beneath which wrun performs the call and every later
	// one, as the command; for a connect the socket itself (an
	// --allow-unix). ok false fails the call as the kernel would have,
	// and it is recorded as a denial. Hold must return within a bound of
	// its own (a timeout).
	Hold func(Denial) (approved string, ok bool)
}

// Proxy is what the mediation needs of wrun's proxy: where it listens,
// and the client address of each connect the mediation makes to it, told
// before the connect (Expect) and taken back if it fails (Forget), so
// that the proxy serves this sandbox's connections only.
type Proxy interface {
	Addr() netip.AddrPort
	Expect(client netip.AddrPort)
	Forget(client netip.AddrPort)
}

// Gap is something the policy asks for that this kernel cannot enforce.
type Gap struct {
	What        string `json:"what"`
	Consequence string `json:"consequence"`
	Need        string `json:"need"`
	// Essential gaps refuse the run unless Options.BestEffort is set.
	Essential bool `json:"essential"`
}

// UnenforceableError is returned when the kernel cannot enforce an
// essential part of the policy and BestEffort is not set.
type UnenforceableError struct{ Gaps []Gap }

func (e *UnenforceableError) Error() string {
	var b strings.Builder
	b.WriteString("this kernel cannot enforce the grant:")
	for _, g := range e.Gaps {
		if g.Essential {
			fmt.Fprintf(&b, "\n  - %s\n    needs %s\n    (%s)", g.What, g.Need, g.Consequence)
		}
	}
	b.WriteString("\n  pass --best-effort to run anyway, degraded ('wrun doctor' shows what this machine holds)")
	return b.String()
}

// Report says how a policy is enforced on this machine.
type Report struct {
	// Platform names the mechanism: "landlock", "seatbelt".
	Platform string `json:"platform"`
	// Summary is one line: "Landlock ABI 7 + seccomp filter".
	Summary string `json:"summary"`
	// ABI is the Landlock ABI in use (Linux only).
	ABI int `json:"landlock_abi,omitempty"`
	// Protection says how protected paths are kept unwritable.
	Protection string   `json:"protection,omitempty"`
	Gaps       []Gap    `json:"gaps"`
	Notes      []string `json:"notes"`
	Degraded   bool     `json:"degraded"`
	// Observer is set when denials are observed exactly (seccomp user
	// notification) rather than inferred from output.
	Observer bool `json:"observer"`
	// Mediated is set when wrun mediates the command's calls (seccomp
	// user notification): it performs creates beside protected paths and
	// metadata calls itself, so protected paths are exactly what is
	// refused (rather than carved rules alone, which also take create
	// rights from the directories holding them).
	Mediated bool `json:"mediated"`
	// UnixConfined is set when the kernel can confine connecting to
	// pathname UNIX sockets by path (Landlock ABI 9), so that a grant can
	// open some and not others.
	UnixConfined bool `json:"unix_confined"`
	// SocketsMediated is set when wrun performs the command's connects
	// and sends to UNIX sockets itself (where the kernel does not confine
	// them by path), and so can hold one for approval.
	SocketsMediated bool `json:"sockets_mediated,omitempty"`
	// NetworkIPC says, line by line, how the policy's network and IPC
	// limits are enforced here, and which are not.
	NetworkIPC []string `json:"network_ipc,omitempty"`
	// Environment names this machine's row of the support matrix, and
	// Protections says, line by line, which mechanism holds each
	// protection of the grant there (or that nothing does).
	Environment string   `json:"environment,omitempty"`
	Protections []string `json:"protections,omitempty"`
}

// Command is the child to run.
type Command struct {
	Argv                  []string
	Stdin, Stdout, Stderr *os.File
	// ExtraFiles are the only descriptors the child inherits besides 0-2,
	// as 3, 4, ... (os/exec's ExtraFiles).
	ExtraFiles []*os.File
	// Signals, if set, delivers signals to forward to the child's process
	// group while it runs. The caller owns the signal disposition (it calls
	// signal.Notify), so it can do so early, off the launch path.
	Signals <-chan os.Signal
}

// Result is how the child ended.
type Result struct {
	// ExitCode is the child's exit status, or 128+N when signal N killed it.
	ExitCode int
	// Signal is the signal that killed the child, or 0.
	Signal syscall.Signal
	// Killed counts processes the command left behind that wrun ended.
	Killed int
	// Swept lists protected paths the child created and wrun removed.
	Swept []string
	// Warnings are things that went wrong after the child started.
	Warnings []string
	// AfterRunFailed are the steps after the run that failed (removing a
	// path the child must not have created, say): what they should have
	// held may not hold, so the run as a whole failed.
	AfterRunFailed []string
	// Denials are what the sandbox refused, as far as wrun could observe,
	// within the bounds MaxDenials and MaxDenialPath.
	Denials []Denial
	// DenialsDropped counts the denials beyond those bounds, which were
	// counted and not kept.
	DenialsDropped int
	// Audited is set when the kernel's audit records of the run were read.
	Audited bool
	// Observed is set when the exact observer ran (a nested wrun's does
	// not: the enclosing one observes).
	Observed bool
	// Linger, set under KeepBackground where the sandbox mediates the
	// command's calls, keeps serving the processes the command left:
	// call it once the run is reported. It detaches wrun from the run's
	// standard streams and returns when the last of them has ended;
	// until then their calls go on being checked.
	Linger func() `json:"-"`
}

// Denial is one refused operation, as observed.
type Denial struct {
	// Time is when it was first seen (RFC 3339), PID the process, Program
	// its argv[0].
	Time    string `json:"time"`
	PID     int    `json:"pid"`
	Program string `json:"program"`
	// Op is the operation: "open", "create", "mkdir", "unlink", "rename",
	// "link", "symlink", "truncate", "connect", "bind", ...
	Op string `json:"op"`
	// Path or Addr is what it was refused on.
	Path string `json:"path,omitempty"`
	Addr string `json:"addr,omitempty"`
	// Right is the missing right ("write_file", "make_reg", "connect_tcp").
	Right string `json:"right"`
	// Exact is true when the observer saw the call itself, false when the
	// denial is inferred (from output).
	Exact bool `json:"exact"`
	// Audited is true when a Landlock audit record of the kernel shows the
	// denial: the kernel's own word, confirming the observer's prediction
	// or, for what the observer does not watch (reads, executions,
	// signals), the only exact source.
	Audited bool `json:"audited,omitempty"`
	// Count is how many times the same denial was seen.
	Count int `json:"count"`
}

// StartError is a failure to start the child. Code is the exit status wrun
// reports: 127 not found, 126 found but not executable, 125 otherwise.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Feature is one thing a kernel can or cannot enforce, for `wrun doctor`.
type Feature struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
	// Consequence says, in one line, what this means for wrun.
	Consequence string `json:"consequence"`
}
