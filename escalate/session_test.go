package escalate

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox"
)

// TestRememberedApprovals: what a session remembers of an approval, kept
// as JSON, approves the same widening in a later run's request, whatever
// its id there; the control is a request in another workspace.
func TestRememberedApprovals(t *testing.T) {
	a := analyzer(t, "verify", Facts{Exists: existing("/opt/tool/x")})
	deny := sandbox.Denial{Op: access.OpCreate, Path: "/opt/tool/y", Right: "make_reg", Exact: true}
	req := a.Request(runEnd, []sandbox.Denial{deny})
	w, err := Approve(req, Decision{Decision: DecisionApprove, Alternatives: []string{"d1.allow-write"}, Scope: ScopeSession}, Ceiling{Grant: grant.Ceiling()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ToRemember(req, w))
	if err != nil {
		t.Fatal(err)
	}
	var rem []Remembered
	if err := json.Unmarshal(b, &rem); err != nil {
		t.Fatal(err)
	}
	if len(rem) != 1 || !slices.Equal(rem[0].Args, []string{"--allow-write", "/opt/tool"}) {
		t.Fatalf("remembered %+v", rem)
	}
	// A later run: another create there, offered the same widening.
	later := a.Request(runEnd, []sandbox.Denial{{Op: access.OpCreate, Path: "/opt/tool/z", Right: "make_reg", Exact: true}})
	d, ok := FromRemembered(later, rem)
	if !ok || !slices.Equal(d.Alternatives, []string{"d1.allow-write"}) || d.Scope != ScopeSession {
		t.Errorf("later run: %+v, %v", d, ok)
	}
	other := *later
	other.Workdir = "/elsewhere"
	if d, ok := FromRemembered(&other, rem); ok {
		t.Errorf("another workspace: %+v", d)
	}
}
