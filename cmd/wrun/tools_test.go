package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/schematest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// toolsEnv gives the test a labels file of its own and no enclosing wrun.
func toolsEnv(t *testing.T) (cfg, ws string) {
	t.Helper()
	cfg, ws = t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("WRUN_GRANT", "")
	t.Setenv("WRUN_CEILING", "")
	if err := os.MkdirAll(filepath.Join(cfg, "wrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	labels := "[servers]\ngithub = \"web\"\ndocs = \"read\"\n[tools]\nlint_report = \"read\"\n"
	if err := os.WriteFile(filepath.Join(cfg, "wrun", "tools.toml"), []byte(labels), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, ws
}

// runTools runs wrun tools ARGS with stdin and returns stdout and the
// exit status execute would return.
func runTools(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd := newToolsCmd(strings.NewReader(stdin), &out)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.code
	case errors.As(err, &ue):
		return out.String() + "usage: " + ue.msg, exitWrunFailed
	}
	return out.String() + "error: " + err.Error(), exitWrunFailed
}

func schema(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "escalate", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolsCheck(t *testing.T) {
	_, ws := toolsEnv(t)
	tests := []struct {
		args []string
		code int
		want []string // substrings of the output, in order
	}{
		{[]string{"--grant", "inspect", "Read", "Grep", "Bash"}, 0,
			[]string{"Read: allowed, needs read (built-in)", "Grep: allowed", "Bash: allowed"}},
		{[]string{"--grant", "inspect", "Read", "Edit"}, 1,
			[]string{"Read: allowed", "Edit: denied, not-granted: needs edit; the grant inspect has tools=read+search+shell+control; allowed by inspect,files=write (within the ceiling), or write (within the ceiling)"}},
		{[]string{"--grant", "full", "--ceiling", "verify", "Edit"}, 1,
			[]string{"note: grant narrowed to the ceiling", "Edit: denied, not-granted", "(beyond the ceiling: files=write exceeds the ceiling's files=read)"}},
		{[]string{"--grant", "inspect", "frobnicate"}, 1,
			[]string{"frobnicate: denied, unknown:", "read, search, edit, shell, web, spawn, mcp, desktop", "[tools] frobnicate = \"read\""}},
		{[]string{"--grant", "full,tools=read+mcp", "mcp__slack__post"}, 1,
			[]string{"mcp__slack__post: denied, unknown:", "[servers] slack = \"read\""}},
		{[]string{"--grant", "full,tools=read+mcp", "mcp__docs__get", "mcp__github__list"}, 1,
			[]string{"mcp__docs__get: allowed, needs read+mcp (label:server)", "mcp__github__list: denied, not-granted: needs web+mcp"}},
		{[]string{"--grant", "full,tools=read+mcp", "--server", "docs", "get"}, 0, []string{"docs: get: allowed"}},
		{[]string{"--grant", "full", "mcp__docs__get"}, 1, []string{"not-granted: needs read+mcp", "full,tools=read+search+edit+shell+web+spawn+mcp+control (beyond the ceiling: tools=mcp exceeds"}},
		{[]string{"--grant", "full", "--ceiling", "full,tools=read+mcp", "mcp__docs__get"}, 1, []string{"not-granted: needs read+mcp", "full,tools=read+mcp (within the ceiling)"}},
		{[]string{"--grant", "full", "--ceiling", "full", "mcp__docs__get"}, 1, []string{"(beyond the ceiling: tools=mcp exceeds the ceiling's tools=read+search+edit+shell+web+spawn+control)"}},
		{[]string{"--grant", "inspect", "computer"}, 1, []string{"computer: denied, not-granted: needs desktop", "and desktop=off", "inspect,desktop=on,tools=read+search+shell+desktop+control (beyond the ceiling: desktop=on exceeds"}},
		{[]string{"--grant", "full,desktop=on,tools=read+desktop", "computer"}, 1, []string{"computer: denied, desktop-requires-reason: ", "--reason TEXT"}},
		{[]string{"--grant", "full,desktop=on,tools=read+desktop", "--reason", "close the test's dialog", "computer"}, 0,
			[]string{"computer: allowed, needs desktop (built-in); reason recorded: close the test's dialog"}},
		{[]string{"--grant", "inspect,shell=none", "Bash", "Read"}, 1, []string{"Bash: denied, not-granted: needs shell; the grant inspect,shell=none has tools=read+search", "Read: allowed"}},
		{[]string{"--grant", "write,tools=read", "Grep"}, 1, []string{"Grep: denied, not-granted"}},
		{[]string{"--grant", "full,tools=read", "lint_report"}, 0, []string{"lint_report: allowed, needs read (label:tool)"}},
		{[]string{"--grant", "inspect", "TodoWrite", "ExitPlanMode", "update_plan"}, 0, []string{"TodoWrite: allowed, needs control (built-in)", "update_plan: allowed, needs control (built-in)"}},
		{[]string{"--grant", "files=none,shell=none", "attempt_completion", "ask_followup_question"}, 0, []string{"attempt_completion: allowed, needs control"}},
		{[]string{"--grant", "inspect", "save_memory"}, 1, []string{"save_memory: denied, not-granted: needs edit"}},
		{[]string{"--grant", "write", "new_task"}, 1, []string{"new_task: denied, not-granted: needs spawn"}},
		// Bad input: 125.
		{[]string{"--grant", "inspect"}, 125, []string{"name at least one tool"}},
		{[]string{"--grant", "inspect,tools=git", "Read"}, 125, []string{`"git" is not a tool family`}},
		{[]string{"--grant", "inspect,shell=none,tools=shell", "Bash"}, 125, []string{"the shell tool family needs a shell field other than none"}},
		{[]string{"--grant", "full,tools=desktop", "computer"}, 125, []string{"the desktop tool family needs desktop=on"}},
		{[]string{"--grant", "inspect", "--reason", "a\nb", "computer"}, 125, []string{"--reason: one line"}},
		{[]string{"--grant", "inspect", "--server", "a__b", "x"}, 125, []string{"--server"}},
		{[]string{"--grant", "inspect", "--bogus", "Read"}, 125, []string{"unknown flag"}},
	}
	for _, tc := range tests {
		args := append([]string{"check", "--workdir", ws}, tc.args...)
		out, code := runTools(t, "", args...)
		if code != tc.code {
			t.Errorf("wrun tools %q: exit %d, want %d\n%s", args, code, tc.code, out)
			continue
		}
		rest := out
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("wrun tools %q: output lacks %q (in order):\n%s", args, w, out)
				break
			}
			rest = rest[i+len(w):]
		}
	}
}

// TestToolsRepositoryNarrows: a repository's file adds families a tool
// needs; it cannot classify a tool the user did not.
func TestToolsRepositoryNarrows(t *testing.T) {
	_, ws := toolsEnv(t)
	if err := os.MkdirAll(filepath.Join(ws, ".wrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".wrun", "tools.toml"), []byte("[tools]\nBash = \"edit\"\nnewtool = \"read\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runTools(t, "", "check", "--workdir", ws, "--grant", "inspect", "Bash", "newtool", "Read")
	if code != 1 || !strings.Contains(out, "Bash: denied, not-granted: needs edit+shell") ||
		!strings.Contains(out, "newtool: denied, unknown") || !strings.Contains(out, "Read: allowed") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if out, code := runTools(t, "", "check", "--workdir", ws, "--grant", "write", "Bash"); code != 0 {
		t.Fatalf("Bash under write, with the repository's edit requirement: exit %d\n%s", code, out)
	}
}

const testCatalogue = `[
  {"name": "Read", "description": "Reads a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
  {"name": "Edit", "description": "Edits a file"},
  {"name": "Bash", "x-harness": {"timeout": 120}},
  {"name": "mcp__docs__search"},
  {"name": "search", "server": "github", "annotations": {"readOnlyHint": true}},
  {"name": "computer", "display_width_px": 1024},
  {"name": "lint_report"},
  {"name": "TodoWrite"},
  {"name": "frobnicate"}
]`

func TestToolsFilter(t *testing.T) {
	_, ws := toolsEnv(t)
	out, code := runTools(t, testCatalogue, "filter", "--workdir", ws, "--grant", "inspect,tools=read+search+mcp")
	want := `[
  {"name": "Read", "description": "Reads a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
  {"name": "mcp__docs__search"},
  {"name": "lint_report"}
]
`
	if code != 0 || out != want {
		t.Fatalf("exit %d, printed:\n%s\nwant:\n%s", code, out, want)
	}
	for _, v := range []string{"tools-catalogue.v1.json", "tools-catalogue.v2.json"} {
		if err := schematest.Validate(schema(t, v), []byte(out)); err != nil {
			t.Errorf("the filtered catalogue does not match %s: %v", v, err)
		}
		if err := schematest.Validate(schema(t, v), []byte(testCatalogue)); err != nil {
			t.Errorf("the test's catalogue does not match %s: %v", v, err)
		}
	}
	// Every tool check allows is visible, and nothing else: one decision.
	for _, name := range []string{"Read", "Edit", "Bash", "mcp__docs__search", "computer", "lint_report", "TodoWrite", "frobnicate"} {
		_, code := runTools(t, "", "check", "--workdir", ws, "--grant", "inspect,tools=read+search+mcp", name)
		if visible := strings.Contains(out, `"name": "`+name+`"`); visible != (code == 0) {
			t.Errorf("%s: visible=%v but check exits %d", name, visible, code)
		}
	}
	for _, bad := range []string{`{}`, `[{"name": 1}]`, `[{"name": "a", "name": "Read"}]`, ``, `[`} {
		if out, code := runTools(t, bad, "filter", "--workdir", ws); code != 125 {
			t.Errorf("catalogue %q: exit %d, want 125\n%s", bad, code, out)
		}
	}
}

// TestToolsJSONGolden: the --json output of both commands, compared with
// testdata (go test ./cmd/wrun -run TestToolsJSONGolden -update rewrites
// it) and validated against the published schema.
func TestToolsJSONGolden(t *testing.T) {
	cfg, ws := toolsEnv(t)
	s := schema(t, "tools-decision.v2.json")
	for _, tc := range []struct {
		golden string
		stdin  string
		args   []string
		code   int
	}{
		{"tools-check.json", "", []string{"check", "--json", "--grant", "inspect", "Read", "Edit", "frobnicate", "mcp__github__list", "mcp__nolabel__x", "computer"}, 1},
		{"tools-check-desktop.json", "", []string{"check", "--json", "--grant", "full,desktop=on,tools=read+desktop+mcp", "computer", "mcp__docs__get", "mcp__github__x"}, 1},
		{"tools-check-reason.json", "", []string{"check", "--json", "--grant", "full,desktop=on,tools=read+desktop", "--reason", "close the dialog", "computer", "Read"}, 0},
		{"tools-filter.json", testCatalogue, []string{"filter", "--json", "--grant", "write,tools=read+edit+mcp"}, 0},
	} {
		out, code := runTools(t, tc.stdin, append(tc.args, "--workdir", ws)...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s", tc.golden, code, tc.code, out)
			continue
		}
		if err := schematest.Validate(s, []byte(out)); err != nil {
			t.Errorf("%s: the output does not match the schema: %v\n%s", tc.golden, err, out)
		}
		got := strings.ReplaceAll(out, cfg, "$CFG")
		path := filepath.Join("testdata", tc.golden)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the golden file:\n%s\nwant:\n%s", tc.golden, got, want)
		}
	}
}

func TestToolsExplainEveryFamily(t *testing.T) {
	for _, spec := range []string{"inspect", "full", "inspect,shell=none", "full,desktop=on,tools=desktop+mcp"} {
		g, err := parseGrantForTest(spec)
		if err != nil {
			t.Fatal(err)
		}
		rows := toolFamilies(g)
		if len(rows) != 9 {
			t.Fatalf("%s: %d families explained", spec, len(rows))
		}
		var b bytes.Buffer
		writeToolFamilies(&b, g)
		for _, r := range rows {
			if r.Kernel == "" || r.DecisionOnly == "" || !strings.Contains(b.String(), "  "+r.Family+": ") {
				t.Errorf("%s: family %s not explained: %+v", spec, r.Family, r)
			}
		}
	}
	g, _ := parseGrantForTest("inspect,shell=none")
	if rows := toolFamilies(g); rows[3].Granted || !strings.Contains(rows[3].Kernel, "shell=none: wrun runs no command at all") {
		t.Errorf("shell=none: %+v", rows[3])
	}
	g, _ = parseGrantForTest("verify,network=off")
	if rows := toolFamilies(g); !strings.Contains(rows[4].Kernel, "network=off") || !strings.Contains(rows[4].Kernel, "Landlock") {
		t.Errorf("web under network=off: %+v", rows[4])
	}
}

func parseGrantForTest(spec string) (grant.Grant, error) { return grant.Parse(spec) }

func TestToolsSubcommand(t *testing.T) {
	toolsEnv(t)
	for _, args := range [][]string{{}, {"foo"}, {"check"}, {"filter", "extra"}} {
		if out, code := runTools(t, "", args...); code != 125 {
			t.Errorf("wrun tools %q: exit %d, want 125\n%s", args, code, out)
		}
	}
}
