package run

import (
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Platform enforces policies on one operating system. Native returns the
// one this program was built for; tests and harnesses may pass their own
// in Spec.Platform.
type Platform interface {
	// Name names the enforcement ("landlock", "seatbelt"; "none" where
	// there is none).
	// The child sees it as WRUN_SANDBOX.
	Name() string
	// Prepare plans the enforcement of p. When the kernel cannot enforce
	// an essential part of p (and o.BestEffort is not set) it returns the
	// plan, for its report, together with a *sandbox.UnenforceableError;
	// any other error comes with a nil plan.
	Prepare(p *policy.Policy, o sandbox.Options) (Plan, error)
	// Doctor lists the kernel features enforcement uses and whether this
	// machine has them.
	Doctor() []sandbox.Feature
}

// Plan is a policy planned for a platform, ready to run.
type Plan interface {
	// Report says how the policy is enforced, and what is not.
	Report() sandbox.Report
	// Run runs the command under the policy and returns how it ended.
	// A failure to start the command is a *sandbox.StartError.
	Run(c sandbox.Command) (sandbox.Result, error)
}

// Native returns the platform this program was built for: Landlock and
// seccomp on Linux, Seatbelt on macOS; elsewhere, one that refuses to run
// anything.
func Native() Platform { return native() }

// Init prepares the calling process for running sandboxed commands: on
// Linux and macOS it marks every inherited file descriptor above 2
// close-on-exec, so none reaches a child. Call it first thing in main.
func Init() error { return initProcess() }
