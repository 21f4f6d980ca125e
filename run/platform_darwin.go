//go:build darwin

package run

import (
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/sandbox/darwin"
)

func initProcess() error { return darwin.MarkInheritedFDsCloseOnExec() }

func native() Platform { return darwinPlatform{} }

// darwinPlatform enforces with a generated Seatbelt profile under
// sandbox-exec (sandbox/darwin).
type darwinPlatform struct{}

func (darwinPlatform) Name() string { return darwin.Platform }

func (darwinPlatform) Prepare(p *policy.Policy, o sandbox.Options) (Plan, error) {
	pl, err := darwin.Prepare(p, o, StateDir())
	if err != nil {
		return nil, err
	}
	return pl, nil
}

func (darwinPlatform) Doctor() []sandbox.Feature { return darwin.Doctor() }
