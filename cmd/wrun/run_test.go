package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/run"
)

func TestWriteAttempt(t *testing.T) {
	nscd := escalate.DeniedAct{Right: "socket_unix", Summary: "wrun: denied: connect /run/nscd/socket"}
	write := escalate.DeniedAct{Right: "make_reg", Summary: "wrun: denied: create /w/out"}
	ssh := escalate.DeniedAct{Right: "read_file", Summary: "wrun: denied: read /h/.ssh/x", WithheldBy: escalate.WithheldBy{Field: escalate.FieldHidden}}
	hook := escalate.DeniedAct{Right: "make_reg", Summary: "wrun: denied: create /w/.git/hooks/x", WithheldBy: escalate.WithheldBy{Field: escalate.FieldProtected}}
	telemetry := escalate.DeniedAct{Right: "make_reg", Summary: "wrun: denied: create /h/.config/go/telemetry/local/x", WithheldBy: escalate.WithheldBy{Field: escalate.FieldProtected}}
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
		{"a succeeded run's ordinary denials are recorded, not said", run.Summary{DenialsIgnored: []escalate.DeniedAct{write}}, ""},
		{"expected denials are not said", run.Summary{ExitCode: 1, DenialsExpected: []escalate.DeniedAct{telemetry}}, ""},
		{"a hidden or protected path is said even when the command succeeded",
			run.Summary{DenialsIgnored: []escalate.DeniedAct{write, ssh, hook}},
			"wrun: denied: read /h/.ssh/x\nwrun: denied: create /w/.git/hooks/x\n" + recorded(3)},
		{"verbose: every recorded denial", run.Summary{DenialsIgnored: []escalate.DeniedAct{write, ssh}, DenialsExpected: []escalate.DeniedAct{telemetry}},
			"wrun: denied: create /w/out\nwrun: denied: read /h/.ssh/x\n" + recorded(2) + "wrun: expected, not asked for: denied: create /h/.config/go/telemetry/local/x\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		writeAttempt(&b, &tc.s, strings.HasPrefix(tc.name, "verbose:"))
		if b.String() != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}

func recorded(n int) string {
	return fmt.Sprintf("wrun: the command succeeded, so nothing is asked for: %d denial(s) recorded (denials_ignored in --json)\n", n)
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
