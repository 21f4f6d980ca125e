package run

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox"
)

func TestObserverBlind(t *testing.T) {
	tests := []struct {
		right string
		want  bool
	}{
		{"read_file", true},
		{"read_dir", true},
		{"execute", true},
		{"read_file,execute", true},
		{"write_file", false},
		{"make_reg", false},
		{"read_file,write_file", false},
		{"connect_tcp", false},
		{"protected", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := observerBlind(sandbox.Denial{Right: tc.right}); got != tc.want {
			t.Errorf("observerBlind(%q) = %v, want %v", tc.right, got, tc.want)
		}
	}
}

func TestSummaryStatus(t *testing.T) {
	tests := []struct {
		name string
		s    Summary
		want int
	}{
		{"the command's", Summary{ExitCode: 3}, 3},
		{"a rerun's", Summary{ExitCode: 1, Retry: &Summary{ExitCode: 0}}, 0},
		{"a failed rerun's", Summary{ExitCode: 1, Retry: &Summary{ExitCode: ExitFailed}}, ExitFailed},
		{"the command succeeded, a step after it failed", Summary{ExitCode: 0, AfterRunFailed: []string{"settling the quarantine"}}, ExitFailed},
		{"the command's own failure comes first", Summary{ExitCode: 3, AfterRunFailed: []string{"x"}}, 3},
		{"a rerun that succeeded, with a step after it failed", Summary{ExitCode: 1, Retry: &Summary{ExitCode: 0, AfterRunFailed: []string{"x"}}}, ExitFailed},
		{"a step after the first attempt failed, the rerun is clean", Summary{ExitCode: 0, AfterRunFailed: []string{"x"}, Retry: &Summary{ExitCode: 0}}, 0},
	}
	for _, tc := range tests {
		if got := tc.s.Status(); got != tc.want {
			t.Errorf("%s: Status() = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestFillSummary(t *testing.T) {
	out := outcome{
		rep: sandbox.Report{Degraded: true, Gaps: []sandbox.Gap{{What: "network", Essential: true}, {What: "signals"}}},
		res: sandbox.Result{Signal: syscall.SIGTERM, Killed: 2, Swept: []string{"/w/.git/hooks/x"}, Warnings: []string{"w"}, AfterRunFailed: []string{"a"}},
		req: &escalate.Request{Grant: "g"}, code: 143,
	}
	var s Summary
	fillSummary(&s, out)
	want := Summary{Degraded: true, Gaps: []string{"network"}, ExitCode: 143, Signal: int(syscall.SIGTERM), Killed: 2,
		Swept: []string{"/w/.git/hooks/x"}, Warnings: []string{"w"}, AfterRunFailed: []string{"a"}, Request: out.req}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("fillSummary = %+v, want %+v", s, want)
	}
}

func TestTailWriter(t *testing.T) {
	tests := []struct {
		max    int
		writes []string
		want   []string
	}{
		{64, []string{"one\ntwo\n"}, []string{"one", "two"}},
		{64, []string{"par", "tial\nline"}, []string{"partial", "line"}},
		{7, []string{"first line\n", "second\n"}, []string{"second"}},
		{8, []string{"first line\n", "second\n"}, []string{"", "second"}},
		{4, []string{"abcdefgh"}, []string{"efgh"}},
		{64, nil, nil},
	}
	for _, tc := range tests {
		tw := &tailWriter{max: tc.max}
		for _, w := range tc.writes {
			if n, err := tw.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if got := tw.lines(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("max %d, writes %q: lines %q, want %q", tc.max, tc.writes, got, tc.want)
		}
	}
}

func TestTerminalDecision(t *testing.T) {
	tests := []struct {
		line string
		want escalate.Decision
		err  string
	}{
		{"y\n", escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun}, ""},
		{" yes ", escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun}, ""},
		{"d1.allow-write, d2.route\n", escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun,
			Alternatives: []string{"d1.allow-write", "d2.route"}}, ""},
		{"\n", escalate.Decision{}, "denied on the terminal"},
		{"no", escalate.Decision{}, "denied on the terminal"},
		{"a,,b", escalate.Decision{}, "empty id"},
	}
	for _, tc := range tests {
		got, err := terminalDecision(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	req := &escalate.Request{Grant: "files=read,shell=inspect,network=off,desktop=off", Workdir: "/w", Denials: []escalate.DeniedAct{{
		ID: "d1",
		Alternatives: []escalate.Alternative{
			{ID: "d1.route", Kind: escalate.KindRoute, Description: "use the route"},
			{ID: "d1.network", Kind: escalate.KindGrant, Args: []string{"--grant", "inspect,network=on"}},
		},
	}}}
	ceiling := escalate.Ceiling{Grant: grant.Ceiling(), Source: escalate.CeilingDefault}
	approve := func(ids ...string) Approver {
		return func(context.Context, *escalate.Request) (escalate.Decision, error) {
			return escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun, Alternatives: ids}, nil
		}
	}
	tests := []struct {
		name     string
		approver Approver
		ceiling  escalate.Ceiling
		want     DecisionSummary
		widening bool
	}{
		{name: "no approver", want: DecisionSummary{Reason: "no approver to ask"}},
		{name: "the approver fails", approver: func(context.Context, *escalate.Request) (escalate.Decision, error) {
			return escalate.Decision{}, errors.New("approver \"false\" failed: exit status 1")
		}, want: DecisionSummary{Reason: "approver \"false\" failed: exit status 1"}},
		{name: "the narrowest widening", approver: approve(), ceiling: ceiling, widening: true, want: DecisionSummary{
			Approved: true, Args: []string{"--grant", "inspect,network=on"}, IDs: []string{"d1.network"}, Scope: escalate.ScopeRun}},
		{name: "a route", approver: approve("d1.route"), ceiling: ceiling, widening: true, want: DecisionSummary{
			Approved: true, Args: []string{"--grant", "inspect"}, IDs: []string{"d1.route"}, Scope: escalate.ScopeRun, Routes: []string{"use the route"}}},
		{name: "beyond the ceiling", approver: approve("d1.network"),
			ceiling: escalate.Ceiling{Grant: grant.Grant{Files: grant.FilesRead, Shell: grant.ShellInspect}, Source: escalate.CeilingFlag},
			want:    DecisionSummary{Reason: "widening refused: network=on exceeds the ceiling's network=off; the ceiling is inspect (from --ceiling)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, w := decide(context.Background(), req, tc.approver, tc.ceiling, nil)
			if !reflect.DeepEqual(*d, tc.want) {
				t.Errorf("decision %+v, want %+v", *d, tc.want)
			}
			if (w != nil) != tc.widening {
				t.Errorf("widening %+v, want one: %v", w, tc.widening)
			}
		})
	}
}
