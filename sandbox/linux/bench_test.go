//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The launch path's parts, for `go test -bench . ./sandbox/linux`:
// scripts/bench times the whole of it, these say where the time goes.

// inspectPlan is the plan `wrun --grant inspect` makes for this package's
// directory, with the real home directory and the real kernel.
func inspectPlan(b *testing.B, tmp string) *Plan {
	b.Helper()
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	g, err := grant.Parse("inspect")
	if err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	p, err := policy.Compute(g, policy.Host{Workdir: wd, Home: filepath.Clean(home), Env: os.Environ(), TempDir: tmp, Sandbox: Platform, Roots: policy.SystemRoots(runtime.GOOS)}, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pl, err := NewPlan(p, probed(), sandbox.Options{BestEffort: true})
	if err != nil {
		b.Fatal(err)
	}
	return pl
}

func BenchmarkProbe(b *testing.B) {
	for b.Loop() {
		Probe()
	}
}

func BenchmarkComputeAndPlanInspect(b *testing.B) {
	tmp := b.TempDir()
	for b.Loop() {
		inspectPlan(b, tmp)
	}
}

// BenchmarkPrivateTempDir is the private TMPDIR every run makes and
// removes, in the default temp directory.
func BenchmarkPrivateTempDir(b *testing.B) {
	for b.Loop() {
		d, err := os.MkdirTemp("", "wrun-bench-")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildRulesetInspect(b *testing.B) {
	requireABI(b, 1)
	pl := inspectPlan(b, b.TempDir())
	rules := fsRules(pl.Rules)
	b.ReportMetric(float64(len(rules)), "rules")
	for b.Loop() {
		rs, err := buildRuleset(pl.attr, rules)
		if err != nil {
			b.Fatal(err)
		}
		rs.close()
	}
}

func BenchmarkAssembleFilter(b *testing.B) {
	for b.Loop() {
		if _, err := bpf.Assemble(buildFilter(seccompSpec{DenyInet: true, DenyUnix: true})); err != nil {
			b.Fatal(err)
		}
	}
}
