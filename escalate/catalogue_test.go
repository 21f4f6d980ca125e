package escalate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
)

// forbidden are words no alternative may contain: nothing ever suggests
// leaving the sandbox.
var forbidden = []string{"disable", "unsandboxed", "no-sandbox", "without wrun", "without the sandbox",
	"sandbox off", "sudo", "dangerously", "--best-effort", "chmod", "setenforce"}

// TestCatalogue holds the tables of rules and alternatives to what the
// code relies on, so a bad edit fails here rather than producing a bad
// request.
func TestCatalogue(t *testing.T) {
	if err := checkCatalogue(rules, alternatives); err != nil {
		t.Fatal(err)
	}
	// The control: each kind of mistake is caught.
	broken := []struct {
		name string
		edit func(r []ruleDef, a []altDef) ([]ruleDef, []altDef)
	}{
		{"repeated rule", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) { return append(r, r[0]), a }},
		{"unknown field", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) { r[0].Field = "tools"; return r, a }},
		{"unknown placeholder", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) { r[0].Why += " {nope}"; return r, a }},
		{"unknown rule", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) { a[0].Rules = []string{"nope"}; return r, a }},
		{"unknown condition", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) { a[0].When.If = []string{"nope"}; return r, a }},
		{"bad set", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) {
			a[0].Set = map[string]string{"files": "all"}
			return r, a
		}},
		{"grant without set", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) {
			return r, append(a, altDef{ID: "g", Rules: []string{"*"}, Kind: KindGrant, Description: "d", Try: "t"})
		}},
		{"allow-unix not on the path", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) {
			return r, append(a, altDef{ID: "u", Rules: []string{"*"}, Kind: KindAllowUnix, Path: "{narrowest}", Description: "d", Try: "t"})
		}},
		{"not a wrun command", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) {
			a[0].Commands = [][]string{{"sh", "-c", "x"}}
			return r, a
		}},
		{"leaves the sandbox", func(r []ruleDef, a []altDef) ([]ruleDef, []altDef) { a[0].Try = "run it with sudo"; return r, a }},
	}
	for _, b := range broken {
		r, a := b.edit(slices.Clone(rules), cloneAlts(alternatives))
		if err := checkCatalogue(r, a); err == nil {
			t.Errorf("%s: the check passed", b.name)
		}
	}
}

func cloneAlts(in []altDef) []altDef {
	out := slices.Clone(in)
	for i := range out {
		out[i].Rules = slices.Clone(out[i].Rules)
		out[i].When.If = slices.Clone(out[i].When.If)
	}
	return out
}

// checkCatalogue enforces what the code relies on.
func checkCatalogue(rules []ruleDef, alts []altDef) error {
	fields := []string{"files", "shell", "network", "desktop", FieldProtected, FieldHidden, FieldBoundary, FieldUnknown}
	conditions := []string{"full-covers", "shell-verify", "exists", "missing"}
	pathPlaceholders := []string{"{path}", "{narrowest}", "{cache_dir}"}
	known := map[string]bool{}
	for _, r := range rules {
		if r.ID == "" || known[r.ID] {
			return fmt.Errorf("rule %q: empty or repeated id", r.ID)
		}
		known[r.ID] = true
		if !slices.Contains(fields, r.Field) {
			return fmt.Errorf("rule %q: unknown field %q", r.ID, r.Field)
		}
		if r.Short == "" || r.Why == "" {
			return fmt.Errorf("rule %q: short and why are required", r.ID)
		}
		if err := checkPlaceholders(r.Short + r.Why); err != nil {
			return fmt.Errorf("rule %q: %w", r.ID, err)
		}
	}
	ids := map[string]bool{}
	for _, a := range alts {
		if a.ID == "" || ids[a.ID] {
			return fmt.Errorf("alternative %q: empty or repeated id", a.ID)
		}
		ids[a.ID] = true
		if kindRank(a.Kind) < 0 {
			return fmt.Errorf("alternative %q: unknown kind %q", a.ID, a.Kind)
		}
		if len(a.Rules) == 0 {
			return fmt.Errorf("alternative %q: applies to no rule", a.ID)
		}
		for _, r := range a.Rules {
			if r != "*" && !known[r] {
				return fmt.Errorf("alternative %q: unknown rule %q", a.ID, r)
			}
		}
		for _, cond := range a.When.If {
			if !slices.Contains(conditions, cond) {
				return fmt.Errorf("alternative %q: unknown condition %q", a.ID, cond)
			}
		}
		for k, v := range a.Set {
			if _, err := grant.Parse(k + "=" + v); err != nil {
				return fmt.Errorf("alternative %q: set: %w", a.ID, err)
			}
		}
		if a.Kind == KindGrant && len(a.Set) == 0 || len(a.Set) > 0 && a.Kind != KindGrant && a.Kind != KindRoute {
			return fmt.Errorf("alternative %q: a grant alternative sets fields, and only it or a route may", a.ID)
		}
		if (a.Kind == KindAllowWrite || a.Kind == KindAllowRead || a.Kind == KindAllowUnix) != (a.Path != "") {
			return fmt.Errorf("alternative %q: an allow-write, allow-read or allow-unix alternative names a path, and only it may", a.ID)
		}
		if (a.Kind == KindAllowUnix || a.Kind == KindAllowRead) && a.Path != "{path}" {
			return fmt.Errorf("alternative %q: an %s alternative names the denied path ({path})", a.ID, a.Kind)
		}
		if a.Path != "" && !slices.Contains(pathPlaceholders, a.Path) {
			return fmt.Errorf("alternative %q: path %q is not one of %v", a.ID, a.Path, pathPlaceholders)
		}
		if a.Description == "" || a.Try == "" {
			return fmt.Errorf("alternative %q: description and try are required", a.ID)
		}
		text := a.Description + " " + a.Try
		for _, cmd := range a.Commands {
			if len(cmd) < 3 || cmd[0] != "wrun" || !slices.Contains(cmd, "--") {
				return fmt.Errorf("alternative %q: command %q is not a wrun command line", a.ID, cmd)
			}
			text += " " + strings.Join(cmd, " ")
		}
		if err := checkPlaceholders(text); err != nil {
			return fmt.Errorf("alternative %q: %w", a.ID, err)
		}
		low := strings.ToLower(text)
		for _, w := range forbidden {
			if strings.Contains(low, w) {
				return fmt.Errorf("alternative %q: contains %q; no alternative may leave the sandbox", a.ID, w)
			}
		}
	}
	return nil
}

// checkPlaceholders fails on a placeholder expander.value does not fill.
func checkPlaceholders(s string) error {
	known := []string{"{path}", "{addr}", "{target}", "{cache}", "{why}", "{hole}",
		"{files}", "{shell}", "{network}", "{desktop}", "{grant}", "{new_grant}", "{route_grant}",
		"{argv}", "{command}"}
	for _, p := range placeholderRE().FindAllString(s, -1) {
		if !strings.HasPrefix(p, "{argv+") && !slices.Contains(known, p) {
			return fmt.Errorf("unknown placeholder %s", p)
		}
	}
	return nil
}
