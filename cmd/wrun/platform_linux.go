//go:build linux

package main

import (
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

const platformName = linux.Platform

func platformInit() error { return linux.MarkInheritedFDsCloseOnExec() }

// prepare plans enforcement of p. On an unenforceable grant it returns the
// plan (for explain) together with the error.
func prepare(p *policy.Policy, o sandbox.Options) (prepared, error) {
	pl, err := linux.NewPlan(p, linux.Probe(), o)
	if pl == nil {
		return nil, err
	}
	return pl, err
}

func doctor() []sandbox.Feature { return linux.Doctor(linux.Probe()) }
