package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/config"
	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/session"
)

// runFlags are the flags only a run has.
type runFlags struct {
	keepBackground  bool
	noObserve       bool
	escalationFile  string
	onDenial        string
	approver        string
	approverTimeout time.Duration
	ceiling         string
	retrySafe       bool
	verbose         bool
	killAfter       time.Duration
	jsonFD          int
	eventsFD        int
	controlFD       int
	holdTimeout     time.Duration
	role, model     string
	thinking        string
	receiptFile     string
	noReceipt       bool
	shareWorkdir    bool
	// Whether the flags were given (the config's settings apply when not).
	grantSet, timeoutSet, onDenialSet bool
}

// runCommand runs argv with run.Run and says what happened: human lines on
// stderr as the run goes, or with --json one summary object at exit.
func runCommand(pf *policyFlags, rf runFlags, argv []string, stdin, stdout, stderr *os.File) error {
	if needsKeeper(rf) {
		return runFront(rf, stdin, stdout, stderr)
	}
	keep, err := openKeeper()
	if err != nil {
		return err
	}
	// The search for private files (as root, all of /etc) runs while the
	// settings are read and the run is registered.
	search := run.StartSearch()
	start := time.Now()
	id := run.NewID(start) // the summary's, the receipt's and the roster entry's
	// The escalation file is ready before the command starts: its
	// directory resolved and held open, a stale request removed, and a
	// path that cannot be written refused while nothing has run yet.
	var escFile *outFile
	if rf.escalationFile != "" {
		var err error
		ws := pf.workdir
		if ws == "" {
			ws, _ = os.Getwd()
		}
		if escFile, err = openOutFile(rf.escalationFile, ws); err != nil {
			msg := fmt.Sprintf("--escalation-file %s: %v; the command was not run", quote.Word(rf.escalationFile), err)
			return refuse(pf, rf, stderr, id, msg)
		}
		defer escFile.close()
	}
	workdir := workdirOf(pf.workdir)
	flags := config.Flags{Ceiling: rf.ceiling, Role: rf.role, Model: rf.model, Thinking: rf.thinking}
	if rf.grantSet {
		flags.Grant = pf.grant
	}
	st, err := loadSettings(workdir, flags)
	if err == nil {
		err = conductorCheck(st, workdir)
	}
	if err != nil {
		return refuse(pf, rf, stderr, id, err.Error())
	}
	if st.req.ConductorDir != "" && !rf.onDenialSet {
		rf.onDenial = string(run.Ask) // its writes elsewhere go through approval
	}
	cfg := run.Config{
		Spec:           pf.spec(),
		RunID:          id,
		Flags:          carriedFlags(pf, rf),
		RoleFlags:      roleFlags(rf),
		Ceiling:        rf.ceiling,
		Argv:           argv,
		Stdin:          stdin,
		Stdout:         stdout,
		Stderr:         stderr,
		KeepBackground: rf.keepBackground,
		KillAfter:      rf.killAfter,
		NoObserve:      rf.noObserve,
		OnDenial:       run.OnDenial(rf.onDenial),
		RetrySafe:      rf.retrySafe,
		Approver:       run.TerminalApprover(),
		Confirm:        run.ConfirmOnTerminal,
		Hooks:          hooks(pf.json, rf.verbose, escFile, stderr),
		StateMax:       st.eff.CacheMax.V,
		Search:         search,
	}
	st.apply(&cfg, rf.receiptFile)
	for _, n := range st.eff.Notes {
		call(cfg.Hooks.Note, n)
	}
	// wrun's records: made before the policy, so that its hole lies on a
	// directory the child cannot create in its place. Without a place for
	// them (a service account whose home directory is not there) the run
	// goes on unrecorded; -v says so.
	recordsOff := nested()
	if !recordsOff {
		if err := ensureStateDir(st.paths); err != nil {
			recordsOff = true
			if rf.verbose {
				call(cfg.Hooks.Note, "this run is not recorded (no receipt, no roster entry, no write-scope guard): "+err.Error())
			}
		}
	}
	for _, n := range st.req.Notes {
		call(cfg.Hooks.Note, n)
	}
	// The harness's session (policy.EnvSession): only an outermost,
	// recorded run has one; a nested run's WRUN_SESSION is the child's.
	if sid, ok := os.LookupEnv(policy.EnvSession); ok && !recordsOff {
		s, err := session.Open(filepath.Join(st.paths.State, "sessions"), sid)
		if err != nil {
			return refuse(pf, rf, stderr, id, err.Error())
		}
		cfg.Session = s
	}
	approver, timeout := rf.approver, rf.approverTimeout
	if approver == "" {
		approver = st.eff.Approver.V
	}
	if !rf.timeoutSet {
		timeout = st.eff.ApproverTimeout.V
	}
	if approver != "" {
		cfg.Approver = run.CommandApprover(approver, timeout, stderr)
	}
	if st.req.ConductorDir != "" {
		cfg.Approver = conductorApprover(cfg.Approver, approver != "")
		if cfg.Session != nil {
			cfg.Session = conductorSession{cfg.Session}
		}
	}
	if rf.onDenial == "hold" && rf.controlFD == 0 {
		// Each held call's question goes to the approver command.
		if approver == "" {
			return refuse(pf, rf, stderr, id, "--on-denial=hold needs --control-fd N or an approver (--approver CMD, or approver in the config) to ask; the command was not run")
		}
		cfg.Control = run.NewApproverControl(run.CommandApprover(approver, rf.holdTimeout, stderr), id, rf.holdTimeout)
	}
	var report *sandbox.Report
	planned := cfg.Hooks.Planned
	cfg.Hooks.Planned = func(rep sandbox.Report) {
		if report == nil {
			report = &rep
		}
		call(planned, rep)
	}
	rec := recorder{id: id, off: recordsOff, note: cfg.Hooks.Note, st: st, rf: rf, argv: argv, workdir: workdir, start: start, allowWrite: cfg.AllowWrite, allowRead: cfg.AllowRead}
	held, err := rec.register(cfg.Grant, cfg.Ceiling, cfg.CeilingSource, cfg.Spec)
	if err != nil {
		sum := run.Summary{RunID: id, ExitCode: run.ExitFailed, Error: err.Error()}
		rec.write(stderr, &sum, nil)
		return refuse(pf, rf, stderr, id, err.Error())
	}
	defer held.Release()
	if rf.verbose && !pf.json {
		ran := cfg.Hooks.Ran
		cfg.Hooks.Ran = func(s *run.Summary) {
			writeEnvDropped(stderr, s)
			ran(s)
		}
	}
	if rf.eventsFD > 0 {
		cfg.Events = run.NewEvents(os.NewFile(uintptr(rf.eventsFD), "events-fd"), id)
	}
	if rf.controlFD > 0 {
		cfg.Control = run.NewControl(os.NewFile(uintptr(rf.controlFD), "control-fd"), id, rf.holdTimeout)
	}
	if cfg.Control != nil {
		defer cfg.Control.Close()
	}
	sum, err := run.Run(cfg)
	if cfg.Control != nil {
		if why := cfg.Control.Broken(); why != "" && why != "the run ended" {
			sum.Warnings = append(sum.Warnings, "the control channel: "+why)
		}
	}
	if sum.Linger == nil {
		held.Release() // the run is over: its directories are free
	}
	rec.write(stderr, &sum, report)
	switch {
	case rf.jsonFD > 0:
		// The summary alone on its own descriptor; stderr keeps the
		// human lines.
		if err != nil {
			fmt.Fprintln(stderr, "wrun:", errText(err))
		}
		f := os.NewFile(uintptr(rf.jsonFD), "json-fd")
		writeJSON(f, sum.Stamp())
		f.Close()
	case pf.json:
		// On stderr the summary starts on a line of its own, whatever the
		// command's last output was: after a newline only where the
		// command left a line open (or wrun could not tell).
		if sum.StderrOpen() {
			fmt.Fprintln(stderr)
		}
		writeJSON(stderr, sum.Stamp())
	case err != nil:
		fmt.Fprintln(stderr, "wrun:", errText(err))
	}
	if d := sum.Decision; rf.onDenial == "hold" && !pf.json && rf.jsonFD == 0 && d != nil && d.Approved {
		fmt.Fprintln(stderr, "wrun: approved while the command ran:", quote.Line(quote.Words(d.Args)), "("+quote.Line(strings.Join(d.IDs, ", "))+")")
	}
	cfg.Events.Exited(sum.Stamp())
	code := sum.Status()
	keep.send(code)
	if sum.Linger != nil {
		sum.Linger()
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// refuse says why wrun did not run the command (on the --json-fd
// descriptor, as --json asks, or in a line) and exits 125.
func refuse(pf *policyFlags, rf runFlags, stderr *os.File, id, msg string) error {
	sum := run.Summary{RunID: id, ExitCode: run.ExitFailed, Error: msg}
	if rf.eventsFD > 0 {
		run.NewEvents(os.NewFile(uintptr(rf.eventsFD), "events-fd"), id).Exited(sum.Stamp())
	}
	switch {
	case rf.jsonFD > 0:
		f := os.NewFile(uintptr(rf.jsonFD), "json-fd")
		writeJSON(f, sum.Stamp())
		f.Close()
		fmt.Fprintln(stderr, "wrun:", quote.Line(msg))
	case pf.json:
		writeJSON(stderr, sum.Stamp())
	default:
		fmt.Fprintln(stderr, "wrun:", quote.Line(msg))
	}
	return &exitError{run.ExitFailed}
}

func call[T any](f func(T), v T) {
	if f != nil {
		f(v)
	}
}

// hooks say what a run does as it does it. Without --json they print
// human lines; either way they write the escalation file and say what an
// approval decided. Every human line may carry text the child chose (a
// path it created, an error naming one): it goes through quote.Line, and
// paths through quote.Word, so nothing in it acts on the terminal.
func hooks(asJSON, verbose bool, escalationFile *outFile, stderr io.Writer) run.Hooks {
	say := func(format string, a ...any) {
		if !asJSON {
			fmt.Fprintln(stderr, "wrun:", quote.Line(fmt.Sprintf(format, a...)))
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
				writeAttempt(stderr, s, verbose)
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
// warnings, denials in plain words. Denials that were not asked for (the
// command succeeded, or wrun expects them) are said only when verbose,
// except those of a hidden or protected path: they always are.
func writeAttempt(w io.Writer, s *run.Summary, verbose bool) {
	for _, p := range s.Swept {
		fmt.Fprintf(w, "wrun: removed %s: the command created it, and it must not exist (see wrun explain)\n", quote.Word(p))
	}
	for _, warn := range s.Warnings {
		fmt.Fprintln(w, "wrun: warning:", quote.Line(warn))
	}
	for _, f := range s.AfterRunFailed {
		fmt.Fprintln(w, "wrun: FAILED after the run:", quote.Line(f))
	}
	// Near-identical lines are said once (escalate.GroupedLines); --json
	// has every denial.
	if s.Request != nil {
		var say []escalate.DeniedAct
		for _, d := range s.Request.Denials {
			// glibc's name-service lookups (id, ls -l, git) probe nscd
			// over a UNIX socket on every run and shrug off the refusal;
			// say so only when the command failed. --json has them all.
			if d.Right == "socket_unix" && s.ExitCode == 0 {
				continue
			}
			say = append(say, d)
		}
		for _, l := range escalate.GroupedLines(say) {
			fmt.Fprintln(w, quote.Line(l))
		}
	}
	var shownActs []escalate.DeniedAct
	for _, d := range s.DenialsIgnored {
		if verbose || d.Shown() {
			shownActs = append(shownActs, d)
		}
	}
	shown := len(shownActs)
	for _, l := range escalate.GroupedLines(shownActs) {
		fmt.Fprintln(w, quote.Line(l))
	}
	if shown > 0 {
		fmt.Fprintf(w, "wrun: the command succeeded, so nothing is asked for: %d denial(s) recorded (denials_ignored in --json)\n", len(s.DenialsIgnored))
	}
	if verbose {
		for _, d := range s.DenialsExpected {
			fmt.Fprintln(w, "wrun: expected, not asked for:", quote.Line(strings.TrimPrefix(d.Summary, "wrun: ")))
		}
	}
	if s.Degraded {
		fmt.Fprintln(w, "wrun: DEGRADED run: not everything the grant promises was enforced")
	}
}

// writeEscalationFile writes req, if any, to f, if given, without
// following a link the child may have put in its place.
func writeEscalationFile(stderr io.Writer, f *outFile, req *escalate.Request) {
	if req == nil || f == nil {
		return
	}
	b, err := req.JSON()
	if err == nil {
		err = f.write(b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "wrun: writing the escalation request to %s: %s\n", quote.Word(f.path), quote.Line(err.Error()))
	}
}

// writeDecision says what was decided on req, and how to rerun with it.
func writeDecision(w io.Writer, req *escalate.Request, d *run.DecisionSummary) {
	if !d.Approved {
		fmt.Fprintf(w, "wrun: escalation not approved: %s\n", quote.Line(d.Reason))
		return
	}
	widens := len(d.Routes) == 0
	if g, err := grant.Parse(req.Grant); err != nil || !slices.Equal(d.Args, []string{"--grant", g.Spec()}) {
		widens = true
	}
	if widens {
		fmt.Fprintf(w, "wrun: approved (%s): rerun with wrun %s -- %s\n", quote.Line(strings.Join(d.IDs, ", ")), quote.Words(d.Args), quote.Words(req.Command))
	} else {
		fmt.Fprintf(w, "wrun: approved (%s)\n", quote.Line(strings.Join(d.IDs, ", ")))
	}
	for _, r := range d.Routes {
		fmt.Fprintf(w, "wrun: approved route: %s\n", quote.Line(r))
	}
}

// errText is err safe to print: one line, except that the list of what
// the kernel cannot enforce (wrun's own words, nothing the child chose)
// keeps a line per item.
func errText(err error) string {
	var ue *sandbox.UnenforceableError
	if !errors.As(err, &ue) {
		return quote.Line(err.Error())
	}
	lines := strings.Split(ue.Error(), "\n")
	for i, l := range lines {
		lines[i] = quote.Line(l)
	}
	return strings.Join(lines, "\n")
}

// carriedFlags are the flags of this command line that shape the run, as
// given: a route the request offers carries them (run.Config.Flags), so
// that a harness running the route's commands reruns what wrun's own
// retry would. How the run reports (--json, --json-fd, -v,
// --escalation-file, --on-denial, --approver) is the harness's to choose
// for each command, and is not carried.
func carriedFlags(pf *policyFlags, rf runFlags) []string {
	var out []string
	if pf.workdir != "" {
		out = append(out, "--workdir", pf.workdir)
	}
	for _, l := range []struct {
		flag  string
		paths []string
	}{{"--allow-read", pf.allowRead}, {"--allow-write", pf.allowWrite}, {"--allow-unix", pf.allowUnix}, {"--allow-host", pf.allowHost}, {"--keep-env", pf.keepEnv}} {
		for _, p := range l.paths {
			out = append(out, l.flag, p)
		}
	}
	if rf.ceiling != "" {
		out = append(out, "--ceiling", rf.ceiling)
	}
	if pf.bestEffort {
		out = append(out, "--best-effort")
	}
	if rf.noObserve {
		out = append(out, "--observe", "off")
	}
	if rf.shareWorkdir {
		out = append(out, "--share-workdir")
	}
	if rf.noReceipt {
		out = append(out, "--no-receipt")
	} else if rf.receiptFile != "" {
		out = append(out, "--receipt-file", rf.receiptFile)
	}
	return out
}

// roleFlags are this command line's --role, --model and --thinking: a
// route command under the run's own grant carries them.
func roleFlags(rf runFlags) []string {
	var out []string
	for _, f := range [][2]string{{"--role", rf.role}, {"--model", rf.model}, {"--thinking", rf.thinking}} {
		if f[1] != "" {
			out = append(out, f[0], f[1])
		}
	}
	return out
}

// checkLiveFlags checks --events-fd, --control-fd and --on-denial=hold
// before anything runs: each descriptor must be one wrun inherited open,
// above 2, not the same file as a standard stream the command gets, and
// not another of wrun's channels; the control channel must be a socket
// (it is read and written).
func checkLiveFlags(rf runFlags, stdin, stdout, stderr *os.File) error {
	check := func(flag string, fd int, others map[string]int) error {
		if fd == 0 {
			return nil
		}
		if fd < 3 {
			return &usageError{fmt.Sprintf("%s=%d: want a descriptor above 2 that wrun inherited open", flag, fd)}
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return &usageError{fmt.Sprintf("%s=%d: not an open descriptor of wrun (%v)", flag, fd, err)}
		}
		if name := sharedWithCommand(fd, stdin, stdout, stderr); name != "" {
			return &usageError{fmt.Sprintf("%s=%d is the same file as wrun's %s, which the command gets: give it a descriptor of its own", flag, fd, name)}
		}
		for other, ofd := range others {
			if ofd == fd {
				return &usageError{fmt.Sprintf("%s=%d is also %s: give each its own descriptor", flag, fd, other)}
			}
		}
		return nil
	}
	if err := check("--events-fd", rf.eventsFD, map[string]int{"--json-fd": rf.jsonFD}); err != nil {
		return err
	}
	if err := check("--control-fd", rf.controlFD, map[string]int{"--json-fd": rf.jsonFD, "--events-fd": rf.eventsFD}); err != nil {
		return err
	}
	if rf.controlFD > 0 {
		var st unix.Stat_t
		if err := unix.Fstat(rf.controlFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return &usageError{fmt.Sprintf("--control-fd=%d: not a socket (the channel is read and written: one end of a socketpair)", rf.controlFD)}
		}
		// Its reads end when the run does.
		if err := unix.SetNonblock(rf.controlFD, true); err != nil {
			return &usageError{fmt.Sprintf("--control-fd=%d: %v", rf.controlFD, err)}
		}
	}
	switch {
	case rf.controlFD > 0 && rf.onDenial != "hold":
		return &usageError{"--control-fd goes with --on-denial=hold"}
	case rf.onDenial == "hold" && runtime.GOOS != "linux":
		return &usageError{"--on-denial=hold is Linux only: on macOS the Seatbelt sandbox refuses a call before wrun sees it, so nothing can be held; use --on-denial=retry"}
	case rf.controlFD > 0 && rf.approver != "":
		return &usageError{"--control-fd and --approver: --on-denial=hold asks one of them; give one"}
	case (rf.eventsFD > 0 || rf.controlFD > 0) && rf.keepBackground:
		return &usageError{"--events-fd and --control-fd do not go with --keep-background yet"}
	case rf.holdTimeout <= 0:
		return &usageError{fmt.Sprintf("--hold-timeout=%s: want a positive duration", rf.holdTimeout)}
	}
	return nil
}
