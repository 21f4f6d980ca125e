package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hookInput is a PreToolUse input for the Bash tool as Claude Code sends
// it (Codex's differs only in fields wrun does not read).
func hookInput(t *testing.T, command string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"session_id": "s", "transcript_path": "/nonexistent/t.jsonl", "cwd": "/", "permission_mode": "default",
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
		"tool_input": map[string]any{"command": command, "description": "write a file"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hookCommand runs `wrun hook ARGS` on input and returns the rewritten
// command ("" for no answer) and the decision.
func hookCommand(t *testing.T, input string, args ...string) (string, string) {
	t.Helper()
	r := run(t, runOpts{stdin: input}, append([]string{bins.wrun, "hook"}, args...)...)
	if r.code != 0 {
		t.Fatalf("wrun hook %v: %s", args, r)
	}
	if strings.TrimSpace(r.stdout) == "" {
		return "", ""
	}
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
			UpdatedInput             struct {
				Command string `json:"command"`
			} `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("wrun hook %v answered no JSON: %v\n%s", args, err, r)
	}
	return a.HookSpecificOutput.UpdatedInput.Command, a.HookSpecificOutput.PermissionDecision + ": " + a.HookSpecificOutput.PermissionDecisionReason
}

// TestHookRewritesIntoTheSandbox: a Bash call the Claude Code and Codex
// hooks rewrite runs under the grant for real: the write outside the
// workspace that the model's command makes is refused, and the same
// command line run bare (the control) makes it.
func TestHookRewritesIntoTheSandbox(t *testing.T) {
	requireABI(t, 1)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is needed: the hook's command line runs the command with it")
	}
	ws, outside := workspace(t), workspace(t)
	target := filepath.Join(outside, "written")
	command := "echo from-the-model > '" + target + "'; echo ran"
	for _, harness := range []string{"claude-code", "codex"} {
		line, decision := hookCommand(t, hookInput(t, command), harness, "--grant", "inspect")
		if !strings.HasPrefix(decision, "allow") || !strings.HasPrefix(line, bins.wrun+" --grant inspect -- bash -c ") {
			t.Fatalf("%s: rewritten to %q (%s)", harness, line, decision)
		}
		r := run(t, runOpts{dir: ws}, bash, "-c", line)
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("%s: the rewritten command wrote outside the workspace:\n%s", harness, r)
		}
		if !strings.Contains(r.stdout, "ran") {
			t.Errorf("%s: the rewritten command did not run:\n%s", harness, r)
		}
	}
	if r := run(t, runOpts{dir: ws}, bash, "-c", command); r.code != 0 {
		t.Fatalf("control: the command bare: %s", r)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("control: the command bare wrote nothing: %v", err)
	}
}

// TestHookDenyInstead: where the hook cannot rewrite, the call is denied
// naming the command line to run; that line passes the hook and runs
// sandboxed; a line with that prefix and a second command after it is
// denied again.
func TestHookDenyInstead(t *testing.T) {
	requireABI(t, 1)
	ws, outside := workspace(t), workspace(t)
	target := filepath.Join(outside, "written")
	command := "echo x > '" + target + "'"
	_, decision := hookCommand(t, hookInput(t, command), "codex", "--grant", "inspect", "--deny-instead")
	named, ok := strings.CutPrefix(decision, "deny: run shell commands in wrun's sandbox; run this instead: ")
	if !ok {
		t.Fatalf("not denied with the command to run: %q", decision)
	}
	if line, d := hookCommand(t, hookInput(t, named), "codex", "--grant", "inspect", "--deny-instead"); line != "" || d != "" {
		t.Errorf("the command line it named is answered again: %q %q", line, d)
	}
	if r := run(t, runOpts{dir: ws}, "bash", "-c", named); r.code == 0 {
		t.Errorf("the named command line wrote outside the workspace: %s", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the named command line wrote outside the workspace")
	}
	smuggled := named + "; " + command
	if _, d := hookCommand(t, hookInput(t, smuggled), "codex", "--grant", "inspect", "--deny-instead"); !strings.HasPrefix(d, "deny") {
		t.Errorf("a second command after the sandboxed one passes: %q", d)
	}
}

// TestHookFailsClosed: input wrun cannot read, and a flag or harness it
// does not know, block the call (exit 2): any other failure status lets
// the harnesses run the command anyway.
func TestHookFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		input string
	}{
		{[]string{"claude-code"}, "not json"},
		{[]string{"claude-code"}, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`},
		{[]string{"codex", "--ask"}, hookInput(t, "ls")},
		{[]string{"claude-code", "--grant", "nonsense"}, hookInput(t, "ls")},
		{[]string{"claudecode"}, hookInput(t, "ls")},
		{nil, hookInput(t, "ls")},
	} {
		r := run(t, runOpts{stdin: tc.input}, append([]string{bins.wrun, "hook"}, tc.args...)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "wrun hook:") {
			t.Errorf("wrun hook %v: want exit 2, nothing on stdout and the reason on stderr, got %s", tc.args, r)
		}
	}
}
