package escalate

import (
	"path/filepath"

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
// (Decide) and records the rest: each list in the order first seen.
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
	return Sorted{Request: a.request(run, ask), Ignored: a.acts(ignored, "i"), Expected: a.acts(expected, "e")}
}

// Expected reports whether d is a refusal wrun expects and cannot prevent:
// a write under the go command's telemetry directory
// (os.UserConfigDir()/go/telemetry). Go's telemetry mode is read from a
// file there, not from the environment, so every go command under a
// read-only home is refused its counter files; it needs none of them.
func (a *Analyzer) Expected(d sandbox.Denial) bool {
	if d.Path == "" || ParseRights(d.Right)&writeRights == 0 && d.Right != RightMetadata {
		return false
	}
	path := filepath.Clean(d.Path)
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
