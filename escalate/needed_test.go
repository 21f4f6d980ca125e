package escalate

import (
	"slices"
	"testing"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// TestDecide is the rule as a table: exit code × kind of denial → asked
// for, recorded only, or recorded and always printed.
func TestDecide(t *testing.T) {
	ordinary := WithheldBy{Field: "shell", Rule: "tool-cache"}
	hidden := WithheldBy{Field: FieldHidden, Rule: "hidden"}
	protected := WithheldBy{Field: FieldProtected, Rule: "protected"}
	network := WithheldBy{Field: "network", Rule: "network-off"}
	tests := []struct {
		name     string
		exit     int
		by       WithheldBy
		expected bool
		want     Need
	}{
		{"succeeded, ordinary path", 0, ordinary, false, NeedIgnored},
		{"succeeded, network", 0, network, false, NeedIgnored},
		{"succeeded, hidden path", 0, hidden, false, NeedIgnoredShown},
		{"succeeded, protected path", 0, protected, false, NeedIgnoredShown},
		{"succeeded, expected (Go telemetry)", 0, protected, true, NeedExpected},
		{"failed, ordinary path", 1, ordinary, false, NeedAsk},
		{"failed, network", 101, network, false, NeedAsk},
		{"failed, hidden path", 1, hidden, false, NeedAsk},
		{"failed, protected path", 2, protected, false, NeedAsk},
		{"failed, expected (Go telemetry)", 1, protected, true, NeedExpected},
		{"killed by a signal, ordinary path", 143, ordinary, false, NeedAsk},
	}
	for _, tc := range tests {
		if got := Decide(tc.exit, tc.by, tc.expected); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSort: a run's denials sorted by Decide, on a real classification.
func TestSort(t *testing.T) {
	// The workspace made writable (--allow-write): its hooks are a
	// protected path inside a writable tree, which the policy carves.
	a := analyzer(t, "verify", Facts{Argv: []string{"go", "test", "./..."}}, policy.Rule{Path: ws, Access: policy.ReadWrite, Source: "--allow-write"})
	cache := sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true}
	telemetry := sandbox.Denial{Op: access.OpCreate, Path: home + "/.config/go/telemetry/local/go@go1.26-linux-amd64-2026-12-02.v1.count", Right: "make_reg", Exact: true}
	ssh := sandbox.Denial{Op: access.OpOpen, Path: home + "/.ssh/id_ed25519", Right: "read_file", Exact: true}
	hook := sandbox.Denial{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg", Exact: true}
	// A fresh HOME's .config, which no rule opens: never printed on
	// success, whatever would protect it under a wider grant.
	config := sandbox.Denial{Op: access.OpMkdir, Path: home + "/.config", Right: "make_dir", Exact: true}
	all := []sandbox.Denial{cache, telemetry, ssh, hook, config}

	paths := func(acts []DeniedAct) (out []string) {
		for _, d := range acts {
			out = append(out, d.ID+" "+d.Path)
		}
		return out
	}
	ok := Run{Time: runEnd.Time, ExitCode: 0}
	s := a.Sort(ok, all)
	if s.Request != nil {
		t.Errorf("a request for a run that succeeded: %v", paths(s.Request.Denials))
	}
	if got := paths(s.Ignored); len(got) != 4 || got[0] != "i1 "+cache.Path || got[1] != "i2 "+ssh.Path || got[2] != "i3 "+hook.Path || got[3] != "i4 "+config.Path {
		t.Fatalf("ignored %v", got)
	}
	if s.Ignored[0].Shown() || !s.Ignored[1].Shown() || !s.Ignored[2].Shown() || s.Ignored[3].Shown() {
		t.Errorf("shown: only the hidden and the protected path: %+v", s.Ignored)
	}
	if got := paths(s.Expected); len(got) != 1 || got[0] != "e1 "+telemetry.Path {
		t.Errorf("expected %v", got)
	}
	if alts := s.Ignored[0].Alternatives; len(alts) == 0 || alts[0].ID[:3] != "i1." {
		t.Errorf("alternatives of a recorded denial: %+v", alts)
	}

	s = a.Sort(runEnd, all) // failed
	if s.Request == nil || s.Ignored != nil {
		t.Fatalf("a failed run: request %+v, ignored %+v", s.Request, s.Ignored)
	}
	// Ordered by how likely each caused the failure: the writes (the
	// later first), then the read.
	if got := paths(s.Request.Denials); len(got) != 4 || got[0] != "d1 "+config.Path || got[1] != "d2 "+hook.Path || got[2] != "d3 "+cache.Path || got[3] != "d4 "+ssh.Path {
		t.Errorf("asked for %v", got)
	}
	if len(s.Expected) != 1 {
		t.Errorf("expected %v", paths(s.Expected))
	}
	b, err := s.Request.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := validateRequest(b); err != nil {
		t.Errorf("request does not validate: %v", err)
	}

	// Only the telemetry failed to be written: nothing to ask for.
	if s := a.Sort(runEnd, []sandbox.Denial{telemetry}); s.Request != nil || len(s.Expected) != 1 {
		t.Errorf("telemetry alone: %+v", s)
	}
}

// TestExpected: only writes under the go command's telemetry directory.
func TestExpected(t *testing.T) {
	a := analyzer(t, "verify", Facts{Env: append([]string{"XDG_CONFIG_HOME=/x/cfg"}, fixtureEnv...)})
	tests := []struct {
		path, right string
		want        bool
	}{
		{home + "/.config/go/telemetry/local/x.count", "make_reg", true},
		{home + "/.config/go/telemetry/local", "make_dir", true},
		{home + "/.config/go/telemetry", "make_dir", true},
		{"/x/cfg/go/telemetry/local/x.count", "write_file", true},
		{home + "/.config/go/telemetry/../../../.bashrc", "write_file", false},
		{home + "/.config/go/env", "write_file", false},
		{home + "/.config/go/telemetry-not", "make_reg", false},
		{home + "/.config/go/telemetry/local/x.count", "read_file", false},
		// cargo's lock files at the top of CARGO_HOME, and nothing else of it
		{home + "/.cargo/.package-cache", "write_file", true},
		{home + "/.cargo/.package-cache-mutate", "make_reg", true},
		{home + "/.cargo/.global-cache", "write_file", true},
		{home + "/.cargo/registry/.package-cache", "write_file", false},
		{home + "/.cargo/credentials.toml", "write_file", false},
		{ws + "/.package-cache", "make_reg", false},
		{ws + "/.config/go/telemetry/x", "make_reg", false},
	}
	for _, tc := range tests {
		if got := a.Expected(sandbox.Denial{Op: access.OpCreate, Path: tc.path, Right: tc.right}); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.right, tc.path, got, tc.want)
		}
	}
}

// TestSortOrder: what a failed run asks for comes likeliest cause first:
// what the command reported in its output, then writes before reads, and
// among equals the latest first.
func TestSortOrder(t *testing.T) {
	a := analyzer(t, "verify", Facts{Argv: []string{"cargo", "test"}})
	read := sandbox.Denial{Op: access.OpOpen, Path: home + "/.ssh/config", Right: "read_file", Exact: true}
	cache := sandbox.Denial{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true}
	lock := sandbox.Denial{Op: access.OpOpen, Path: ws + "/Cargo.lock", Right: "write_file", Exact: true}
	out := sandbox.Denial{Op: access.OpCreate, Path: ws + "/out.txt", Right: "make_reg", Exact: true}
	paths := func(s Sorted) (out []string) {
		for _, d := range s.Request.Denials {
			out = append(out, d.ID+" "+d.Path)
		}
		return out
	}
	tests := []struct {
		name     string
		seen     []sandbox.Denial
		reported []string // lines of the command's output
		want     []sandbox.Denial
	}{
		{"writes before reads, the latest first", []sandbox.Denial{read, cache, lock}, nil, []sandbox.Denial{lock, cache, read}},
		{"reported first", []sandbox.Denial{lock, cache, read},
			[]string{"error: failed to open: " + cache.Path, "Caused by:", "  Permission denied (os error 13)"},
			[]sandbox.Denial{cache, lock, read}},
		{"a reported read before unreported writes", []sandbox.Denial{read, out, lock},
			[]string{"cat: " + read.Path + ": Permission denied"},
			[]sandbox.Denial{read, lock, out}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := Run{Time: runEnd.Time, ExitCode: 101, Reported: a.Infer(tc.reported)}
			if len(tc.reported) > 0 && len(run.Reported) == 0 {
				t.Fatalf("nothing inferred from %q", tc.reported)
			}
			got := paths(a.Sort(run, tc.seen))
			var want []string
			for i, d := range tc.want {
				want = append(want, "d"+string(rune('1'+i))+" "+d.Path)
			}
			if !slices.Equal(got, want) {
				t.Errorf("order\n got %v\nwant %v", got, want)
			}
		})
	}
}
