package main

import (
	"bytes"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/run"
)

func TestWriteAttempt(t *testing.T) {
	nscd := escalate.DeniedAct{Right: "socket_unix", Summary: "wrun: denied: connect /run/nscd/socket"}
	write := escalate.DeniedAct{Right: "make_reg", Summary: "wrun: denied: create /w/out"}
	tests := []struct {
		name string
		s    run.Summary
		want string
	}{
		{"nothing to say", run.Summary{}, ""},
		{"removed and warned", run.Summary{Swept: []string{"/w/.git/hooks/x"}, Warnings: []string{"after the run: x"}},
			"wrun: removed /w/.git/hooks/x: the command created it, and it must not exist (see wrun explain)\nwrun: warning: after the run: x\n"},
		{"nscd probes are not worth a line when the command succeeded",
			run.Summary{Request: &escalate.Request{Denials: []escalate.DeniedAct{nscd, write}}},
			"wrun: denied: create /w/out\n"},
		{"every denial when it failed", run.Summary{ExitCode: 1, Request: &escalate.Request{Denials: []escalate.DeniedAct{nscd, write}}},
			"wrun: denied: connect /run/nscd/socket\nwrun: denied: create /w/out\n"},
		{"degraded", run.Summary{Degraded: true}, "wrun: DEGRADED run: not everything the grant promises was enforced\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		writeAttempt(&b, &tc.s)
		if b.String() != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}

func TestWriteDecision(t *testing.T) {
	req := &escalate.Request{Command: []string{"cargo", "test"}}
	tests := []struct {
		name string
		d    run.DecisionSummary
		want string
	}{
		{"denied", run.DecisionSummary{Reason: "denied on the terminal"}, "wrun: escalation not approved: denied on the terminal\n"},
		{"approved", run.DecisionSummary{Approved: true, IDs: []string{"d1.a", "d2.b"}, Args: []string{"--grant", "verify"}, Routes: []string{"run cargo fetch first"}},
			"wrun: approved (d1.a, d2.b): rerun with wrun --grant verify -- cargo test\nwrun: approved route: run cargo fetch first\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		writeDecision(&b, req, &tc.d)
		if b.String() != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}
