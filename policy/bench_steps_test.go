package policy

import (
	"os"
	"runtime"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// The policy's share of a launch, split in its steps (see
// sandbox/linux/bench_steps_test.go for the rest): Compute alone, with
// and without the search for private files, and Carve alone on the
// result.

func stepHost(b *testing.B, scan bool) Host {
	b.Helper()
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	h := Host{Workdir: wd, Home: home, Env: os.Environ(), TempDir: b.TempDir(),
		Identity: Identity{Uid: os.Geteuid(), Gids: []int{os.Getegid()}}, Roots: SystemRoots(runtime.GOOS)}
	if scan {
		h.Scan = ScanRoots(h.Identity.Uid)
	}
	return h
}

func scanModes(b *testing.B, f func(b *testing.B, scan bool)) {
	for _, scan := range []bool{false, true} {
		name := "noscan"
		if scan {
			name = "scan"
		}
		b.Run(name, func(b *testing.B) { f(b, scan) })
	}
}

// BenchmarkStepCompute is Compute for `--grant inspect` here, without
// carving.
func BenchmarkStepCompute(b *testing.B) {
	g, err := grant.Parse("inspect")
	if err != nil {
		b.Fatal(err)
	}
	scanModes(b, func(b *testing.B, scan bool) {
		h := stepHost(b, scan)
		var holes int
		for b.Loop() {
			p, err := Compute(g, h, Options{})
			if err != nil {
				b.Fatal(err)
			}
			holes = len(p.Hidden)
		}
		b.ReportMetric(float64(holes), "hidden")
	})
}

// BenchmarkStepCarve is carving the policy's hidden paths out of its
// rules: listing each hole's parents and giving every sibling a rule.
func BenchmarkStepCarve(b *testing.B) {
	g, err := grant.Parse("inspect")
	if err != nil {
		b.Fatal(err)
	}
	scanModes(b, func(b *testing.B, scan bool) {
		p, err := Compute(g, stepHost(b, scan), Options{})
		if err != nil {
			b.Fatal(err)
		}
		var n int
		for b.Loop() {
			rules, _ := Carve(p.Rules, p.Hidden, OSLister)
			n = len(rules)
		}
		b.ReportMetric(float64(len(p.Rules)), "rules-in")
		b.ReportMetric(float64(n), "rules-out")
	})
}
