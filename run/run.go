package run

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/proxy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
)

// Summary is what a run did: wrun --json writes it as one object at exit,
// valid against schema/summary.v2.json (SummarySchema).
type Summary struct {
	// Linger, set under KeepBackground where the sandbox mediates the
	// command's calls, serves what the command left in the background
	// (sandbox.Result.Linger): the caller calls it once it has reported
	// the run; it returns when the last of those processes has ended.
	Linger func() `json:"-"`
	// Schema and Version name the summary's format (SummarySchemaID,
	// SummaryVersion); set on the top-level summary only (Stamp), not on
	// Retry.
	Schema  string `json:"schema,omitempty"`
	Version int    `json:"version,omitempty"`
	// RunID names the run: its receipt's id and its roster entry's (NewID);
	// a retry is the same run.
	RunID string `json:"run_id,omitempty"`
	// Grant is the grant the command ran under, in canonical form.
	Grant string `json:"grant"`
	// Sandbox names the enforcement (Platform.Name).
	Sandbox string `json:"sandbox"`
	// Degraded is set when not everything the grant promises was
	// enforced (Spec.BestEffort); Gaps says what was not.
	Degraded bool     `json:"degraded"`
	Gaps     []string `json:"not_enforced,omitempty"`
	// Notes say how the grant or ceiling was narrowed.
	Notes []string `json:"notes,omitempty"`
	// ExitCode is this attempt's exit status: the command's, 128+N when
	// signal N (Signal) killed it, or wrun's own failure status. After a
	// retry it is wrun's own status (Status: the last attempt's); Attempts
	// then lists each attempt with its own.
	ExitCode int `json:"exit_code"`
	Signal   int `json:"signal,omitempty"`
	// Killed counts background processes wrun ended after the command.
	Killed int `json:"background_killed,omitempty"`
	// Swept are protected paths the command created and wrun removed.
	Swept []string `json:"removed_protected,omitempty"`
	// EnvDropped names the invoking environment's variables the command
	// did not get (not on the allowlist, see policy.EnvFamilies): names
	// only, never values.
	EnvDropped []string `json:"env_dropped,omitempty"`
	// Error is why wrun failed, when it did.
	Error string `json:"error,omitempty"`
	// Warnings are what went wrong after the command started.
	Warnings []string `json:"warnings,omitempty"`
	// AfterRunFailed are the steps wrun takes after the run that failed
	// (settling the git quarantine, removing what the command must not
	// have created, removing the private temp dir). What they hold may
	// then not hold, so a run whose command succeeded ends with status
	// ExitFailed (125) when any failed.
	AfterRunFailed []string `json:"after_run_failed,omitempty"`
	// DenialsDropped counts denials beyond wrun's bounds
	// (sandbox.MaxDenials distinct ones, paths of sandbox.MaxDenialPath
	// bytes): counted, not kept, so not in the request.
	DenialsDropped int `json:"denials_dropped,omitempty"`
	// Request is the escalation request (escalate/schema/request.v3.json)
	// when something the run may have needed was denied
	// (escalate.Decide): only when the command failed.
	Request *escalate.Request `json:"request,omitempty"`
	// DenialsIgnored are the denials of a run whose command succeeded: it
	// needed none of them, so nothing is asked for. Printed only with -v,
	// except those of a hidden or protected path (escalate.DeniedAct.Shown).
	DenialsIgnored []escalate.DeniedAct `json:"denials_ignored,omitempty"`
	// DenialsExpected are refusals wrun expects and cannot prevent (the
	// go command's telemetry counters): recorded, never asked for,
	// printed only with -v.
	DenialsExpected []escalate.DeniedAct `json:"denials_expected,omitempty"`
	// Decision is the approval asked for under Ask or Retry.
	Decision *DecisionSummary `json:"decision,omitempty"`
	// Retry is the rerun with the approved widening: for a route of
	// several commands, the last that ran.
	Retry *Summary `json:"retry,omitempty"`
	// Attempts lists, after a retry, every run of this wrun in order: the
	// command, then the rerun or each command of the approved route.
	Attempts []Attempt `json:"attempts,omitempty"`

	// stderrOpen: the command's stderr, as wrun passed it on, did not end
	// with a newline, or wrun did not see it (see StderrOpen).
	stderrOpen bool
}

// StderrOpen reports whether what the last command of the run wrote to
// stderr may have left a line open: it ended without a newline, or wrun
// did not pass it on (a terminal, --keep-background) and cannot tell. A
// line of wrun's own written after it on stderr needs a newline first
// only then.
func (s *Summary) StderrOpen() bool {
	last := s
	for last.Retry != nil {
		last = last.Retry
	}
	return last.stderrOpen
}

// Attempt is one run in Summary.Attempts.
type Attempt struct {
	Command    []string `json:"command"`
	Grant      string   `json:"grant"`
	AllowWrite []string `json:"allow_write,omitempty"`
	// Route is the id of the approved route the command belongs to.
	Route    string `json:"route,omitempty"`
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`
	Error    string `json:"error,omitempty"`
	// Denials counts the distinct denials of the run.
	Denials int `json:"denials"`
}

// Status is the exit status of the whole run: the rerun's when there was
// one, else the command's (ExitCode).
func (s *Summary) Status() int {
	last := s
	if s.Retry != nil {
		last = s.Retry
	}
	if last.ExitCode == 0 && len(last.AfterRunFailed) > 0 {
		return ExitFailed // the command succeeded; what wrun must do after it did not
	}
	return last.ExitCode
}

// DecisionSummary is the decision on an escalation request.
type DecisionSummary struct {
	Approved bool `json:"approved"`
	// Reason says why it was not approved.
	Reason string `json:"reason,omitempty"`
	// Args are the wrun flags of the approved widening.
	Args []string `json:"args,omitempty"`
	// IDs are the approved alternatives.
	IDs   []string `json:"alternatives,omitempty"`
	Scope string   `json:"scope,omitempty"`
	// SessionRemembered: the session's remembered approvals decided; no
	// approver was asked.
	SessionRemembered bool `json:"session_remembered,omitempty"`
	// Warning says what went wrong remembering a session's approval.
	Warning string `json:"warning,omitempty"`
	// Routes describe approved alternatives that widen nothing.
	Routes []string `json:"routes,omitempty"`
	// NotRun says, under Retry, which approved routes could not be run
	// and why.
	NotRun  []string `json:"not_run,omitempty"`
	Retried bool     `json:"retried"`
}

// Run runs cfg.Argv once under the grant cfg asks for, narrowed to its
// bounds (Resolve): in a private temp dir, under the policy computed for
// this host and the plan cfg.Platform makes of it, with verify's steps
// before and after. Signals wrun receives while the command runs
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) are forwarded to
// it. What the sandbox denied that the run may have needed
// (escalate.Decide) becomes an escalation request; under Ask
// and Retry it goes to cfg.Approver, and under Retry an approved widening
// inside the ceiling is run once more.
//
// The summary is filled in as far as the run got. The error is set when
// wrun failed before or around the command (Summary.Error then holds its
// message and Summary.ExitCode the status to exit with); that the command
// itself failed is no error: Summary.Status says how it ended.
func Run(cfg Config) (Summary, error) {
	// Catch the signals to forward. os/signal starts (and waits for) a
	// thread of its own, so register from a goroutine, overlapping that
	// with the policy work, and wait for it just before the child starts
	// (in attempt): a signal sent once the child runs (a harness's SIGTERM
	// after the first line of output) must reach the child, not end wrun.
	// One sent before ends wrun as it would end any process.
	sigs := make(chan os.Signal, 16)
	registered := make(chan struct{})
	go func() {
		// A signal wrun's caller ignores (nohup's SIGHUP, a background
		// job's SIGINT: the ones the Go runtime leaves ignored) stays
		// ignored, so the command inherits it as it would bare.
		var caught []os.Signal
		for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2} {
			if !signal.Ignored(s) {
				caught = append(caught, s)
			}
		}
		signal.Notify(sigs, caught...)
		close(registered)
	}()
	defer func() {
		<-registered
		signal.Stop(sigs)
	}()
	if ctx := cfg.Context; ctx != nil {
		ended := make(chan struct{})
		defer close(ended)
		go cancelOnDone(ctx, ended, sigs, cfg.KillAfter)
	}

	search := cfg.Search
	if search == nil {
		search = StartSearch()
	}
	pl := cfg.platform()
	sum := Summary{Sandbox: pl.Name(), RunID: cfg.RunID}
	if sum.RunID == "" {
		sum.RunID = NewID(time.Now())
	}
	cfg.RunID = sum.RunID
	fail := func(code int, err error) (Summary, error) {
		sum.ExitCode, sum.Error = code, err.Error()
		return sum, err
	}
	if err := cfg.check(); err != nil {
		return fail(ExitFailed, err)
	}
	env := cfg.env()
	b, err := Resolve(cfg.Grant, cfg.Ceiling, cfg.CeilingSource, env)
	if err != nil {
		return fail(ExitFailed, err)
	}
	g, vnote := verifyDefault(cfg.Grant, b.Grant, pl)
	if vnote != "" {
		b.Notes = append(b.Notes, vnote)
	}
	sum.Grant, sum.Notes = g.String(), b.Notes
	for _, n := range b.Notes {
		call1(cfg.Hooks.Note, n)
	}
	if g.Shell == grant.ShellNone {
		return fail(ExitFailed, fmt.Errorf("grant %s has shell=none: it allows no process to be launched", g))
	}
	h, o, err := hostFacts(&cfg.Spec, env)
	if err != nil {
		return fail(ExitFailed, err)
	}
	h.Sandbox = pl.Name()
	h.Program = commandPath(cfg.Argv, h.Workdir)
	o.Ceiling = b.Ceiling.Bound().String()
	c := sandbox.Command{Argv: cfg.Argv, Stdin: orFile(cfg.Stdin, os.Stdin), Stdout: orFile(cfg.Stdout, os.Stdout),
		Stderr: orFile(cfg.Stderr, os.Stderr), Signals: sigs}

	first := h
	first.Search = search // retries search again
	out := attempt(&cfg, pl, g, first, o, c, b.Ceiling, registered)
	fillSummary(&sum, out)
	if out.err != nil {
		return fail(out.code, out.err)
	}
	if cfg.OnDenial == Hold {
		// What was approved while it ran, for the receipt.
		sum.Decision = cfg.Control.decision()
	}
	call1(cfg.Hooks.Ran, &sum)

	if out.req == nil || cfg.OnDenial == "" || cfg.OnDenial == Report || cfg.OnDenial == Hold {
		return sum, nil
	}
	ceiling := b.Ceiling
	ceiling.Guarded = out.guarded
	d, w, sig := decideInterruptible(out.req, cfg.Approver, ceiling, cfg.Session, sigs)
	sum.Decision = d
	if sig != 0 {
		// Told to stop while the approver thought: the approver's group
		// is gone; wrun ends as the signal asks.
		sum.ExitCode = 128 + int(sig)
		sum.Error = fmt.Sprintf("stopped by signal %d (%s) while waiting for the approver", int(sig), sig)
		return sum, errors.New(sum.Error)
	}
	call2(cfg.Hooks.Decided, out.req, d)
	if !d.Approved || cfg.OnDenial != Retry || w == nil {
		return sum, nil
	}
	steps, notes := retrySteps(w, g, cfg.Argv, cfg.Flags, cfg.RoleFlags, b.Ceiling)
	d.NotRun = notes
	for _, n := range notes {
		call1(cfg.Hooks.Note, n)
	}
	if len(steps) == 0 {
		return sum, nil
	}
	if !cfg.RetrySafe && (cfg.Confirm == nil || !cfg.Confirm(cfg.Argv, w)) {
		call0(cfg.Hooks.NotRerun)
		return sum, nil
	}
	d.Retried = true
	sum.Attempts = []Attempt{attemptOf(&sum, cfg.Argv, nil, "")}
	for _, st := range steps {
		call1(cfg.Hooks.Retrying, st.args())
		sc := c
		sc.Argv = st.argv
		retry := attempt(&cfg, pl, st.grant, h, w.Options(o), sc, b.Ceiling, registered)
		rs := Summary{Sandbox: pl.Name(), Grant: st.grant.String()}
		fillSummary(&rs, retry)
		sum.Linger = both(sum.Linger, rs.Linger)
		sum.Retry = &rs
		if retry.err != nil {
			rs.ExitCode, rs.Error = retry.code, retry.err.Error()
			call1(cfg.Hooks.RetryFailed, retry.err)
		} else {
			call1(cfg.Hooks.Ran, &rs)
		}
		sum.Attempts = append(sum.Attempts, attemptOf(&rs, st.argv, w.AllowWrite, st.route))
		if rs.Status() != 0 {
			break // a route's later command needs the earlier one
		}
	}
	// wrun's own status is the last attempt's; Attempts has each.
	sum.ExitCode = sum.Status()
	return sum, nil
}

// cancelOnDone ends the command when ctx is done, until ended: SIGTERM
// through the forwarded signals, then SIGKILL after the grace.
func cancelOnDone(ctx context.Context, ended <-chan struct{}, sigs chan<- os.Signal, grace time.Duration) {
	select {
	case <-ctx.Done():
	case <-ended:
		return
	}
	if grace <= 0 {
		grace = cancelGrace
	}
	for _, s := range []os.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case sigs <- s:
		default: // full: the forwarding is behind; the next one tells
		}
		t := time.NewTimer(grace)
		select {
		case <-t.C:
		case <-ended:
			t.Stop()
			return
		}
	}
}

// retryStep is one command a retry runs: the command itself under the
// widened grant, or one command of an approved route.
type retryStep struct {
	grant grant.Grant
	argv  []string
	route string // the route's alternative id, if it is one
	allow []string
}

func (s retryStep) args() []string {
	out := []string{"--grant", s.grant.Spec()}
	for _, p := range s.allow {
		out = append(out, "--allow-write", p)
	}
	if s.route != "" {
		out = append(out, "--")
		out = append(out, s.argv...)
	}
	return out
}

// retrySteps is what a retry runs for w: an approved route's commands
// (one route: each is a "wrun --grant SPEC -- ARGV" line, its grant inside
// the ceiling, widened by what else was approved), else the command once
// more when w widens anything. The notes say what cannot be run
// automatically and why.
func retrySteps(w *escalate.Widening, g grant.Grant, argv, flags, roleFlags []string, ceiling escalate.Ceiling) ([]retryStep, []string) {
	var notes []string
	var runnable []escalate.Alternative
	for _, r := range w.Routes {
		if len(r.Commands) == 0 {
			notes = append(notes, fmt.Sprintf("approved %s cannot be run automatically (it names no command): %s", r.ID, r.Description))
			continue
		}
		runnable = append(runnable, r)
	}
	if len(runnable) > 1 {
		var ids []string
		for _, r := range runnable {
			ids = append(ids, r.ID)
		}
		notes = append(notes, fmt.Sprintf("approved routes %s: a retry runs one route; none was run", strings.Join(ids, ", ")))
		return nil, notes
	}
	if len(runnable) == 1 {
		r := runnable[0]
		var steps []retryStep
		for _, line := range r.Commands {
			rg, rargv, err := parseRouteCommand(line, flags, roleFlags)
			if err == nil && !rg.Within(ceiling.Grant) {
				err = fmt.Errorf("its grant %s exceeds the ceiling %s", rg.Compact(), ceiling)
			}
			if err != nil {
				notes = append(notes, fmt.Sprintf("approved %s cannot be run automatically: %v", r.ID, err))
				return nil, notes
			}
			rg = rg.Union(w.Grant)
			rg.Tools = w.Grant.Tools
			steps = append(steps, retryStep{grant: rg, argv: rargv, route: r.ID, allow: w.AllowWrite})
		}
		return steps, notes
	}
	if !w.Widens(g) {
		return nil, notes
	}
	return []retryStep{{grant: w.Grant, argv: argv, allow: w.AllowWrite}}, notes
}

// parseRouteCommand reads a route's command line: "wrun", "--grant SPEC",
// the run's own flags (flags, and roleFlags after them when the route
// offers them), "--", then the command. Nothing else is accepted: a route
// must not bring flags of its own into the retry, and the retry keeps the
// run's own as they are.
func parseRouteCommand(line, flags, roleFlags []string) (grant.Grant, []string, error) {
	bad := fmt.Errorf("%q is not a wrun --grant SPEC [the run's own flags] -- COMMAND line", line)
	if len(line) < 3 || line[0] != "wrun" {
		return grant.Grant{}, nil, bad
	}
	rest := line[1:]
	spec := ""
	if rest[0] == "--grant" && len(rest) > 2 {
		spec, rest = rest[1], rest[2:]
	}
	dash := slices.Index(rest, "--")
	if spec == "" || dash < 0 || len(rest) < dash+2 {
		return grant.Grant{}, nil, bad
	}
	own := rest[:dash]
	if !slices.Equal(own, flags) && !slices.Equal(own, append(slices.Clone(flags), roleFlags...)) {
		return grant.Grant{}, nil, fmt.Errorf("%q: its flags %q are not the run's own (%q)", line, own, flags)
	}
	rest = rest[dash:]
	g, err := grant.Parse(spec)
	if err != nil {
		return grant.Grant{}, nil, err
	}
	return g, slices.Clone(rest[1:]), nil
}

// attemptOf is s as one entry of Summary.Attempts.
func attemptOf(s *Summary, argv, allow []string, route string) Attempt {
	a := Attempt{Command: argv, Grant: s.Grant, AllowWrite: allow, Route: route, ExitCode: s.ExitCode, Signal: s.Signal, Error: s.Error}
	if s.Request != nil {
		a.Denials = len(s.Request.Denials)
	}
	return a
}

// decideInterruptible is decide with the signals wrun catches watched:
// SIGINT, SIGTERM, SIGHUP or SIGQUIT while the approver thinks end the
// wait at once (the approver is told through its context) and are
// returned; SIGUSR1 and SIGUSR2 are ignored then, as there is no child to
// forward them to.
func decideInterruptible(req *escalate.Request, approve Approver, ceiling escalate.Ceiling, sess Session, sigs <-chan os.Signal) (*DecisionSummary, *escalate.Widening, syscall.Signal) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var got syscall.Signal
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case s := <-sigs:
				ss, ok := s.(syscall.Signal)
				if !ok || ss == syscall.SIGUSR1 || ss == syscall.SIGUSR2 {
					continue
				}
				got = ss
				cancel(fmt.Errorf("wrun got %s", ss))
				return
			}
		}
	}()
	d, w := decide(ctx, req, approve, ceiling, sess)
	close(stop)
	<-watched
	if got != 0 {
		return d, nil, got
	}
	return d, w, 0
}

func orFile(f, def *os.File) *os.File {
	if f == nil {
		return def
	}
	return f
}

func call0(f func()) {
	if f != nil {
		f()
	}
}

func call1[T any](f func(T), v T) {
	if f != nil {
		f(v)
	}
}

func call2[T, U any](f func(T, U), v T, u U) {
	if f != nil {
		f(v, u)
	}
}

// outcome is one run of the command under one grant.
type outcome struct {
	p       *policy.Policy
	rep     sandbox.Report
	res     sandbox.Result
	req     *escalate.Request
	sorted  escalate.Sorted // req is sorted.Request
	code    int
	err     error // set when wrun failed before or around the child
	started bool
	// guarded are the run's paths no approval opens a directory above
	// (escalate.Ceiling.Guarded).
	guarded []string
	// stderrOpen: see Summary.StderrOpen.
	stderrOpen bool
}

func fillSummary(sum *Summary, out outcome) {
	sum.Degraded = out.rep.Degraded
	for _, gp := range out.rep.Gaps {
		if gp.Essential {
			sum.Gaps = append(sum.Gaps, gp.What)
		}
	}
	sum.ExitCode, sum.Signal, sum.Killed = out.code, int(out.res.Signal), out.res.Killed
	sum.Swept, sum.Warnings, sum.Request = out.res.Swept, out.res.Warnings, out.req
	sum.DenialsIgnored, sum.DenialsExpected = out.sorted.Ignored, out.sorted.Expected
	sum.AfterRunFailed = out.res.AfterRunFailed
	if out.p != nil {
		for _, e := range out.p.EnvUnset {
			sum.EnvDropped = append(sum.EnvDropped, e.Name)
		}
	}
	sum.DenialsDropped = out.res.DenialsDropped
	sum.Linger = both(sum.Linger, out.res.Linger)
	sum.stderrOpen = out.stderrOpen
}

// both is a then b, either of which may be nil.
func both(a, b func()) func() {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func() { a(); b() }
}

// attempt runs the command once under grant g: a private temp dir, the
// policy, the plan, verify's steps around the child, and the analysis of
// what was denied. registered is closed once the signals to forward are
// caught; the child starts after that.
func attempt(cfg *Config, platform Platform, g grant.Grant, h policy.Host, o policy.Options, c sandbox.Command, ceiling escalate.Ceiling, registered <-chan struct{}) (out outcome) {
	failed := func(code int, err error) outcome { out.code, out.err = code, err; return out }
	// Private and empty, at a path stable for the workspace (tools key
	// caches on TMPDIR), never shared by two runs at once.
	tmp, err := verify.OpenTempDir(h.Workdir)
	if err != nil {
		return failed(ExitFailed, fmt.Errorf("creating the private temp dir: %w", err))
	}
	removeTmp := true
	defer func() {
		if !removeTmp {
			tmp.Keep()
			return
		}
		if err := tmp.Close(); err != nil && out.started {
			out.res.AfterRunFailed = append(out.res.AfterRunFailed, "removing the private temp dir: "+err.Error())
		}
	}()
	h.TempDir = tmp.Path
	if h.RunID, err = newAttemptID(); err != nil {
		return failed(ExitFailed, err)
	}
	h.Stdio = stdioPaths([3]*os.File{c.Stdin, c.Stdout, c.Stderr})
	p, err := policy.Compute(g, h, o)
	if err != nil {
		return failed(ExitFailed, err)
	}
	out.p = p
	state, err := holdState(cfg, g, h, o, p)
	if err != nil {
		return failed(ExitFailed, err)
	}
	// Released however the attempt ends; when the command ran, once the
	// checks after it are made (below), keeping the caches within their
	// bound.
	defer func() {
		if state == nil {
			return
		}
		// What went is not said: wrun cache lists what is kept.
		if _, err := state.Done(); err != nil && out.started {
			out.res.Warnings = append(out.res.Warnings, "keeping the private build caches within their bound: "+err.Error())
		}
	}()
	px, err := startProxy(p, h.Env)
	if err != nil {
		return failed(ExitFailed, err)
	}
	var proxied []proxy.Denial
	if px != nil {
		// Ended with the run (before the analysis that reads what it
		// refused); the defer covers every earlier return.
		defer px.Close()
	}
	opts := sandbox.Options{BestEffort: cfg.BestEffort, KeepBackground: cfg.KeepBackground, NoObserve: cfg.NoObserve, KillAfter: cfg.KillAfter}
	if px != nil {
		opts.Proxy = px
	}
	var lv *live
	if cfg.Events != nil || cfg.OnDenial == Hold {
		lv = &live{ev: cfg.Events, grant: g, runID: cfg.RunID, ids: map[string]string{}, host: h, opts: o}
		opts.Denied = lv.denied
		if cfg.OnDenial == Hold {
			lv.ctl = cfg.Control
			opts.Hold = lv.hold
		}
	}
	pl, err := platform.Prepare(p, opts)
	if err != nil {
		return failed(ExitFailed, err)
	}
	out.rep = pl.Report()
	if cfg.OnDenial == Hold && !out.rep.Observer {
		return failed(ExitFailed, fmt.Errorf("--on-denial=hold needs wrun to see the command's calls before the kernel decides them (seccomp user notification, Linux), which this run does not (%s; --observe off and a nested wrun have no observer either): use --on-denial=retry", out.rep.Summary))
	}
	call1(cfg.Hooks.Planned, out.rep)
	sess, err := verify.Prepare(p.Prepare)
	if err != nil {
		sess.Finish(p.Finish, true)
		return failed(ExitFailed, fmt.Errorf("preparing the sandbox: %w", err))
	}
	// What the checks of earlier runs, ended without them, changed: said
	// now, before the command starts.
	for _, f := range sess.Findings() {
		call1(cfg.Hooks.Note, f.Path+": "+f.What)
	}
	seen := len(sess.Findings())
	// When the command is git itself, pick its object directory here
	// rather than through the git shim: one program start less.
	c.Argv, p.Env = verify.DirectGit(c.Argv, p.Cwd, p.Env)
	c.ExtraFiles = sess.Files()
	// What the observer does not see (every denial without it; refused
	// reads and executions with it, unless the kernel's audit records are
	// read) can only be inferred from the command's stderr: pass it through
	// a pipe and keep its tail. Not when stderr is a terminal (or another
	// character device) and the observer is on: the child would lose its
	// terminal. Not under KeepBackground: a background process holding
	// the pipe would keep wrun from ending.
	var tail *tailWriter
	var teeDone chan struct{}
	if !cfg.KeepBackground && (!out.rep.Observer || !isCharDevice(c.Stderr)) {
		pr, pw, err := os.Pipe()
		if err == nil {
			tail = &tailWriter{max: 64 << 10}
			teeDone = make(chan struct{})
			go func(dst io.Writer) {
				_, _ = io.Copy(io.MultiWriter(dst, tail), pr)
				pr.Close()
				close(teeDone)
			}(c.Stderr)
			c.Stderr = pw
			defer pw.Close()
		}
	}
	if lv != nil {
		a, err := escalate.New(p, analyzerFacts(cfg, &out, h, g, o, c.Argv, &ceiling))
		if err != nil {
			sess.Finish(p.Finish, true)
			return failed(ExitFailed, fmt.Errorf("analysing denials: %w", err))
		}
		lv.a, lv.deg = a, out.rep.Degraded
		lv.ceiling = ceiling
		lv.ceiling.Guarded = a.Guarded()
	}
	<-registered // signals caught before the child starts (Run)
	if cfg.Context != nil && cfg.Context.Err() != nil {
		sess.Finish(p.Finish, true) // no child started
		return failed(ExitFailed, fmt.Errorf("the run was cancelled before the command started: %w", context.Cause(cfg.Context)))
	}
	if lv != nil {
		if lv.ctl != nil {
			lv.ctl.decide, lv.ctl.answered = lv.decide, lv.answered
			lv.ctl.start()
		}
		cfg.Events.Started(g.String(), platform.Name(), out.rep.Degraded)
	}
	res, err := pl.Run(c)
	out.stderrOpen = true
	if tail != nil {
		c.Stderr.Close()
		<-teeDone
		out.stderrOpen = tail.open()
	}
	if err != nil {
		code := ExitFailed
		var se *sandbox.StartError
		if errors.As(err, &se) {
			code = se.Code
		}
		sess.Finish(p.Finish, true) // no child started
		return failed(code, err)
	}
	out.started = true
	out.res, out.code = res, res.ExitCode
	if px != nil {
		proxied = px.Close()
		out.res.Denials = append(out.res.Denials, proxyDenials(proxied)...)
	}
	defer deniedBeyondBounds(&out.res)
	if cfg.KeepBackground {
		removeTmp = false // background processes may still use it
	}
	// Unless asked to keep them, wrun has ended every process the command
	// started: nothing can change what the run wrote any more.
	finishErrs := sess.Finish(p.Finish, !cfg.KeepBackground)
	findings := sess.Findings()
	if lv != nil {
		// The checks of the directories approved while the command ran.
		f, errs := lv.finish(!cfg.KeepBackground)
		findings, finishErrs = append(slices.Clone(findings), f...), append(finishErrs, errs...)
	}
	for _, err := range finishErrs {
		var n verify.Notice
		if errors.As(err, &n) {
			out.res.Warnings = append(out.res.Warnings, "after the run: "+err.Error())
			continue
		}
		out.res.AfterRunFailed = append(out.res.AfterRunFailed, err.Error())
	}
	for i, f := range findings {
		if f.Changed && !slices.Contains(out.res.Swept, f.Path) {
			out.res.Swept = append(out.res.Swept, f.Path)
		}
		if i < seen || !f.Changed || !strings.HasPrefix(f.What, "removed: the command created it") {
			out.res.Warnings = append(out.res.Warnings, f.Path+": "+f.What)
		}
	}
	// Pushes wrun's own git shim or remote helper refused: reported by
	// them, not inferred from the output the command may have discarded.
	pushes, err := verify.ReadPushRefusals(p.Prepare)
	if err != nil {
		out.res.Warnings = append(out.res.Warnings, err.Error())
	}
	if len(out.res.Denials) == 0 && len(pushes) == 0 && (tail == nil || len(tail.lines()) == 0) {
		// Nothing was denied and the command wrote nothing to stderr to
		// infer a denial from: no request to build, and no analyser (it
		// computes verify's scope again) to make.
		return out
	}
	a, err := escalate.New(p, analyzerFacts(cfg, &out, h, g, o, c.Argv, &ceiling))
	if err != nil {
		out.res.Warnings = append(out.res.Warnings, "analysing denials: "+err.Error())
		return out
	}
	out.guarded = a.Guarded()
	denials := out.res.Denials
	for _, dest := range pushes {
		if d, ok := a.PushRefused(dest); ok {
			denials = append(denials, d)
		}
	}
	var reported []sandbox.Denial
	if tail != nil {
		reported = a.Infer(tail.lines())
		for _, d := range reported {
			// The observer sees every call that changes the file system:
			// with it, only what it cannot see is worth inferring. A push
			// the helper reported is not inferred again.
			if (!res.Observed || observerBlind(d)) && !(d.Op == escalate.OpGitPush && len(pushes) > 0) {
				denials = append(denials, d)
			}
		}
	}
	// The launcher bounds what it keeps; inferred denials come on top.
	denials, dropped := sandbox.BoundDenials(denials)
	out.res.DenialsDropped += dropped
	// Only what the run may have needed is asked for (escalate.Decide);
	// the rest is recorded.
	out.sorted = a.Sort(escalate.Run{RunID: cfg.RunID, Time: time.Now(), ExitCode: out.code, Degraded: out.rep.Degraded, Reported: reported}, denials)
	out.req = out.sorted.Request
	return out
}

// analyzerFacts are the facts the analysis of an attempt's denials needs.
func analyzerFacts(cfg *Config, out *outcome, h policy.Host, g grant.Grant, o policy.Options, argv []string, ceiling *escalate.Ceiling) escalate.Facts {
	prot := escalate.ProtectCarved
	if out.rep.Mediated {
		prot = escalate.ProtectExact
	}
	return escalate.Facts{
		Home: h.Home, Env: h.Env, Protection: prot, UnixConfined: out.rep.UnixConfined,
		Ceiling: ceiling, Argv: argv, Flags: cfg.Flags, RoleFlags: cfg.RoleFlags, Exists: func(path string) bool { _, err := os.Lstat(path); return err == nil },
		VerifyScope: verify.Compute(policy.VerifyInput(g, h, o)).Writable,
		WriteScope:  verify.WorktreeScope(policy.VerifyInput(g, h, o)),
	}
}

// holdState holds the run's key of wrun's private state (the build caches
// of sandboxed runs of this workspace under this authority) when the
// policy uses it, recording whose it is; nil when it does not.
func holdState(cfg *Config, g grant.Grant, h policy.Host, o policy.Options, p *policy.Policy) (*verify.StateUse, error) {
	in := policy.VerifyInput(g, h, o)
	if in.StateDir == "" || !slices.ContainsFunc(p.Rules, func(r policy.Rule) bool { return policy.Within(r.Path, in.StateDir) }) {
		return nil, nil
	}
	max := cfg.StateMax
	if max <= 0 {
		max = verify.DefaultStateMax
	}
	rec := verify.StateRecord{Workspace: h.Workdir, Grant: g.String(), AllowWrite: o.AllowWrite, AllowRead: o.AllowRead,
		AllowUnix: o.AllowUnix, KeepEnv: o.KeepEnv}
	u, err := verify.UseState(in.StateRoot, filepath.Base(in.StateDir), rec, max)
	if err != nil {
		return nil, fmt.Errorf("the private build caches: %w", err)
	}
	return u, nil
}

// deniedBeyondBounds warns that denials were counted and not kept.
func deniedBeyondBounds(res *sandbox.Result) {
	if res.DenialsDropped > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d more denial(s) were counted but not kept: wrun keeps the first %d distinct denials of a run, each path up to %d bytes (denials_dropped in --json)",
			res.DenialsDropped, sandbox.MaxDenials, sandbox.MaxDenialPath))
	}
}

// tailWriter keeps the last max bytes written to it, in a ring: a write
// copies its bytes once and allocates nothing, whatever the command
// prints (the command's stderr passes through it on its way out).
type tailWriter struct {
	mu   sync.Mutex
	max  int
	ring []byte // allocated at the first write, max bytes
	next int    // where the next byte goes
	full bool   // the ring has wrapped: all of it is the tail
	last byte   // the last byte written, 0 before any
}

// open reports whether what was written ends inside a line: something
// was, and its last byte is not a newline.
func (t *tailWriter) open() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last != 0 && t.last != '\n'
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if n > 0 {
		t.last = b[n-1]
	}
	if t.max <= 0 {
		return n, nil
	}
	if t.ring == nil {
		t.ring = make([]byte, t.max)
	}
	if len(b) >= t.max {
		b = b[len(b)-t.max:]
		copy(t.ring, b)
		t.next, t.full = 0, true
		return n, nil
	}
	c := copy(t.ring[t.next:], b)
	if c < len(b) {
		copy(t.ring, b[c:])
		t.full = true
	}
	t.next = (t.next + len(b)) % t.max
	if t.next == 0 && len(b) > 0 {
		t.full = true
	}
	return n, nil
}

// bytes returns the tail, oldest byte first.
func (t *tailWriter) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.full {
		return slices.Clone(t.ring[:t.next])
	}
	return append(slices.Clone(t.ring[t.next:]), t.ring[:t.next]...)
}

func (t *tailWriter) lines() []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(t.bytes()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// observerBlind says whether a denial is of a kind the observer does not
// watch: reading, listing, executing, and a git push verify refused.
func observerBlind(d sandbox.Denial) bool {
	if d.Right == escalate.RightGitPush {
		return true
	}
	acc := policy.ParseAccess(d.Right)
	return acc != 0 && acc&^(policy.ReadFile|policy.ReadDir|policy.Execute) == 0
}

// isCharDevice says whether f is a terminal or another character device
// (/dev/null), where no output is worth keeping.
func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newAttemptID names one attempt of a run (its git quarantine, its guard
// journal): unique, unlike its temp dir's path.
func newAttemptID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("naming the run: %w", err)
	}
	return "wrun-" + hex.EncodeToString(b[:]), nil
}
