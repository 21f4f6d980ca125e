package policy

import (
	"os"
	"runtime"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// BenchmarkScanRoots measures the search for files no other user may read
// on this machine, as root and as another user would run it at every
// launch (the entries seen are the same whoever runs the benchmark).
func BenchmarkScanRoots(b *testing.B) {
	for _, uid := range []int{0, 65534} {
		name := "root"
		if uid != 0 {
			name = "user"
		}
		b.Run(name, func(b *testing.B) {
			id := Identity{Uid: uid, Gids: []int{uid}}
			roots := ScanRoots(id.Uid)
			var st ScanStats
			var n int
			for b.Loop() {
				var holes []Hole
				holes, st = privateHoles(roots, id)
				n = len(holes)
			}
			b.ReportMetric(float64(st.Entries), "entries")
			b.ReportMetric(float64(st.Dirs), "dirs")
			b.ReportMetric(float64(n), "holes")
		})
	}
}

// BenchmarkComputeCarveInspect is Compute and Carve for `wrun --grant
// inspect` in the current directory as hostFacts fills the host in: with
// the real home and the search for private files (see BenchmarkScanRoots
// for the search alone).
func BenchmarkComputeCarveInspect(b *testing.B) {
	for _, scan := range []bool{false, true} {
		name := "noscan"
		if scan {
			name = "scan"
		}
		b.Run(name, func(b *testing.B) {
			wd, _ := os.Getwd()
			home, _ := os.UserHomeDir()
			g, _ := grant.Parse("inspect")
			h := Host{Workdir: wd, Home: home, Env: os.Environ(), TempDir: b.TempDir(),
				Identity: Identity{Uid: os.Geteuid(), Gids: []int{os.Getegid()}}, Roots: SystemRoots(runtime.GOOS)}
			if scan {
				h.Scan = ScanRoots(h.Identity.Uid)
			}
			var n int
			for b.Loop() {
				p, err := Compute(g, h, Options{})
				if err != nil {
					b.Fatal(err)
				}
				rules, _ := Carve(p.Rules, p.Hidden, OSLister)
				n = len(rules)
			}
			b.ReportMetric(float64(n), "rules")
		})
	}
}
