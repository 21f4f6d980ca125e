//go:build linux

package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// The launch, step by step, for `go test -run '^$' -bench Step
// ./sandbox/linux` (and ./policy, ./verify, ./run for the steps that live
// there). Each benchmark times one step of `wrun --grant inspect -- true`
// with this package's directory as the workspace and the host as wrun
// sees it (the real home, the search for private files of the user
// running the benchmark), so that the cost of each protection shows. The
// total is BenchmarkStepLaunch; scripts/bench times the whole program.

// hostPlan is the plan wrun makes for `--grant inspect` here, as run's
// hostFacts fills the host in: with the caller's identity and its search
// for private files (scan) or without it.
func hostPlan(b *testing.B, tmp string, scan bool, o sandbox.Options) *Plan {
	b.Helper()
	p := hostPolicy(b, tmp, scan)
	pl, err := NewPlan(p, probed(), o)
	if err != nil {
		b.Fatal(err)
	}
	return pl
}

func hostPolicy(b *testing.B, tmp string, scan bool) *policy.Policy {
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
	h := policy.Host{Workdir: wd, Home: filepath.Clean(home), Env: os.Environ(), TempDir: tmp, Sandbox: Platform, Roots: policy.SystemRoots(runtime.GOOS),
		Identity: policy.Identity{Uid: os.Geteuid(), Gids: []int{os.Getegid()}}}
	if scan {
		h.Scan = policy.ScanRoots(h.Identity.Uid)
	}
	p, err := policy.Compute(g, h, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// scanModes runs f with and without the search for private files: the
// difference is what hiding them (and carving around them) costs.
func scanModes(b *testing.B, f func(b *testing.B, scan bool)) {
	for _, scan := range []bool{false, true} {
		name := "noscan"
		if scan {
			name = "scan"
		}
		b.Run(name, func(b *testing.B) { f(b, scan) })
	}
}

// BenchmarkStepPlan is NewPlan alone: the policy made concrete, carving
// included (policy.BenchmarkStepCarve has the carving alone).
func BenchmarkStepPlan(b *testing.B) {
	scanModes(b, func(b *testing.B, scan bool) {
		p := hostPolicy(b, b.TempDir(), scan)
		f := probed()
		var n int
		for b.Loop() {
			pl, err := NewPlan(p, f, sandbox.Options{BestEffort: true})
			if err != nil {
				b.Fatal(err)
			}
			n = len(pl.Rules)
		}
		b.ReportMetric(float64(n), "rules")
	})
}

// BenchmarkStepRuleset is building the Landlock ruleset: one open, fstat
// and landlock_add_rule per rule.
func BenchmarkStepRuleset(b *testing.B) {
	requireABI(b, 1)
	scanModes(b, func(b *testing.B, scan bool) {
		pl := hostPlan(b, b.TempDir(), scan, sandbox.Options{BestEffort: true})
		rules := fsRules(pl.Rules)
		for b.Loop() {
			rs, err := buildRuleset(pl.attr, rules)
			if err != nil {
				b.Fatal(err)
			}
			rs.close()
		}
		b.ReportMetric(float64(len(rules)), "rules")
	})
}

// BenchmarkStepFilter is building and assembling the seccomp program, as
// the launch thread does.
func BenchmarkStepFilter(b *testing.B) {
	for _, med := range []bool{false, true} {
		name := "plain"
		if med {
			name = "mediate"
		}
		b.Run(name, func(b *testing.B) {
			spec := seccompSpec{DenyInet: true, Mediate: med, Sockets: med}
			for b.Loop() {
				if _, err := bpf.Assemble(buildFilter(spec)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStepClone is starting and reaping /bin/true (fork/exec, wait4)
// from Go: the floor of any launcher.
func BenchmarkStepClone(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	for b.Loop() {
		pid, err := syscall.ForkExec(truePath, []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			b.Fatal(err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepLaunch is Run of the inspect plan with `true`, every step
// of the launch but the policy: the ruleset, the launch thread's
// restriction, the fork, the supervisor's start and stop, the checks
// after the run.
func BenchmarkStepLaunch(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	for _, noObs := range []bool{false, true} {
		name := "mediate"
		if noObs {
			name = "nomediate"
		}
		b.Run(name, func(b *testing.B) {
			pl := hostPlan(b, b.TempDir(), true, sandbox.Options{BestEffort: true, NoObserve: noObs})
			for b.Loop() {
				res, err := Run(pl, sandbox.Command{Argv: []string{truePath}, Stdin: null, Stdout: null, Stderr: null})
				if err != nil {
					b.Fatal(err)
				}
				if res.ExitCode != 0 {
					b.Fatalf("true exited %d: %v", res.ExitCode, res.Warnings)
				}
			}
			b.ReportMetric(float64(len(pl.Rules)), "rules")
		})
	}
}
