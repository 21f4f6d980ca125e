package darwin

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Plan is a policy planned for Seatbelt: the profile, and how it is run.
type Plan struct {
	Policy  *policy.Policy
	Options sandbox.Options
	Profile Profile
	RunID   string
	// Nested is set when wrun itself runs inside a Seatbelt sandbox,
	// which cannot apply another profile: the command then runs under
	// the enclosing sandbox alone (see Nest).
	Nested bool
	// Enclosing is the enclosing sandbox's grant, when Nested.
	Enclosing string
	Notes     []string
	// Degraded: --best-effort ran a grant Seatbelt cannot hold
	// (network=loopback or hosts, run as network=off).
	Degraded bool
}

// NewRunID returns a fresh run id: 16 hex digits.
func NewRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// NewPlan generates the profile of p for one run; canon resolves symbolic
// links as the Mac will (ResolveExisting on a Mac).
func NewPlan(p *policy.Policy, o sandbox.Options, runID string, canon func(string) string) (*Plan, error) {
	var notes []string
	if p.Network.Loopback {
		// Seatbelt's network rules name addresses, never which process
		// bound a socket: (remote ip "localhost:*") would reach every
		// service of the host on loopback, which network=loopback keeps
		// out. The profile stays network=off (Allow is false).
		g := sandbox.Gap{What: "network=" + p.Grant.Network.String() + " (loopback sockets of this run only; hosts through wrun's proxy)",
			Consequence: "Seatbelt cannot tell the sandbox's own loopback sockets from the host's services, and wrun's proxy is not run on macOS; with --best-effort the command runs with network=off",
			Need:        "Linux (wrun's mediation of socket calls), or network=on or network=off here", Essential: true}
		if !o.BestEffort {
			return nil, &sandbox.UnenforceableError{Gaps: []sandbox.Gap{g}}
		}
		notes = append(notes, "DEGRADED: network="+p.Grant.Network.String()+" runs as network=off on macOS (Seatbelt cannot confine loopback to the sandbox's own sockets)")
	}
	prof, err := Generate(Input{Policy: p, RunID: runID, Canon: canon})
	if err != nil {
		return nil, err
	}
	return &Plan{Policy: p, Options: o, Profile: prof, RunID: runID, Notes: notes, Degraded: len(notes) > 0}, nil
}

// NestedError refuses a run inside an enclosing Seatbelt sandbox whose
// grant the command's does not cover: the command would get more than its
// grant. wrun exits 125 with it.
type NestedError struct{ Reason string }

func (e *NestedError) Error() string { return e.Reason }

// Nest decides a run inside an enclosing Seatbelt sandbox, which cannot
// apply another profile (sandbox_apply: Operation not permitted): the
// command can only run under the enclosing profile. That holds its grant
// only when the inner grant is at least as wide as the enclosing one
// (enclosingSpec, the WRUN_GRANT the enclosing wrun set): then the command
// gets no more than its grant, and the plan says it may get less. Any
// other case is refused.
func Nest(pl *Plan, enclosingSpec string) error {
	if enclosingSpec == "" {
		return &NestedError{Reason: "wrun runs inside a Seatbelt sandbox that wrun did not make (no WRUN_GRANT): it cannot apply the grant's profile there, nor tell what the enclosing one allows"}
	}
	outer, err := grant.Parse(enclosingSpec)
	if err != nil {
		return &NestedError{Reason: fmt.Sprintf("wrun runs inside a Seatbelt sandbox whose grant WRUN_GRANT=%q it cannot read: %v", enclosingSpec, err)}
	}
	inner := pl.Policy.Grant
	if !outer.Within(inner) {
		return &NestedError{Reason: fmt.Sprintf("wrun runs inside a Seatbelt sandbox (grant %s), which cannot apply another profile; the grant %s is narrower in %v, so the command would get more than its grant: run it with a grant at least as wide as %s, or outside the sandbox",
			outer.String(), inner.String(), outer.Exceeds(inner), outer.String())}
	}
	pl.Nested, pl.Enclosing = true, outer.String()
	if !inner.Equal(outer) {
		pl.Notes = append(pl.Notes, fmt.Sprintf("nested in a Seatbelt sandbox: the enclosing grant %s applies, narrower than %s; the command may be refused what its own grant allows", outer.String(), inner.String()))
	} else {
		pl.Notes = append(pl.Notes, "nested in a Seatbelt sandbox of the same grant: the enclosing profile applies")
	}
	return nil
}

// Report says how the plan enforces its policy.
func (pl *Plan) Report() sandbox.Report {
	summary := "Seatbelt profile (sandbox-exec)"
	if pl.Nested {
		summary = "the enclosing Seatbelt sandbox (grant " + pl.Enclosing + "); no profile of its own"
	}
	notes := append([]string{
		"paths are matched as macOS resolves them (/tmp is /private/tmp); the profile is fixed text and every path a -D parameter (wrun profile --os darwin prints both)",
		"protected paths are taken out of every allow that would cover them, themselves and everything beneath, so no rule order decides them; the directories above them cannot be renamed or removed, since a rule follows the path and not the directory",
		"changing modes, owners, times and extended attributes is allowed only where writing is (Landlock leaves it to file permissions)",
		"sysctl reads by name only (never kern.procargs2: other processes' arguments and environment); no ioctl may type into a terminal (TIOCSTI)",
		"not tested on a Mac: the profile is checked here by an evaluator of the SBPL it uses, under each reading of Seatbelt's precedence, and against the Linux policy (docs/macos.md)",
	}, pl.Notes...)
	n := pl.Policy.Network
	ipc := pl.Policy.IPC
	var netIPC []string
	if n.Allow {
		netIPC = append(netIPC, "network: outbound connections and local listening allowed (network-outbound, network-bind); DNS through mDNSResponder's socket and configd, certificate checks through trustd")
	} else {
		netIPC = append(netIPC, "network: no IP connection or listening; mDNSResponder, configd and trustd closed (DNS and trustd carry data out)")
	}
	if ipc.PathUnixOutside {
		netIPC = append(netIPC, "UNIX sockets: any (desktop=on)")
	} else {
		netIPC = append(netIPC, "UNIX sockets: the sandbox's own (in its writable directories) and those named for the run, at their path itself (a symbolic link there is not followed)")
	}
	if ipc.SignalOutside {
		netIPC = append(netIPC, "signals: any process of the user")
	} else {
		netIPC = append(netIPC, "signals: only within the sandbox")
	}
	if pl.Policy.Grant.Desktop == grant.DesktopOn {
		netIPC = append(netIPC, "process information: any process (ps, pgrep: sysmond, kern.proc.all), never their arguments or environment")
	} else {
		netIPC = append(netIPC, "process information: only within the sandbox")
	}
	netIPC = append(netIPC, "keychain (securityd): closed; Apple Events, window server, pasteboard, accessibility: only with desktop=on")
	return sandbox.Report{
		Platform:   Platform,
		Summary:    summary,
		Protection: "path rules: every allow carries (require-not (literal P)) (require-not (subpath P)) for the protected paths it covers; nothing but (deny default) refuses them",
		Gaps:       []sandbox.Gap{},
		Notes:      notes,
		Observer:   !pl.Nested && !pl.Options.NoObserve,
		NetworkIPC: netIPC,
		Degraded:   pl.Degraded,
	}
}
