//go:build linux

package run

import (
	"fmt"
	"os"
	"strconv"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// stage2Arg0 marks wrun re-executed as the second stage of a launch in a
// user namespace (see sandbox/linux.Stage2).
const stage2Arg0 = linux.Stage2Arg0

func stage2() { linux.Stage2() }

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
// wrun uses, to reproduce what an older kernel can (and cannot) enforce;
// WRUN_NO_USERNS=1 keeps wrun from creating user namespaces.
func features() (linux.Features, error) {
	f := linux.Probe()
	if os.Getenv("WRUN_NO_USERNS") == "1" {
		f.UserNS = false
	}
	if v := os.Getenv("WRUN_LANDLOCK_ABI"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, fmt.Errorf("WRUN_LANDLOCK_ABI=%q: want a whole number (the highest Landlock ABI to use)", v)
		}
		f.LandlockABI = min(f.LandlockABI, n)
	}
	return f, nil
}
