package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
)

func TestRetrySteps(t *testing.T) {
	mg := func(spec string) grant.Grant {
		g, err := grant.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	cur := mg("verify,network=off")
	ceiling := escalate.Ceiling{Grant: mg("verify"), Source: grant.CeilingFlag}
	fetchFirst := escalate.Alternative{ID: "d1.cargo-fetch-first", Kind: escalate.KindRoute, Commands: [][]string{
		{"wrun", "--grant", "verify", "--", "cargo", "fetch"},
		{"wrun", "--grant", "verify,network=off", "--", "cargo", "build", "--offline"},
	}}
	tests := []struct {
		name  string
		flags []string
		role  []string
		w     escalate.Widening
		steps []string // each step's args
		note  string
	}{
		{name: "a widening: the command once more", w: escalate.Widening{Grant: cur, AllowWrite: []string{"/opt/x"}},
			steps: []string{"--grant verify,network=off --allow-write /opt/x"}},
		{name: "nothing widened, no route: nothing", w: escalate.Widening{Grant: cur}},
		{name: "a route: its commands", w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{fetchFirst}},
			steps: []string{"--grant verify,network=on -- cargo fetch", "--grant verify,network=off -- cargo build --offline"}},
		{name: "a route without commands", w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{{ID: "d1.use-tmpdir", Kind: escalate.KindRoute, Description: "write under $TMPDIR"}}},
			note: "approved d1.use-tmpdir cannot be run automatically (it names no command)"},
		{name: "a route without commands beside a widening: the widening", w: escalate.Widening{Grant: cur, AllowWrite: []string{"/opt/x"},
			Routes: []escalate.Alternative{{ID: "d2.ask-parent", Kind: escalate.KindAskParent}}},
			steps: []string{"--grant verify,network=off --allow-write /opt/x"}, note: "d2.ask-parent cannot be run automatically"},
		{name: "two routes: none", w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{fetchFirst, {ID: "d2.cargo-offline", Kind: escalate.KindRoute,
			Commands: [][]string{{"wrun", "--grant", "verify,network=off", "--", "cargo", "build", "--offline"}}}}},
			note: "a retry runs one route; none was run"},
		{name: "a route beyond the ceiling", w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{{ID: "d1.r", Kind: escalate.KindRoute,
			Commands: [][]string{{"wrun", "--grant", "full", "--", "cargo", "fetch"}}}}},
			note: "exceeds the ceiling"},
		{name: "a route with flags of its own", w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{{ID: "d1.r", Kind: escalate.KindRoute,
			Commands: [][]string{{"wrun", "--grant", "verify", "--allow-write", "/", "--", "sh"}}}}},
			note: "are not the run's own"},
		{name: "a route with the run's own flags", flags: []string{"--keep-env", "GOFLAGS"}, role: []string{"--role", "verifier"},
			w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{{ID: "d1.r", Kind: escalate.KindRoute,
				Commands: [][]string{{"wrun", "--grant", "verify", "--keep-env", "GOFLAGS", "--", "cargo", "fetch"},
					{"wrun", "--grant", "verify,network=off", "--keep-env", "GOFLAGS", "--role", "verifier", "--", "cargo", "build"}}}}},
			steps: []string{"--grant verify,network=on -- cargo fetch", "--grant verify,network=off -- cargo build"}},
		{name: "a route without the run's own flags", flags: []string{"--keep-env", "GOFLAGS"},
			w:    escalate.Widening{Grant: cur, Routes: []escalate.Alternative{fetchFirst}},
			note: "are not the run's own"},
		{name: "a route that is not wrun", w: escalate.Widening{Grant: cur, Routes: []escalate.Alternative{{ID: "d1.r", Kind: escalate.KindRoute,
			Commands: [][]string{{"sh", "-c", "rm -rf /"}}}}},
			note: "is not a wrun --grant SPEC [the run's own flags] -- COMMAND line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, notes := retrySteps(&tc.w, cur, []string{"cargo", "build"}, tc.flags, tc.role, ceiling)
			var got []string
			for _, s := range steps {
				got = append(got, strings.Join(s.args(), " "))
				if !s.grant.Within(ceiling.Grant) {
					t.Errorf("step grant %s beyond the ceiling", s.grant)
				}
			}
			if !slices.Equal(got, tc.steps) {
				t.Errorf("steps %q, want %q", got, tc.steps)
			}
			if tc.note == "" && len(notes) > 0 || tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
		})
	}
}
