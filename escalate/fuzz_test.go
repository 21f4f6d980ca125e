package escalate

import (
	"slices"
	"testing"
)

// FuzzParseDecision: an approver's answer is untrusted bytes. Nothing
// makes ParseDecision panic; only a well-formed approval approves, and
// anything it does not understand is a deny that says why.
func FuzzParseDecision(f *testing.F) {
	for _, s := range []string{`{"decision":"approve"}`, `{"decision":"deny"}`, `{"decision":"approve","alternatives":["d1.allow-write"],"scope":"session"}`,
		`{"decision":"approve"} {"decision":"approve"}`, `{"decision":"APPROVE"}`, `{"decision":"approve","extra":1}`, ``, `null`, `[]`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDecision(b)
		if err != nil {
			if d.Decision != DecisionDeny || d.Reason == "" {
				t.Fatalf("ParseDecision(%q) failed (%v) but returned %+v, not a deny with a reason", b, err, d)
			}
			return
		}
		if d.Decision != DecisionApprove && d.Decision != DecisionDeny {
			t.Fatalf("ParseDecision(%q) = %+v: neither approve nor deny", b, d)
		}
		if d.Scope != ScopeRun && d.Scope != ScopeSession {
			t.Fatalf("ParseDecision(%q) = %+v: unknown scope", b, d)
		}
		if slices.Contains(d.Alternatives, "") {
			t.Fatalf("ParseDecision(%q) = %+v: an empty alternative id", b, d)
		}
	})
}
