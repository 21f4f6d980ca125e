package run

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/internal/schematest"
)

func TestEventsLines(t *testing.T) {
	var out bytes.Buffer
	e := NewEvents(&out, testRun)
	e.Started("files=write,shell=verify,network=off,desktop=off", "landlock", false)
	e.Denial(escalate.DeniedAct{ID: "d1", Op: "create", Path: "/x", Right: "make_reg", Count: 1, Evidence: escalate.EvidenceExact,
		Summary: "wrun: denied create /x", WithheldBy: escalate.WithheldBy{Field: "files", Rule: "outside-scope", Why: "outside"},
		Alternatives: []escalate.Alternative{{ID: "d1.ask-parent", Kind: escalate.KindAskParent, Description: "ask", Try: "ask the parent",
			Args: []string{}, Grant: "files=write,shell=verify,network=off,desktop=off", WithinCeiling: true}}})
	e.Answer("q1", false, "", "no answer within 1s")
	s := Summary{Grant: "files=write,shell=verify,network=off,desktop=off", Sandbox: "landlock", RunID: testRun}
	e.Exited(s.Stamp())
	e.Denial(escalate.DeniedAct{ID: "d2"}) // after exited: nothing
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		if err := schematest.Validate(EventsSchema(), []byte(l)); err != nil {
			t.Errorf("line %d: %v\n%s", i+1, err, l)
		}
		var ev Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq != uint64(i+1) || ev.RunID != testRun {
			t.Errorf("line %d: seq %d run %q (%v)", i+1, ev.Seq, ev.RunID, err)
		}
	}
}
