package sandbox

import (
	"fmt"
	"strings"
	"testing"
)

func TestDenialLogBounds(t *testing.T) {
	var l DenialLog
	for i := range MaxDenials + 500 {
		l.Add(Denial{Op: "create", Path: fmt.Sprintf("/x/%d", i), Right: "make_reg", Count: 1})
	}
	// Repeats of kept ones still count on them; of dropped ones, as dropped.
	l.Add(Denial{Op: "create", Path: "/x/0", Right: "make_reg"})
	l.Add(Denial{Op: "create", Path: fmt.Sprintf("/x/%d", MaxDenials+1), Right: "make_reg", Count: 3})
	if l.Len() != MaxDenials {
		t.Errorf("kept %d distinct denials, want %d", l.Len(), MaxDenials)
	}
	if got := l.Denials()[0].Count; got != 2 {
		t.Errorf("the repeat of a kept denial: count %d, want 2", got)
	}
	if l.Dropped() != 503 {
		t.Errorf("dropped %d, want 503", l.Dropped())
	}
	// A path longer than the bound is counted, never kept.
	var m DenialLog
	m.Add(Denial{Op: "create", Path: "/" + strings.Repeat("a", MaxDenialPath), Right: "make_reg"})
	m.Add(Denial{Op: "connect", Addr: strings.Repeat("b", MaxDenialPath+1), Right: "connect_tcp"})
	m.Add(Denial{Op: "create", Path: "/" + strings.Repeat("a", MaxDenialPath-1), Right: "make_reg"})
	if m.Len() != 1 || m.Dropped() != 2 {
		t.Errorf("long paths: kept %d, dropped %d; want 1 and 2", m.Len(), m.Dropped())
	}
	ds, dropped := BoundDenials(append(l.Denials(), Denial{Op: "x", Path: "/new"}))
	if len(ds) != MaxDenials || dropped != 1 {
		t.Errorf("BoundDenials: %d kept, %d dropped", len(ds), dropped)
	}
}
