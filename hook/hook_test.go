package hook

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The inputs each harness sends, as its documentation gives them: Claude
// Code's PreToolUse for Bash (hooks reference: session_id,
// transcript_path, cwd, permission_mode, hook_event_name, tool_name,
// tool_input with command, description, timeout, run_in_background,
// tool_use_id) and Codex's (pre-tool-use.command.input.schema.json: the
// same names, tool_input with command only, and model).
const (
	claudeInput = `{"session_id":"abc123","transcript_path":"/home/u/.claude/projects/p/abc123.jsonl","cwd":"/home/u/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cargo test && echo 'done'","description":"Run the tests","timeout":120000,"run_in_background":false},"tool_use_id":"toolu_01ABC123"}`
	codexInput  = `{"cwd":"/home/u/p","hook_event_name":"PreToolUse","model":"gpt-5-codex","permission_mode":"default","session_id":"s1","tool_input":{"command":"go test ./..."},"tool_name":"Bash","tool_use_id":"call_1","transcript_path":null}`
)

func opts() Options {
	return Options{Wrun: "/usr/local/bin/wrun", Args: []string{"--grant", "verify"}, Shell: "bash"}
}

type out struct {
	HookSpecificOutput struct {
		HookEventName            string                     `json:"hookEventName"`
		PermissionDecision       string                     `json:"permissionDecision"`
		PermissionDecisionReason string                     `json:"permissionDecisionReason"`
		UpdatedInput             map[string]json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

func answerOf(t *testing.T, h Harness, o Options, in string) (out, bool) {
	t.Helper()
	b, err := Answer(h, o, []byte(in))
	if err != nil {
		t.Fatalf("Answer(%s): %v", h, err)
	}
	if b == nil {
		return out{}, false
	}
	var a out
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("the answer is not JSON: %v\n%s", err, b)
	}
	return a, true
}

func TestClaudeCodeRewrites(t *testing.T) {
	for _, ask := range []bool{false, true} {
		o := opts()
		o.Ask = ask
		a, ok := answerOf(t, ClaudeCode, o, claudeInput)
		if !ok {
			t.Fatal("no answer for a Bash call")
		}
		s := a.HookSpecificOutput
		want := map[bool]string{false: "allow", true: "ask"}[ask]
		if s.HookEventName != "PreToolUse" || s.PermissionDecision != want {
			t.Errorf("ask=%v: event %q decision %q, want PreToolUse %s", ask, s.HookEventName, s.PermissionDecision, want)
		}
		var cmd string
		_ = json.Unmarshal(s.UpdatedInput["command"], &cmd)
		if cmd != `/usr/local/bin/wrun --grant verify -- bash -c 'cargo test && echo '\''done'\'''` {
			t.Errorf("command %q", cmd)
		}
		for _, k := range []string{"description", "timeout", "run_in_background"} {
			if _, ok := s.UpdatedInput[k]; !ok {
				t.Errorf("updatedInput lost %s: %v", k, s.UpdatedInput)
			}
		}
	}
}

func TestCodexRewritesWithAllow(t *testing.T) {
	a, ok := answerOf(t, Codex, opts(), codexInput)
	if !ok {
		t.Fatal("no answer for a Bash call")
	}
	s := a.HookSpecificOutput
	var cmd string
	_ = json.Unmarshal(s.UpdatedInput["command"], &cmd)
	// Codex takes updatedInput with allow only, and a tool_input of
	// command alone (its schema forbids other properties).
	if s.PermissionDecision != "allow" || cmd != `/usr/local/bin/wrun --grant verify -- bash -c 'go test ./...'` || len(s.UpdatedInput) != 1 {
		t.Errorf("answer %+v", s)
	}
	o := opts()
	o.Ask = true
	if _, err := Answer(Codex, o, []byte(codexInput)); err == nil {
		t.Error("--ask accepted for Codex, whose hook cannot ask")
	}
}

func TestDenyInstead(t *testing.T) {
	o := opts()
	o.DenyInstead = true
	for _, h := range []Harness{ClaudeCode, Codex} {
		a, ok := answerOf(t, h, o, codexInput)
		s := a.HookSpecificOutput
		if !ok || s.PermissionDecision != "deny" || s.UpdatedInput != nil ||
			!strings.HasSuffix(s.PermissionDecisionReason, `/usr/local/bin/wrun --grant verify -- bash -c 'go test ./...'`) {
			t.Errorf("%s: %+v", h, s)
		}
		// The command it names passes: the harness decides as it would.
		wrapped, _ := json.Marshal(o.Wrap("go test ./..."))
		in := strings.Replace(codexInput, `"go test ./..."`, string(wrapped), 1)
		if _, ok := answerOf(t, h, o, in); ok {
			t.Errorf("%s: the command it named is denied too", h)
		}
	}
}

func TestNoOpinionAndErrors(t *testing.T) {
	if _, ok := answerOf(t, ClaudeCode, opts(), `{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/etc/hosts"}}`); ok {
		t.Error("an answer for a Read call")
	}
	for name, in := range map[string]string{
		"not JSON":    `{"hook_event_name":`,
		"other event": `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		"no command":  `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`,
		"not string":  `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":["ls"]}}`,
		"NUL":         `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls\u0000x"}}`,
		"too large":   `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"` + strings.Repeat("a", MaxInput) + `"}}`,
	} {
		if b, err := Answer(ClaudeCode, opts(), []byte(in)); err == nil {
			t.Errorf("%s: no error, answer %s", name, b)
		}
	}
	bad := opts()
	bad.Wrun = "wrun"
	if _, err := Answer(ClaudeCode, bad, []byte(claudeInput)); err == nil {
		t.Error("a relative wrun path accepted")
	}
}

// argvOf runs line in a real bash with wrun's place taken by printf, which
// prints each argument after its format with a NUL, and returns them and
// the whole output: what the shell would give wrun after its own
// arguments.
func argvOf(t *testing.T, line string) ([]string, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is needed to read the command lines back")
	}
	var stdout bytes.Buffer
	c := exec.Command(bash, "-c", line)
	c.Stdout = &stdout
	_ = c.Run()
	parts := strings.Split(stdout.String(), "\x00")
	return parts[:len(parts)-1], stdout.String()
}

// printer stands for wrun: it prints each argument and a NUL.
func printer() Options {
	return Options{Wrun: "/usr/bin/printf", Args: []string{`%s\0`}, Shell: "bash"}
}

// TestWrapReadsBackAsOneWord: whatever the command, bash gives wrun the
// prefix's words and the command itself as one argument.
func TestWrapReadsBackAsOneWord(t *testing.T) {
	o := printer()
	for _, cmd := range []string{"ls", "a b", "it's", `'`, `''`, `\'`, "x\ny", "$(id)", "`id`", "a;b", `"q"`, "tab\there", "é ü", "\x1b[2J"} {
		line := o.Wrap(cmd)
		if !o.IsWrapped(line) {
			t.Errorf("IsWrapped(Wrap(%q)) is false", cmd)
		}
		got, _ := argvOf(t, line)
		if len(got) != 4 || got[3] != cmd || got[0] != "--" || got[2] != "-c" {
			t.Errorf("Wrap(%q) reads back as %q", cmd, got)
		}
	}
}

// TestIsWrappedRefusesASecondCommand: a line with wrun's prefix that the
// shell reads as more than wrun's one command is not taken for one
// already in the sandbox. Control: each of these lines does run something
// outside wrun's arguments in a real bash (it prints "outside").
func TestIsWrappedRefusesASecondCommand(t *testing.T) {
	o := printer()
	p := o.Wrap("true")
	p = p[:len(p)-len("'true'")]
	for _, tail := range []string{
		`'true'; echo outside`,
		`'true' && echo outside`,
		`'true' | echo outside`,
		"'true'\necho outside",
		`'true'$(echo outside >&2)`,
		"'true'`echo outside >&2`",
		`'true' 'x'; echo outside`,
		`'true'"$(echo outside >&2)"`,
		`'tr'\''ue' & echo outside`,
		`'true' >/dev/null; echo outside`,
	} {
		line := p + tail
		if o.IsWrapped(line) {
			t.Errorf("IsWrapped(%q) is true", line)
		}
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("bash is needed for the control")
		}
		b, _ := exec.Command(bash, "-c", line).CombinedOutput()
		if !strings.Contains(string(b), "outside") {
			t.Errorf("control: %q runs nothing outside wrun's arguments (%q); the case tests nothing", line, b)
		}
	}
	for _, line := range []string{"", p, p[:len(p)-1], "/usr/bin/wrun -- bash -c 'true'"} {
		if o.IsWrapped(line) {
			t.Errorf("IsWrapped(%q) is true", line)
		}
	}
}

// FuzzIsWrapped: a line IsWrapped accepts is read by a real bash as the
// prefix's words and exactly one more, and runs nothing else.
func FuzzIsWrapped(f *testing.F) {
	o := printer()
	for _, s := range []string{o.Wrap("ls"), o.Wrap("it's"), o.Wrap("a'b'c") + "; x", o.Wrap("") + `\'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsRune(line, 0) || !o.IsWrapped(line) {
			return
		}
		got, raw := argvOf(t, line)
		if len(got) != 4 || got[0] != "--" || got[1] != "bash" || got[2] != "-c" || strings.Count(raw, "\x00") != 4 {
			t.Errorf("accepted %q, which bash reads as %q", line, got)
		}
	})
}

// TestKeysReadExactly: the input's keys are read as the harness reads
// them, exactly: a case-variant key after the real one changes nothing.
func TestKeysReadExactly(t *testing.T) {
	o := opts()
	wrapped := o.Wrap("true")
	wq, _ := json.Marshal(wrapped)
	for name, tc := range map[string]struct {
		opts Options
		in   string
	}{
		"TOOL_NAME":       {o, `{"hook_event_name":"PreToolUse","tool_name":"Bash","TOOL_NAME":"Read","tool_input":{"command":"id"}}`},
		"Hook_Event_Name": {o, `{"hook_event_name":"PreToolUse","Hook_Event_Name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"id"}}`},
		"TOOL_INPUT":      {Options{Wrun: o.Wrun, Args: o.Args, Shell: o.Shell, DenyInstead: true}, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"id"},"TOOL_INPUT":{"command":` + string(wq) + `}}`},
	} {
		b, err := Answer(ClaudeCode, tc.opts, []byte(tc.in))
		var a out
		if err == nil && b != nil {
			err = json.Unmarshal(b, &a)
		}
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case b == nil:
			t.Errorf("%s: no answer: the harness would run the command bare", name)
		case tc.opts.DenyInstead && a.HookSpecificOutput.PermissionDecision != "deny":
			t.Errorf("%s: %s, want deny", name, a.HookSpecificOutput.PermissionDecision)
		case !tc.opts.DenyInstead:
			var got string
			if err := json.Unmarshal(a.HookSpecificOutput.UpdatedInput["command"], &got); err != nil || got != o.Wrap("id") {
				t.Errorf("%s: rewritten to %s", name, a.HookSpecificOutput.UpdatedInput["command"])
			}
		}
	}
	if b, err := Answer(ClaudeCode, o, []byte(`null`)); err == nil {
		t.Errorf("null input: no error, answer %s", b)
	}
}
