//go:build linux

package run

import (
	"os"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

func initProcess() error { return linux.MarkInheritedFDsCloseOnExec() }

func native() Platform { return linuxPlatform{} }

// linuxPlatform enforces with Landlock and seccomp (sandbox/linux).
type linuxPlatform struct{}

func (linuxPlatform) Name() string { return linux.Platform }

// Prepare plans enforcement of p. On an unenforceable grant it returns the
// plan (for explain) together with the error.
func (linuxPlatform) Prepare(p *policy.Policy, o sandbox.Options) (Plan, error) {
	f, err := features()
	if err != nil {
		return nil, err
	}
	pl, err := linux.NewPlan(p, f, o)
	if pl == nil {
		return nil, err
	}
	return pl, err
}

func (linuxPlatform) Doctor() []sandbox.Feature {
	f, _ := features()
	f.Audit = linux.ProbeAudit()
	return linux.Doctor(f)
}

// features probes the kernel. WRUN_LANDLOCK_ABI=N caps the Landlock ABI
// wrun uses, and WRUN_SIMULATE takes features away (linux.Simulate), to
// reproduce what an older kernel or a more restricted machine can (and
// cannot) enforce, every fallback for real.
func features() (linux.Features, error) {
	return linux.Simulate(linux.Probe(), os.Getenv("WRUN_LANDLOCK_ABI"), os.Getenv("WRUN_SIMULATE"))
}

// RefusesHosts says why this machine's row of the support matrix cannot
// hold network=hosts for g ("" when it can).
func (linuxPlatform) RefusesHosts(g grant.Grant) string {
	f, err := features()
	if err != nil {
		return err.Error()
	}
	for _, r := range linux.Refusals(f, g, linux.Need{}) {
		if r.Key == "network.hosts" || r.Key == "network.loopback" {
			return r.Refused
		}
	}
	return ""
}
