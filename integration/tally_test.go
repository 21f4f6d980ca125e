//go:build linux

package integration

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The escape suite's tally: every escape attempt records how it ended,
// and TestMain prints a line per class (the top-level test) and one
// summary line:
//
//	escape suite: N attempts, N held, N skipped (reasons), N escaped
var tally struct {
	mu      sync.Mutex
	classes map[string]*classTally
}

type classTally struct {
	held, escaped, skipped int
	reasons                map[string]int
}

// escapeAttempt counts the (sub)test t as one escape attempt: held if it
// passes, escaped if it fails, skipped if it skips. Call it first thing in
// the attempt's subtest.
func escapeAttempt(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		switch {
		case t.Skipped():
			recordEscape(t.Name(), "skipped", "skipped inside the attempt (see -v)")
		case t.Failed():
			recordEscape(t.Name(), "escaped", "")
		default:
			recordEscape(t.Name(), "held", "")
		}
	})
}

// escapeSkipped counts n attempts that did not run, for reason.
func escapeSkipped(t *testing.T, n int, reason string) {
	for i := 0; i < n; i++ {
		recordEscape(t.Name(), "skipped", reason)
	}
}

func recordEscape(name, outcome, reason string) {
	class, _, _ := strings.Cut(name, "/")
	tally.mu.Lock()
	defer tally.mu.Unlock()
	if tally.classes == nil {
		tally.classes = map[string]*classTally{}
	}
	c := tally.classes[class]
	if c == nil {
		c = &classTally{reasons: map[string]int{}}
		tally.classes[class] = c
	}
	switch outcome {
	case "held":
		c.held++
	case "escaped":
		c.escaped++
	default:
		c.skipped++
		c.reasons[reason]++
	}
}

// printTally writes the per-class lines and the summary line, if any
// escape attempt ran.
func printTally(w io.Writer) {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	if len(tally.classes) == 0 {
		return
	}
	names := make([]string, 0, len(tally.classes))
	for n := range tally.classes {
		names = append(names, n)
	}
	sort.Strings(names)
	var held, escaped, skipped int
	reasons := map[string]int{}
	for _, n := range names {
		c := tally.classes[n]
		fmt.Fprintf(w, "escape class %s: %d attempts, %d held, %d skipped, %d escaped\n", n, c.held+c.escaped+c.skipped, c.held, c.skipped, c.escaped)
		held, escaped, skipped = held+c.held, escaped+c.escaped, skipped+c.skipped
		for r, k := range c.reasons {
			reasons[r] += k
		}
	}
	var rs []string
	for r, k := range reasons {
		rs = append(rs, fmt.Sprintf("%d: %s", k, r))
	}
	sort.Strings(rs)
	why := ""
	if len(rs) > 0 {
		why = " (" + strings.Join(rs, "; ") + ")"
	}
	fmt.Fprintf(w, "escape suite: %d attempts, %d held, %d skipped%s, %d escaped\n", held+escaped+skipped, held, skipped, why, escaped)
}
