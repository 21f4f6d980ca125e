package run

import (
	"os"
	"os/exec"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// The launch steps that run/ owns, for `go test -run '^$' -bench Step
// ./run` (sandbox/linux, policy and verify have the others): the host's
// facts, the private temp dir, and verify's steps before and after the
// child (the git quarantine, the shim, the guard) in a fresh repository.

// BenchmarkStepHostFacts is hostFacts: the current directory, the account,
// the executable, the groups.
func BenchmarkStepHostFacts(b *testing.B) {
	env := os.Environ()
	for b.Loop() {
		if _, _, err := hostFacts(&Spec{}, env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepTempDir is the private temp dir every attempt makes and
// removes (empty: `true` writes nothing).
func BenchmarkStepTempDir(b *testing.B) {
	for b.Loop() {
		d, err := os.MkdirTemp("", "wrun-")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepVerifySteps is verify.Prepare and Session.Finish with the
// steps the policy asks for in a git repository where the command wrote
// nothing, under inspect (a guard at most) and verify (the state root,
// the git quarantine and its shim, the empty files removed).
func BenchmarkStepVerifySteps(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	ws := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	for _, name := range []string{"inspect", "verify"} {
		b.Run(name, func(b *testing.B) {
			g, err := grant.Parse(name)
			if err != nil {
				b.Fatal(err)
			}
			h, o, err := hostFacts(&Spec{Workdir: ws}, os.Environ())
			if err != nil {
				b.Fatal(err)
			}
			h.Scan = nil // the search is policy's benchmark
			h.StateDir = b.TempDir()
			tmp := b.TempDir()
			h.TempDir = tmp
			p, err := policy.Compute(g, h, o)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				sess, err := verify.Prepare(p.Prepare)
				if err != nil {
					b.Fatal(err)
				}
				for _, err := range sess.Finish(p.Finish, true) {
					b.Fatal(err)
				}
				// The shim's directory lives in the private temp dir,
				// which the run removes.
				b.StopTimer()
				ents, _ := os.ReadDir(tmp)
				for _, e := range ents {
					_ = os.RemoveAll(tmp + "/" + e.Name())
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(len(p.Prepare)), "prepare")
			b.ReportMetric(float64(len(p.Finish)), "finish")
		})
	}
}
