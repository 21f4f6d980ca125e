package run

import (
	"bytes"
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
		{4, []string{"ab", "cd"}, []string{"abcd"}},              // fills the ring exactly
		{4, []string{"ab", "cd", "e"}, []string{"bcde"}},         // one past
		{4, []string{"abc", "defgh", "ij"}, []string{"ghij"}},    // a write longer than the ring, then a wrap
		{5, []string{"abc", "de\nf", "g"}, []string{"de", "fg"}}, // wraps inside a write
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

// TestTailWriterIsTheTail: whatever the sizes of the writes, the tail is
// the last max bytes written, and a write allocates nothing once the ring
// is there (the command's whole stderr passes through it).
func TestTailWriterIsTheTail(t *testing.T) {
	var all []byte
	tw := &tailWriter{max: 1000}
	for i := range 5000 {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, (i*7919)%1500)
		tw.Write(b)
		all = append(all, b...)
		want := all[max(0, len(all)-tw.max):]
		if got := tw.bytes(); !bytes.Equal(got, want) {
			t.Fatalf("after write %d (%d bytes): tail of %d bytes, want %d", i, len(b), len(got), len(want))
		}
	}
	chunk := make([]byte, 32<<10)
	big := &tailWriter{max: 64 << 10}
	big.Write(chunk)
	if n := testing.AllocsPerRun(100, func() { big.Write(chunk[:12345]) }); n != 0 {
		t.Errorf("a write allocates %v times", n)
	}
}

func TestTailWriterOpen(t *testing.T) {
	tests := []struct {
		writes []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"a\n"}, false},
		{[]string{"a\nb"}, true},
		{[]string{"a", "\n"}, false},
		{[]string{"a\n", ""}, false},
		{[]string{"a\n", "b"}, true},
	}
	for _, tc := range tests {
		tw := &tailWriter{max: 2}
		for _, w := range tc.writes {
			tw.Write([]byte(w))
		}
		if got := tw.open(); got != tc.want {
			t.Errorf("writes %q: open %v, want %v", tc.writes, got, tc.want)
		}
	}
}

// BenchmarkTailWriter: what keeping the tail costs per 32 KiB the command
// writes to stderr.
func BenchmarkTailWriter(b *testing.B) {
	chunk := make([]byte, 32<<10)
	tw := &tailWriter{max: 64 << 10}
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		tw.Write(chunk)
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
	network, err := grant.Parse("inspect,network=on")
	if err != nil {
		t.Fatal(err)
	}
	req := &escalate.Request{Grant: "files=read,shell=inspect,network=off,desktop=off", Workdir: "/w", Denials: []escalate.DeniedAct{{
		ID: "d1",
		Alternatives: []escalate.Alternative{
			{ID: "d1.route", Kind: escalate.KindRoute, Description: "use the route"},
			{ID: "d1.network", Kind: escalate.KindGrant, Args: []string{"--grant", "inspect,network=on"},
				Widen: escalate.Widen{Kind: escalate.KindGrant, Grant: network}},
		},
	}}}
	ceiling := escalate.Ceiling{Grant: grant.Ceiling(), Source: grant.CeilingDefault}
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
			ceiling: escalate.Ceiling{Grant: grant.Grant{Files: grant.FilesRead, Shell: grant.ShellInspect}, Source: grant.CeilingFlag},
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
