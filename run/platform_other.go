//go:build !linux && !darwin

package run

import (
	"fmt"
	"runtime"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

func initProcess() error { return nil }

func native() Platform { return unsupported{} }

// unsupported is every platform wrun cannot enforce on yet: it refuses to
// run anything rather than run it unsandboxed.
type unsupported struct{}

func (unsupported) Name() string { return "none" }

func (unsupported) Prepare(*policy.Policy, sandbox.Options) (Plan, error) {
	return nil, fmt.Errorf("sandboxing on %s is not supported yet (Linux and macOS only)", runtime.GOOS)
}

func (unsupported) Doctor() []sandbox.Feature {
	return []sandbox.Feature{{Name: "platform", Available: false, Detail: runtime.GOOS,
		Consequence: "wrun cannot enforce any grant on this platform yet"}}
}
