package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// denial is the part of a denied act in wrun's JSON summary that the
// report uses.
type denial struct {
	Op         string `json:"op"`
	Path       string `json:"path"`
	Addr       string `json:"addr"`
	Right      string `json:"right"`
	Program    string `json:"program"`
	Count      int    `json:"count"`
	WithheldBy struct {
		Field string `json:"field"`
		Rule  string `json:"rule"`
	} `json:"withheld_by"`
	Summary      string `json:"summary"`
	Alternatives []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	} `json:"alternatives"`
}

// summary is wrun's --json-fd summary.
type summary struct {
	ExitCode       int      `json:"exit_code"`
	DenialsIgnored []denial `json:"denials_ignored"`
	Expected       []denial `json:"denials_expected"`
	Request        *struct {
		Denials []denial `json:"denials"`
	} `json:"request"`
}

func readSummary(path string) (summary, error) {
	var s summary
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("reading wrun's summary: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("decoding wrun's summary %s: %w", path, err)
	}
	return s, nil
}

// all is every denial the summary holds, whatever the run's status.
func (s summary) all() []denial {
	var out []denial
	if s.Request != nil {
		out = append(out, s.Request.Denials...)
	}
	out = append(out, s.DenialsIgnored...)
	return append(out, s.Expected...)
}

// Verdicts on a difference.
const (
	verdictKeep    = "keep: a write into its own source tree, which verify keeps read-only"
	verdictUnix    = "break: a UNIX socket refused"
	verdictBreak   = "break"
	verdictNoTrace = "break: no denial recorded"
	verdictFlaky   = "flaky: differed once, not again on fresh copies (not a break)"
)

// isTelemetry says whether d is the go command writing its telemetry
// counters in HOME (~/.config/go/telemetry), which verify keeps read-only
// and which fails nothing: every go command under verify has them while
// the user's telemetry mode is "local", Go's default.
func (d denial) isTelemetry() bool {
	return d.WithheldBy.Rule == "protected" && strings.Contains(d.Path, "/.config/go/telemetry/")
}

// isCargoLock says whether d is cargo opening its package cache lock in
// CARGO_HOME, which verify keeps read-only: cargo goes on without the lock
// when offline, so it fails nothing.
func (d denial) isCargoLock() bool {
	return d.WithheldBy.Rule == "tool-cache" && strings.HasSuffix(d.Path, "/.package-cache")
}

// isUnix says whether d is the refusal of a UNIX socket.
func (d denial) isUnix() bool {
	return d.Right == "socket_unix" || d.Addr == "AF_UNIX" || strings.HasPrefix(d.Addr, "unix:") ||
		strings.Contains(d.WithheldBy.Rule, "unix")
}

// inTree says whether d is a refused write inside the project's tree.
func (d denial) inTree(tree string) bool {
	if d.WithheldBy.Rule != "workspace-read-only" || d.Path == "" {
		return false
	}
	rel, err := filepath.Rel(tree, d.Path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// namesAlternative says whether a denial in the source tree tells the
// child where to write instead (the private temp dir) and how to widen.
func (d denial) namesAlternative() bool {
	route, widen := false, false
	for _, a := range d.Alternatives {
		switch {
		case strings.HasSuffix(a.ID, ".use-tmpdir"):
			route = true
		case a.Kind == "allow-write" || a.Kind == "grant":
			widen = true
		}
	}
	return route && widen && strings.Contains(d.Summary, "read-only")
}

// classify gives the verdict on a project whose verify run differs from
// its bare run, from the denials of the verify run.
func classify(ds []denial, tree string) (string, bool) {
	if len(ds) == 0 {
		return verdictNoTrace, false
	}
	unix, keep, other := false, true, false
	altOK := true
	for _, d := range ds {
		switch {
		case d.isUnix():
			unix = true
			keep = false
		case d.inTree(tree):
			if !d.namesAlternative() {
				altOK = false
			}
		default:
			other = true
			keep = false
		}
	}
	switch {
	case keep:
		return verdictKeep, altOK
	case unix && !other:
		return verdictUnix, false
	default:
		return verdictBreak, false
	}
}

// describe is one denial on one line of the report.
func (d denial) describe() string {
	what := d.Path
	if what == "" {
		what = d.Addr
	}
	n := ""
	if d.Count > 1 {
		n = fmt.Sprintf(" ×%d", d.Count)
	}
	return fmt.Sprintf("`%s %s`%s by %s (%s/%s)", d.Op, what, n, filepath.Base(d.Program), d.WithheldBy.Field, d.WithheldBy.Rule)
}
