package escalate

import (
	"path/filepath"
	"slices"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Need is what becomes of one denial of a run: whether it is asked for
// (goes into the escalation request) and whether a person is told of it
// without -v.
type Need int

const (
	// NeedAsk: the run may have needed it. It goes into the request and
	// is printed.
	NeedAsk Need = iota
	// NeedIgnored: the command succeeded, so it needed nothing that was
	// refused. Recorded (Sorted.Ignored), printed only with -v.
	NeedIgnored
	// NeedIgnoredShown: as NeedIgnored, but a refused read or write of a
	// hidden or protected path (a credential store, .git/hooks, a start-up
	// file): always printed, never asked for.
	NeedIgnoredShown
	// NeedExpected: a refusal wrun expects and cannot prevent (the go
	// command's telemetry counters under a read-only home). Recorded
	// (Sorted.Expected), printed only with -v, never asked for.
	NeedExpected
)

// Decide is the rule for one denial: an expected one is recorded only; in
// a run that succeeded (exit code 0) nothing is asked for, and only a
// hidden or protected path is printed without -v; in a run that failed
// every other denial is asked for.
func Decide(exitCode int, by WithheldBy, expected bool) Need {
	switch {
	case expected:
		return NeedExpected
	case exitCode != 0:
		return NeedAsk
	case by.Field == FieldHidden || by.Field == FieldProtected:
		return NeedIgnoredShown
	}
	return NeedIgnored
}

// Shown says whether a recorded denial that was not asked for is printed
// without -v: one of a hidden or protected path.
func (d DeniedAct) Shown() bool {
	return d.WithheldBy.Field == FieldHidden || d.WithheldBy.Field == FieldProtected
}

// Sorted is a run's denials sorted by Decide.
type Sorted struct {
	// Request holds what the run may have needed; nil when nothing.
	Request *Request
	// Ignored are the denials of a run that succeeded, ids "i1", "i2", ...
	Ignored []DeniedAct
	// Expected are the expected refusals (Go telemetry), ids "e1", ...
	Expected []DeniedAct
}

// Sort builds the request of a run from the denials it may have needed
// (Decide) and records the rest. What is recorded keeps the order first
// seen; what is asked for is ordered by how likely it caused the failure
// (Likelihood), most likely first.
func (a *Analyzer) Sort(run Run, denials []sandbox.Denial) Sorted {
	var ask, ignored, expected []sandbox.Denial
	for _, d := range Dedup(denials) {
		switch Decide(run.ExitCode, a.Classify(d), a.Expected(d)) {
		case NeedAsk:
			ask = append(ask, d)
		case NeedExpected:
			expected = append(expected, d)
		default:
			ignored = append(ignored, d)
		}
	}
	ask = byLikelihood(ask, run.Reported)
	return Sorted{Request: a.request(run, ask), Ignored: a.acts(ignored, "i"), Expected: a.acts(expected, "e")}
}

// Likelihood scores how likely denial d caused a failed run, the higher
// the likelier, from what is known of it:
//
//   - 4 when the command reported it in its output (a refusal the program
//     names is one it did not recover from; tools probe and tolerate many
//     others silently);
//   - 2 when it changes something (a write, a connection): programs look
//     for optional files all the time and carry on when a read is refused,
//     while a refused write is usually the end of the job.
//
// Among denials of equal score the one seen last comes first: a program
// stops soon after the refusal it cannot get past, having gone on after
// the earlier ones.
func Likelihood(d sandbox.Denial, reported []sandbox.Denial) int {
	score := 0
	for _, r := range reported {
		if r.Path != "" && r.Path == d.Path || r.Addr != "" && r.Addr == d.Addr {
			score += 4
			break
		}
	}
	if policy.ParseAccess(d.Right)&access.WriteRights != 0 || d.Right == access.RightMetadata || d.Op == access.OpConnect || d.Op == access.OpBind || d.Right == RightGitPush {
		score += 2
	}
	return score
}

// byLikelihood orders ds (in the order first seen) by Likelihood, the
// likeliest cause first, ties the latest first.
func byLikelihood(ds, reported []sandbox.Denial) []sandbox.Denial {
	out := slices.Clone(ds)
	slices.Reverse(out)
	slices.SortStableFunc(out, func(x, y sandbox.Denial) int {
		return Likelihood(y, reported) - Likelihood(x, reported)
	})
	return out
}

// Expected reports whether d is a refusal wrun expects and cannot prevent,
// and that no command needs:
//
//   - a write under the go command's telemetry directory
//     (os.UserConfigDir()/go/telemetry). Go's telemetry mode is read from
//     a file there, not from the environment, so every go command under a
//     read-only home is refused its counter files;
//   - cargo's lock files at the top of a read-only CARGO_HOME
//     (.package-cache, .package-cache-mutate, .global-cache): cargo opens
//     them on every start and goes on without them when they are refused.
//     What cargo really needs from its home (the registry, git checkouts)
//     is refused under its own paths, and asked for.
func (a *Analyzer) Expected(d sandbox.Denial) bool {
	if d.Path == "" || policy.ParseAccess(d.Right)&access.WriteRights == 0 && d.Right != access.RightMetadata {
		return false
	}
	path := filepath.Clean(d.Path)
	if c := a.cacheAt(path); c != nil && c.Tool == "cargo" && filepath.Dir(path) == c.Path &&
		slices.Contains([]string{".package-cache", ".package-cache-mutate", ".global-cache"}, filepath.Base(path)) {
		return true
	}
	var dirs []string
	if x, ok := envlist.Lookup(a.facts.Env, "XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Join(x, "go", "telemetry"))
	}
	if a.facts.Home != "" {
		dirs = append(dirs, filepath.Join(a.facts.Home, ".config", "go", "telemetry"))
	}
	for _, dir := range dirs {
		if policy.Within(path, dir) {
			return true
		}
	}
	return false
}
