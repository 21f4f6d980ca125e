package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/hook"
	"github.com/wrun-dev/wrun/internal/quote"
)

// exitHookBlock is the status by which both harnesses block a call and
// show the hook's stderr to the model.
const exitHookBlock = 2

// newHookCmd answers agent harnesses' pre-tool hooks (package hook).
func newHookCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook claude-code|codex [--grant SPEC | --role NAME] [--ask] [--deny-instead]",
		Short: "Answer a harness's PreToolUse hook: its shell commands run under wrun",
		Long: `hook reads one PreToolUse hook input (JSON, on standard input) from an
agent harness and answers it (JSON, on standard output) so that the model's
shell command runs in wrun's sandbox: the Bash call comes back with its
command rewritten to

    /path/to/wrun --grant SPEC -- bash -c 'COMMAND'

and allowed (the sandbox holds what it may do), or, with --ask (Claude Code
only), shown to the person to confirm. Calls of other tools get no answer
(the harness decides as it would). Where the harness's hook cannot rewrite
a call, --deny-instead denies it, naming that command line to run instead,
and lets a command already in exactly that form pass.

Anything wrun cannot read or honour blocks the call (exit status 2, the
reason on standard error): a broken hook never lets a command run outside
the sandbox. docs/harness.md shows the settings that enable each hook.`,
		Example: `  # ~/.claude/settings.json: "hooks": {"PreToolUse": [{"matcher": "Bash",
  #   "hooks": [{"type": "command", "command": "wrun hook claude-code --grant verify"}]}]}
  wrun hook claude-code --grant verify < input.json
  wrun hook codex --role worker < input.json`,
		// Any other word blocks the call: an exit status other than 2 would
		// let the harness run the command unsandboxed.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(stderr, "wrun hook: say which harness: claude-code or codex (not %q)\n", args)
			return &exitError{exitHookBlock}
		},
	}
	for _, h := range []hook.Harness{hook.ClaudeCode, hook.Codex} {
		cmd.AddCommand(newHookHarnessCmd(h, stdin, stdout, stderr))
	}
	return cmd
}

// roleName is what a role's name may be on a hook's command line.
var roleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func newHookHarnessCmd(h hook.Harness, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var spec, role, shell string
	var o hook.Options
	name := map[hook.Harness]string{hook.ClaudeCode: "Claude Code", hook.Codex: "Codex"}[h]
	cmd := &cobra.Command{
		Use:   string(h),
		Short: "Answer " + name + "'s PreToolUse hook for its Bash tool",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			block := func(err error) error {
				fmt.Fprintln(stderr, "wrun hook:", quote.Line(err.Error()))
				return &exitError{exitHookBlock}
			}
			switch {
			case role != "" && cmd.Flags().Changed("grant"):
				return block(fmt.Errorf("--role and --grant exclude each other here: give the role its grant in the config"))
			case role != "":
				if !roleName.MatchString(role) {
					return block(fmt.Errorf("--role %q is not a role's name", role))
				}
				o.Args = []string{"--role", role}
			default:
				g, err := grant.Parse(spec)
				if err != nil {
					return block(err)
				}
				// A spec naming the network keeps it named: a verify spec
				// without one runs as verify's default (network=hosts).
				o.Args = []string{"--grant", g.Compact()}
				if strings.Contains(spec, "network") {
					o.Args[1] = g.Spec()
				}
			}
			self, err := os.Executable()
			if err == nil {
				self, err = filepath.EvalSymlinks(self)
			}
			if err != nil {
				return block(fmt.Errorf("finding wrun's own path: %w", err))
			}
			o.Wrun, o.Shell = self, shell
			in, err := io.ReadAll(io.LimitReader(stdin, hook.MaxInput+1))
			if err != nil {
				return block(fmt.Errorf("reading the hook input: %w", err))
			}
			out, err := hook.Answer(h, o, in)
			if err != nil {
				return block(err)
			}
			_, err = stdout.Write(out)
			return err
		},
	}
	// A bad flag blocks the call too (exit 2), never exit 125, which the
	// harnesses take for a failed hook and run the command anyway.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		fmt.Fprintln(stderr, "wrun hook:", quote.Line(err.Error()))
		return &exitError{exitHookBlock}
	})
	fl := cmd.Flags()
	fl.StringVar(&spec, "grant", "verify", "run the command under grant `SPEC` (see wrun --help)")
	fl.StringVar(&role, "role", "", "run the command in role `NAME` (its grant from wrun roles or the config)")
	fl.StringVar(&shell, "shell", "bash", "the `SHELL` that runs the command line inside the sandbox")
	fl.BoolVar(&o.DenyInstead, "deny-instead", false, "deny a command not under wrun, naming the command line to run instead (for hooks that cannot rewrite)")
	if h == hook.ClaudeCode {
		fl.BoolVar(&o.Ask, "ask", false, "let the person confirm the rewritten command instead of allowing it")
	}
	return cmd
}
