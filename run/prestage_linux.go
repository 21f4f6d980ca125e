//go:build linux

package run

import (
	"os"

	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// linuxPrestage is the stage, started before the policy so that its start
// overlaps the policy work (linux.StartStage).
type linuxPrestage struct{ ps *linux.Prestage }

func startPrestage(pf Platform, keepBackground bool, stdin *os.File) prestage {
	if _, ok := pf.(linuxPlatform); !ok {
		return linuxPrestage{}
	}
	f, err := features()
	if err != nil {
		return linuxPrestage{} // Prepare says why
	}
	return linuxPrestage{linux.StartStage(f, keepBackground, stdin)}
}

func (p linuxPrestage) adopt(pl Plan) Plan {
	lp, ok := pl.(*linux.Plan)
	if !ok || p.ps == nil {
		return pl
	}
	return stagedPlan{lp, p.ps}
}

func (p linuxPrestage) abandon() { p.ps.Abandon() }

// stagedPlan runs a plan with the stage started for it.
type stagedPlan struct {
	*linux.Plan
	ps *linux.Prestage
}

func (s stagedPlan) Run(c sandbox.Command) (sandbox.Result, error) {
	return linux.RunStaged(s.Plan, c, s.ps)
}
