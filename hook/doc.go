// Package hook answers the pre-tool hooks of agent harnesses so that the
// shell commands their models run go through wrun: a Claude Code or Codex
// PreToolUse hook for the Bash tool gets back the same call with its
// command rewritten to run under wrun's sandbox (wrun --grant G -- bash -c
// 'COMMAND'), or, where the harness's hook may only allow or deny, a
// denial that names that command line to run instead, and a pass for a
// command already in exactly that form.
//
// It reads the harness's JSON and writes the harness's JSON; it starts
// nothing. Its only decision is the shape of a command line, so the test
// of "already in the sandbox" is strict: wrun's own prefix, then one shell
// word made only of single-quoted text, and nothing after it. Whatever it
// cannot read is an error, which the caller turns into the harness's
// "block" (exit status 2), never into a pass.
package hook
