package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox"
)

// runFlags are the flags only a run has.
type runFlags struct {
	keepBackground bool
	noObserve      bool
	escalationFile string
	onDenial       string
	approver       string
	ceiling        string
	retrySafe      bool
	verbose        bool
}

// runCommand runs argv with run.Run and says what happened: human lines on
// stderr as the run goes, or with --json one summary object at exit.
func runCommand(pf *policyFlags, rf runFlags, argv []string, stdin, stdout, stderr *os.File) error {
	cfg := run.Config{
		Spec:           pf.spec(),
		Ceiling:        rf.ceiling,
		Argv:           argv,
		Stdin:          stdin,
		Stdout:         stdout,
		Stderr:         stderr,
		KeepBackground: rf.keepBackground,
		NoObserve:      rf.noObserve,
		OnDenial:       run.OnDenial(rf.onDenial),
		RetrySafe:      rf.retrySafe,
		Approver:       run.TerminalApprover(),
		Confirm:        run.ConfirmOnTerminal,
		Hooks:          hooks(pf.json, rf.escalationFile, stderr),
	}
	if rf.approver != "" {
		cfg.Approver = run.CommandApprover(rf.approver, stderr)
	}
	if rf.verbose && !pf.json {
		ran := cfg.Hooks.Ran
		cfg.Hooks.Ran = func(s *run.Summary) {
			writeEnvDropped(stderr, s)
			ran(s)
		}
	}
	sum, err := run.Run(cfg)
	switch {
	case pf.json:
		writeJSON(stderr, sum)
	case err != nil:
		fmt.Fprintln(stderr, "wrun:", err)
	}
	if code := sum.Status(); code != 0 {
		return &exitError{code}
	}
	return nil
}

// hooks say what a run does as it does it. Without --json they print
// human lines; either way they write the escalation file and say what an
// approval decided.
func hooks(asJSON bool, escalationFile string, stderr io.Writer) run.Hooks {
	say := func(format string, a ...any) {
		if !asJSON {
			fmt.Fprintf(stderr, "wrun: "+format+"\n", a...)
		}
	}
	return run.Hooks{
		Note: func(n string) { say("note: %s", n) },
		Planned: func(rep sandbox.Report) {
			if rep.Degraded {
				say("DEGRADED (--best-effort): not enforced: %s", strings.Join(essentialGaps(rep), "; "))
			}
		},
		Ran: func(s *run.Summary) {
			if !asJSON {
				writeAttempt(stderr, s)
			}
			writeEscalationFile(stderr, escalationFile, s.Request)
		},
		Decided: func(req *escalate.Request, d *run.DecisionSummary) {
			writeDecision(stderr, req, d)
		},
		Retrying:    func(args []string) { say("retrying with %s", strings.Join(args, " ")) },
		RetryFailed: func(err error) { say("retry failed: %v", err) },
		NotRerun: func() {
			say("not rerun: the command is not marked --retry-safe and there is no terminal to confirm on")
		},
	}
}

// writeEnvDropped names (never the values of) the invoking environment's
// variables the command did not get: they are not on the allowlist.
func writeEnvDropped(w io.Writer, s *run.Summary) {
	if len(s.EnvDropped) == 0 {
		return
	}
	fmt.Fprintf(w, "wrun: environment: not passed (not on the allowlist; --keep-env NAME passes one): %s\n", strings.Join(s.EnvDropped, ", "))
}

func essentialGaps(rep sandbox.Report) []string {
	var gaps []string
	for _, gp := range rep.Gaps {
		if gp.Essential {
			gaps = append(gaps, gp.What)
		}
	}
	return gaps
}

// writeAttempt says what a run of the command left to say: removed paths,
// warnings, denials in plain words.
func writeAttempt(w io.Writer, s *run.Summary) {
	for _, p := range s.Swept {
		fmt.Fprintf(w, "wrun: removed %s: the command created it, and it must not exist (see wrun explain)\n", p)
	}
	for _, warn := range s.Warnings {
		fmt.Fprintln(w, "wrun: warning:", warn)
	}
	if s.Request != nil {
		for _, d := range s.Request.Denials {
			// glibc's name-service lookups (id, ls -l, git) probe nscd
			// over a UNIX socket on every run and shrug off the refusal;
			// say so only when the command failed. --json has them all.
			if d.Right == "socket_unix" && s.ExitCode == 0 {
				continue
			}
			fmt.Fprintln(w, d.Summary)
		}
	}
	if s.Degraded {
		fmt.Fprintln(w, "wrun: DEGRADED run: not everything the grant promises was enforced")
	}
}

// writeEscalationFile writes req, if any, to path, if given.
func writeEscalationFile(stderr io.Writer, path string, req *escalate.Request) {
	if req == nil || path == "" {
		return
	}
	b, err := req.JSON()
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "wrun: writing the escalation request to %s: %v\n", path, err)
	}
}

// writeDecision says what was decided on req, and how to rerun with it.
func writeDecision(w io.Writer, req *escalate.Request, d *run.DecisionSummary) {
	if !d.Approved {
		fmt.Fprintf(w, "wrun: escalation not approved: %s\n", d.Reason)
		return
	}
	fmt.Fprintf(w, "wrun: approved (%s): rerun with wrun %s -- %s\n", strings.Join(d.IDs, ", "), strings.Join(d.Args, " "), strings.Join(req.Command, " "))
	for _, r := range d.Routes {
		fmt.Fprintf(w, "wrun: approved route: %s\n", r)
	}
}
