//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

const platformName = "none"

const stage2Arg0 = "wrun:stage2"

func stage2() {
	fmt.Fprintln(os.Stderr, "wrun: the second stage exists only on Linux")
	os.Exit(125)
}

func platformInit() error { return nil }

func prepare(p *policy.Policy, o sandbox.Options) (prepared, error) {
	return nil, fmt.Errorf("sandboxing on %s is not supported yet (Linux only; macOS Seatbelt support is planned)", runtime.GOOS)
}

func doctor() []sandbox.Feature {
	return []sandbox.Feature{{Name: "platform", Available: false, Detail: runtime.GOOS,
		Consequence: "wrun cannot enforce any grant on this platform yet"}}
}
