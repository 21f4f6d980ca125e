package tools

import (
	"slices"
	"strings"
	"testing"
)

func fams(s string) []Family {
	if s == "" {
		return nil
	}
	var out []Family
	for _, f := range strings.Split(s, "+") {
		out = append(out, Family(f))
	}
	return out
}

func testLabels() Labels {
	return Labels{
		Tools: map[string]Family{
			"lint_report":            Read,
			"TodoWrite":              Read, // built in: the label has no effect
			"mcp__github__create_pr": Edit,
			"mcp__screen__snap":      Desktop,
		},
		Servers: map[string]Family{
			"github": Web,
			"docs":   Read,
			"screen": Read,
		},
		NarrowTools:   map[string][]Family{"Grep": {Shell}, "mcp__docs__search": {Search}},
		NarrowServers: map[string][]Family{"github": {Spawn}},
	}
}

func TestDecide(t *testing.T) {
	all := "read+search+edit+shell+web+spawn+mcp+desktop+control"
	tests := []struct {
		name, server, reason string
		families             string
		desktop              bool
		denial               Denial
		needs, missing       string
		from                 string
	}{
		// Every family, built in, granted and not.
		{name: "Read", families: "read", needs: "read", from: "built-in"},
		{name: "read_file", families: "search", denial: NotGranted, needs: "read", missing: "read", from: "built-in"},
		{name: "Glob", families: "search", needs: "search", from: "built-in"},
		{name: "search_file_content", families: "read", denial: NotGranted, needs: "search", missing: "search", from: "built-in"},
		{name: "Edit", families: "read+search+edit", needs: "edit", from: "built-in"},
		{name: "MultiEdit", families: "read+search+shell", denial: NotGranted, needs: "edit", missing: "edit", from: "built-in"},
		{name: "apply_patch", families: "edit", needs: "edit", from: "built-in"},
		{name: "Bash", families: "read+shell", needs: "shell", from: "built-in"},
		{name: "run_shell_command", families: "read", denial: NotGranted, needs: "shell", missing: "shell", from: "built-in"},
		{name: "WebFetch", families: "web", needs: "web", from: "built-in"},
		{name: "WebSearch", families: "read+search+edit+shell", denial: NotGranted, needs: "web", missing: "web", from: "built-in"},
		{name: "Task", families: "spawn", needs: "spawn", from: "built-in"},
		{name: "Task", families: "read", denial: NotGranted, needs: "spawn", missing: "spawn", from: "built-in"},
		// Desktop: desktop=on, the family and a reason.
		{name: "computer", families: all, desktop: true, reason: "click the dialog the test opens", needs: "desktop", from: "built-in"},
		{name: "computer", families: all, desktop: true, denial: DesktopRequiresReason, needs: "desktop", from: "built-in"},
		{name: "computer", families: all, desktop: true, reason: "  ", denial: DesktopRequiresReason, needs: "desktop", from: "built-in"},
		{name: "computer", families: all, desktop: true, reason: "a\nb", denial: DesktopRequiresReason, needs: "desktop", from: "built-in"},
		{name: "computer", families: all, reason: "why", denial: NotGranted, needs: "desktop", missing: "desktop", from: "built-in"},
		{name: "screenshot", families: "read", desktop: true, reason: "why", denial: NotGranted, needs: "desktop", missing: "desktop", from: "built-in"},
		{name: "left_click", families: all, desktop: true, denial: DesktopRequiresReason, needs: "desktop", from: "built-in"},
		// Unknown names: exact match only, never granted.
		{name: "read_File", families: all, desktop: true, reason: "x", denial: Unknown},
		{name: "BASH", families: all, desktop: true, reason: "x", denial: Unknown},
		{name: "Bash ", families: all, denial: Unknown},
		{name: "Bash\x00", families: all, denial: Unknown},
		{name: "frobnicate", families: all, denial: Unknown},
		{name: "", families: all, denial: Unknown},
		// User labels on other tools; one on a built-in name changes
		// nothing.
		{name: "lint_report", families: "read", needs: "read", from: "label:tool"},
		{name: "TodoWrite", families: "read", denial: NotGranted, needs: "control", missing: "control", from: "built-in"},
		// The harness's own control tools, and what only looks like one.
		{name: "TodoWrite", families: "control", needs: "control", from: "built-in"},
		{name: "ExitPlanMode", families: "control", needs: "control", from: "built-in"},
		{name: "update_plan", families: "control", needs: "control", from: "built-in"},
		{name: "attempt_completion", families: "control", needs: "control", from: "built-in"},
		{name: "ask_followup_question", families: "control", needs: "control", from: "built-in"},
		{name: "save_memory", families: "control+read", denial: NotGranted, needs: "edit", missing: "edit", from: "built-in"},
		{name: "new_task", families: "control+shell", denial: NotGranted, needs: "spawn", missing: "spawn", from: "built-in"},
		{name: "todowrite", families: "control", needs: "control", from: "built-in"},
		{name: "TODOWRITE", families: all, denial: Unknown},
		// MCP: the mcp family and a label the grant also has.
		{name: "mcp__github__list_issues", families: "mcp+web+spawn", needs: "web+spawn+mcp", from: "label:server+repository"},
		{name: "mcp__github__list_issues", families: "mcp+web", denial: NotGranted, needs: "web+spawn+mcp", missing: "spawn", from: "label:server+repository"},
		{name: "mcp__github__list_issues", families: "web+spawn", denial: NotGranted, needs: "web+spawn+mcp", missing: "mcp", from: "label:server+repository"},
		{name: "list_issues", server: "github", families: "mcp+web+spawn", needs: "web+spawn+mcp", from: "label:server+repository"},
		{name: "mcp__github__create_pr", families: "mcp+edit+spawn", needs: "edit+spawn+mcp", from: "label:tool+repository"},
		{name: "mcp__github__create_pr", families: "mcp+web+spawn", denial: NotGranted, needs: "edit+spawn+mcp", missing: "edit", from: "label:tool+repository"},
		{name: "mcp__docs__get", families: "read+mcp", needs: "read+mcp", from: "label:server"},
		{name: "mcp__docs__search", families: "read+mcp", denial: NotGranted, needs: "read+search+mcp", missing: "search", from: "label:server+repository"},
		{name: "mcp__unlabelled__x", families: all, desktop: true, reason: "x", denial: Unknown},
		{name: "x", server: "unlabelled", families: all, denial: Unknown},
		{name: "mcp__docs__get", server: "github", families: all, denial: Unknown},
		{name: "mcp__docs", families: all, denial: Unknown},
		{name: "mcp____x", families: all, denial: Unknown},
		{name: "Read", server: "docs", families: "read+mcp", needs: "read+mcp", from: "label:server"},
		{name: "Read", server: "unlabelled", families: all, denial: Unknown},
		// An MCP desktop tool: all three rules.
		{name: "mcp__screen__snap", families: "mcp+desktop", desktop: true, reason: "r", needs: "mcp+desktop", from: "label:tool"},
		{name: "mcp__screen__snap", families: "mcp+desktop", desktop: true, denial: DesktopRequiresReason, needs: "mcp+desktop", from: "label:tool"},
		{name: "mcp__screen__other", families: "mcp+read", needs: "read+mcp", from: "label:server"},
		// Repository narrowing of a built-in tool.
		{name: "Grep", families: "search", denial: NotGranted, needs: "search+shell", missing: "shell", from: "built-in+repository"},
	}
	l := testLabels()
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		d := Decide(Grant{Families: fams(tc.families), Desktop: tc.desktop}, l, Call{Name: tc.name, Server: tc.server, Reason: tc.reason})
		id := tc.name + "@" + tc.server + " under " + tc.families
		if d.Allowed != (tc.denial == "") || d.Denial != tc.denial {
			t.Errorf("%s: allowed=%v denial=%q, want denial %q", id, d.Allowed, d.Denial, tc.denial)
		}
		if !slices.Equal(d.Needs, fams(tc.needs)) || !slices.Equal(d.Missing, fams(tc.missing)) || d.From != tc.from {
			t.Errorf("%s: needs %v missing %v from %q, want %s, %s, %q", id, d.Needs, d.Missing, d.From, tc.needs, tc.missing, tc.from)
		}
		if d.Allowed && slices.Contains(d.Needs, Desktop) && d.Reason != tc.reason {
			t.Errorf("%s: reason %q not recorded", id, tc.reason)
		}
	}
}

func TestDesktopOffWhateverTheList(t *testing.T) {
	d := Decide(Grant{Families: Families(), Desktop: false}, Labels{}, Call{Name: "computer", Reason: "r"})
	if d.Allowed || d.Denial != NotGranted || !d.DesktopOff {
		t.Fatalf("desktop=off with the desktop family: %+v", d)
	}
}

func TestEveryBuiltinFamilyCovered(t *testing.T) {
	for _, f := range Families() {
		if f == MCP {
			continue // MCP tools are classified by labels only
		}
		found := false
		for _, n := range []string{"Read", "Grep", "Edit", "Bash", "WebFetch", "Task", "computer", "TodoWrite"} {
			if g, _ := Builtin(n); g == f {
				found = true
			}
		}
		if !found {
			t.Errorf("no built-in example of family %s", f)
		}
	}
	if _, ok := Builtin("mcp__x__y"); ok {
		t.Error("an MCP name is built in")
	}
}

func TestLabelsCheck(t *testing.T) {
	tests := []struct {
		l   Labels
		err string
	}{
		{Labels{Tools: map[string]Family{"Bash": Read}}, ""}, // no effect (Shadowed)
		{Labels{Tools: map[string]Family{"x": "files"}}, `"files" is not a tool family`},
		{Labels{Servers: map[string]Family{"a__b": Read}}, `contains "__"`},
		{Labels{Servers: map[string]Family{"": Read}}, "non-empty"},
		{Labels{Tools: map[string]Family{"a\tb": Read}}, "control characters"},
		{Labels{NarrowTools: map[string][]Family{"Bash": {"bogus"}}}, "not a tool family"},
		{Labels{Tools: map[string]Family{"mcp__s__t": Read}, Servers: map[string]Family{"s": Web}}, ""},
	}
	for _, tc := range tests {
		err := tc.l.Check()
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Check(%+v) = %v, want %q", tc.l, err, tc.err)
		}
	}
}

func TestShadowed(t *testing.T) {
	l := Labels{Tools: map[string]Family{"Bash": Read, "TodoWrite": Read, "lint_report": Read}}
	got := l.Shadowed()
	if len(got) != 2 || !strings.Contains(got[0], "Bash is built in as shell") || !strings.Contains(got[1], "TodoWrite is built in as control") {
		t.Errorf("Shadowed = %q", got)
	}
	if d := Decide(Grant{Families: []Family{Read}}, l, Call{Name: "Bash"}); d.Allowed {
		t.Error("a label relabelled a built-in tool")
	}
}

func TestParseFamily(t *testing.T) {
	for _, f := range Families() {
		if g, err := ParseFamily(string(f)); err != nil || g != f {
			t.Errorf("ParseFamily(%s) = %v, %v", f, g, err)
		}
	}
	if _, err := ParseFamily("Read"); err == nil || !strings.Contains(err.Error(), "read, search, edit, shell, web, spawn, mcp, desktop, control") {
		t.Errorf("ParseFamily(Read) = %v", err)
	}
}
