package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Harness names a hook protocol wrun speaks.
type Harness string

const (
	// ClaudeCode is Claude Code's PreToolUse hook: permissionDecision
	// allow, ask or deny, and updatedInput with allow or ask.
	ClaudeCode Harness = "claude-code"
	// Codex is Codex's PreToolUse hook: updatedInput only with allow,
	// deny with a reason; ask is not supported.
	Codex Harness = "codex"
)

// MaxInput bounds the hook input read (a command and its description).
const MaxInput = 4 << 20

// Options says how a command is wrapped and how the hook answers.
type Options struct {
	// Wrun is the absolute path of the wrun binary the command runs
	// under (never looked up in PATH).
	Wrun string
	// Args are wrun's arguments before "--" ("--grant", "verify").
	Args []string
	// Shell runs the harness's command line inside the sandbox ("bash").
	Shell string
	// Ask lets the person confirm the rewritten command (Claude Code
	// only); otherwise the rewritten call is allowed, the sandbox holding
	// what it may do.
	Ask bool
	// DenyInstead answers a command not yet under wrun with a denial
	// naming the command line to run instead, for harnesses whose hooks
	// cannot rewrite a call.
	DenyInstead bool
}

// input is the part of a PreToolUse hook's input wrun reads.
type input struct {
	HookEventName string
	ToolName      string
	ToolInput     map[string]json.RawMessage
}

// readInput reads the hook input's fields by their exact names, as the
// harness wrote and reads them. encoding/json would match a struct's tags
// case-insensitively, the last match winning: "TOOL_NAME": "Read" after
// "tool_name": "Bash" made a Bash call look like another tool's (no
// answer, the command run unsandboxed), and "TOOL_INPUT" could carry a
// wrapped command past --deny-instead while the harness ran tool_input's.
func readInput(in []byte) (input, error) {
	var top map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(in)).Decode(&top); err != nil {
		return input{}, err
	}
	if top == nil {
		return input{}, errors.New("it is not a JSON object")
	}
	var hi input
	for _, f := range []struct {
		name string
		to   any
	}{{"hook_event_name", &hi.HookEventName}, {"tool_name", &hi.ToolName}, {"tool_input", &hi.ToolInput}} {
		if raw, ok := top[f.name]; ok {
			if err := json.Unmarshal(raw, f.to); err != nil {
				return input{}, fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	return hi, nil
}

// specific is the hook-specific part of the answer both harnesses read.
type specific struct {
	HookEventName            string                     `json:"hookEventName"`
	PermissionDecision       string                     `json:"permissionDecision"`
	PermissionDecisionReason string                     `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]json.RawMessage `json:"updatedInput,omitempty"`
}

type answer struct {
	HookSpecificOutput specific `json:"hookSpecificOutput"`
}

// Answer reads one hook input and returns the JSON to print: nil when
// wrun has no opinion (another tool than the shell), an error when the
// input cannot be read or the options cannot be honoured (the caller
// blocks the call: exit status 2).
func Answer(h Harness, o Options, in []byte) ([]byte, error) {
	if h != ClaudeCode && h != Codex {
		return nil, fmt.Errorf("unknown harness %q (claude-code, codex)", h)
	}
	if err := o.check(h); err != nil {
		return nil, err
	}
	if len(in) > MaxInput {
		return nil, fmt.Errorf("the hook input is %d bytes, more than %d", len(in), MaxInput)
	}
	hi, err := readInput(in)
	if err != nil {
		return nil, fmt.Errorf("reading the hook input: %w", err)
	}
	if hi.HookEventName != "PreToolUse" {
		return nil, fmt.Errorf("the hook input is for %q: wrun answers PreToolUse only", hi.HookEventName)
	}
	if hi.ToolName != "Bash" {
		return nil, nil
	}
	raw, ok := hi.ToolInput["command"]
	if !ok {
		return nil, errors.New("the Bash call has no tool_input.command")
	}
	var cmd string
	if err := json.Unmarshal(raw, &cmd); err != nil {
		return nil, fmt.Errorf("tool_input.command: %w", err)
	}
	if strings.ContainsRune(cmd, 0) {
		return nil, errors.New("tool_input.command holds a NUL byte, which no shell word can")
	}
	wrapped := cmd
	if !o.IsWrapped(cmd) {
		wrapped = o.Wrap(cmd)
		if o.DenyInstead {
			return encode(specific{HookEventName: "PreToolUse", PermissionDecision: "deny",
				PermissionDecisionReason: "run shell commands in wrun's sandbox; run this instead: " + wrapped})
		}
	} else if o.DenyInstead {
		return nil, nil // already in the sandbox: the harness decides as it would
	}
	updated := make(map[string]json.RawMessage, len(hi.ToolInput))
	for k, v := range hi.ToolInput {
		updated[k] = v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wrapped); err != nil {
		return nil, err
	}
	updated["command"] = bytes.TrimSpace(b.Bytes())
	decision := "allow"
	if o.Ask {
		decision = "ask"
	}
	return encode(specific{HookEventName: "PreToolUse", PermissionDecision: decision,
		PermissionDecisionReason: "runs in wrun's sandbox: " + o.prefix() + " ...", UpdatedInput: updated})
}

func encode(s specific) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(answer{s}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (o Options) check(h Harness) error {
	switch {
	case !strings.HasPrefix(o.Wrun, "/"):
		return fmt.Errorf("wrun's path %q is not absolute", o.Wrun)
	case o.Shell == "":
		return errors.New("no shell to run the command with")
	case o.Ask && h == Codex:
		return errors.New("--ask: the Codex hook cannot ask, it rewrites a call only with allow (drop --ask, or use --deny-instead)")
	case o.Ask && o.DenyInstead:
		return errors.New("--ask and --deny-instead exclude each other")
	}
	for _, a := range o.Args {
		if a == "--" {
			return errors.New("wrun's arguments hold \"--\"")
		}
	}
	return nil
}

// prefix is the command line up to the command's own word.
func (o Options) prefix() string {
	words := []string{shellQuote(o.Wrun)}
	for _, a := range o.Args {
		words = append(words, shellQuote(a))
	}
	return strings.Join(append(words, "--", shellQuote(o.Shell), "-c"), " ")
}

// Wrap is cmd as the command line that runs it under wrun: the prefix,
// then cmd as one single-quoted word.
func (o Options) Wrap(cmd string) string {
	return o.prefix() + " '" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
}

// IsWrapped reports whether cmd is exactly a command line Wrap makes:
// the prefix, one space, then one shell word of single-quoted text and
// \' escapes only, and nothing else. Anything the shell would read as a
// second command (; && | a newline, a substitution outside quotes) fails.
func (o Options) IsWrapped(cmd string) bool {
	rest, ok := strings.CutPrefix(cmd, o.prefix()+" ")
	if !ok || rest == "" {
		return false
	}
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, `\'`):
			rest = rest[2:]
		case rest[0] == '\'':
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return false
			}
			rest = rest[end+2:]
		default:
			return false
		}
	}
	return true
}

// shellQuote is s as one POSIX shell word: bare when it holds only
// characters no shell treats specially, single-quoted otherwise (' as
// '\”).
func shellQuote(s string) string {
	const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@%"
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
