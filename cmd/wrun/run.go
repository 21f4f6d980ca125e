package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
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
}

// runSummary is the --json output of a run: one object on stderr at exit.
type runSummary struct {
	Grant    string   `json:"grant"`
	Sandbox  string   `json:"sandbox"`
	Degraded bool     `json:"degraded"`
	Gaps     []string `json:"not_enforced,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	ExitCode int      `json:"exit_code"`
	Signal   int      `json:"signal,omitempty"`
	Killed   int      `json:"background_killed,omitempty"`
	Swept    []string `json:"removed_protected,omitempty"`
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Request is the escalation request (escalate/schema/request.v1.json)
	// when something was denied.
	Request *escalate.Request `json:"request,omitempty"`
	// Decision is the approval asked for with --on-denial=ask or retry.
	Decision *decisionSummary `json:"decision,omitempty"`
	// Retry is the rerun with the approved widening.
	Retry *runSummary `json:"retry,omitempty"`
}

type decisionSummary struct {
	Approved bool     `json:"approved"`
	Reason   string   `json:"reason,omitempty"`
	Args     []string `json:"args,omitempty"`
	IDs      []string `json:"alternatives,omitempty"`
	Scope    string   `json:"scope,omitempty"`
	Routes   []string `json:"routes,omitempty"`
	Retried  bool     `json:"retried"`
}

// outcome is one run of the command under one grant.
type outcome struct {
	p       *policy.Policy
	rep     sandbox.Report
	res     sandbox.Result
	req     *escalate.Request
	code    int
	err     error // set when wrun failed before or around the child
	started bool
}

func runCommand(pf *policyFlags, rf runFlags, argv []string, stdin, stdout, stderr *os.File) error {
	// Catch the signals to forward. os/signal starts (and waits for) a
	// thread of its own, so register from a goroutine, overlapping that with
	// the policy work below, and wait for it before the child starts: a
	// signal sent once the child runs (a harness's SIGTERM after the first
	// line of output) must reach the child, not end wrun. One sent before
	// ends wrun as it would end any process.
	sigs := make(chan os.Signal, 16)
	registered := make(chan struct{})
	go func() {
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		close(registered)
	}()

	say := func(format string, a ...any) {
		if !pf.json {
			fmt.Fprintf(stderr, "wrun: "+format+"\n", a...)
		}
	}
	sum := runSummary{Sandbox: platformName}
	fail := func(code int, err error) error {
		sum.ExitCode, sum.Error = code, err.Error()
		if pf.json {
			writeJSON(stderr, sum)
		} else {
			fmt.Fprintln(stderr, "wrun:", err)
		}
		return &exitError{code}
	}
	env := os.Environ()
	ceiling, cnotes, err := escalate.CeilingFrom(rf.ceiling, env)
	if err != nil {
		return fail(exitWrunFailed, err)
	}
	g, notes, err := effectiveGrant(pf.grant, env)
	if err != nil {
		return fail(exitWrunFailed, err)
	}
	notes = append(notes, cnotes...)
	if ceiling.Source == escalate.CeilingDefault {
		// Nobody set a ceiling: it is the user's own authority, which
		// includes whatever the user granted explicitly (desktop=on).
		ceiling.Grant = ceiling.Grant.Union(g)
	}
	if ex := g.Exceeds(ceiling.Grant); len(ex) > 0 {
		notes = append(notes, "grant narrowed to the ceiling ("+ceiling.String()+"): "+strings.Join(ex, "; "))
		g = g.Intersect(ceiling.Grant)
	}
	sum.Grant, sum.Notes = g.String(), notes
	for _, n := range notes {
		say("note: %s", n)
	}
	if g.Shell == grant.ShellNone {
		return fail(exitWrunFailed, fmt.Errorf("grant %s has shell=none: it allows no process to be launched", g))
	}
	h, o, err := hostFromFlags(pf, env)
	if err != nil {
		return fail(exitWrunFailed, err)
	}
	h.Sandbox = platformName
	o.Ceiling = ceiling.Grant.String()
	c := sandbox.Command{Argv: argv, Stdin: stdin, Stdout: stdout, Stderr: stderr, Signals: sigs}

	<-registered
	out := attempt(g, h, o, pf, rf, c, ceiling)
	fillSummary(&sum, out)
	if out.err != nil {
		return fail(out.code, out.err)
	}
	report(out, pf, rf, stderr)

	if out.req != nil && rf.onDenial != "report" {
		d, w := decide(out.req, rf, ceiling, stderr)
		sum.Decision = d
		if d.Approved && rf.onDenial == "retry" && w != nil && w.Widens(g) {
			if rf.retrySafe || confirmRerun(argv, w, stderr) {
				d.Retried = true
				say("retrying with %s", strings.Join(w.Args(), " "))
				retry := attempt(w.Grant, h, w.Options(o), pf, rf, c, ceiling)
				rs := runSummary{Sandbox: platformName, Grant: w.Grant.String()}
				fillSummary(&rs, retry)
				if retry.err != nil {
					rs.ExitCode, rs.Error = retry.code, retry.err.Error()
					say("retry failed: %v", retry.err)
				} else {
					report(retry, pf, rf, stderr)
				}
				sum.Retry = &rs
				out = retry
			} else {
				say("not rerun: the command is not marked --retry-safe and there is no terminal to confirm on")
			}
		}
	}
	if pf.json {
		writeJSON(stderr, sum)
	}
	if out.code == 0 {
		return nil
	}
	return &exitError{out.code}
}

func fillSummary(sum *runSummary, out outcome) {
	sum.Degraded = out.rep.Degraded
	for _, gp := range out.rep.Gaps {
		if gp.Essential {
			sum.Gaps = append(sum.Gaps, gp.What)
		}
	}
	sum.ExitCode, sum.Signal, sum.Killed = out.code, int(out.res.Signal), out.res.Killed
	sum.Swept, sum.Warnings, sum.Request = out.res.Swept, out.res.Warnings, out.req
}

// report says what a run left to say: removed paths, warnings, denials in
// plain words, the escalation file.
func report(out outcome, pf *policyFlags, rf runFlags, stderr *os.File) {
	if !pf.json {
		for _, s := range out.res.Swept {
			fmt.Fprintf(stderr, "wrun: removed %s: the command created it, and it must not exist (see wrun explain)\n", s)
		}
		for _, w := range out.res.Warnings {
			fmt.Fprintln(stderr, "wrun: warning:", w)
		}
		if out.req != nil {
			for _, d := range out.req.Denials {
				// glibc's name-service lookups (id, ls -l, git) probe nscd
				// over a UNIX socket on every run and shrug off the refusal;
				// say so only when the command failed. --json has them all.
				if d.Right == "socket_unix" && out.code == 0 {
					continue
				}
				fmt.Fprintln(stderr, d.Summary)
			}
		}
		if out.rep.Degraded {
			fmt.Fprintln(stderr, "wrun: DEGRADED run: not everything the grant promises was enforced")
		}
	}
	if out.req != nil && rf.escalationFile != "" {
		b, err := out.req.JSON()
		if err == nil {
			err = os.WriteFile(rf.escalationFile, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "wrun: writing the escalation request to %s: %v\n", rf.escalationFile, err)
		}
	}
}

// attempt runs the command once under grant g: a private temp dir, the
// policy, the plan, verify's steps around the child, and the analysis of
// what was denied.
func attempt(g grant.Grant, h policy.Host, o policy.Options, pf *policyFlags, rf runFlags, c sandbox.Command, ceiling escalate.Ceiling) (out outcome) {
	failed := func(code int, err error) outcome { out.code, out.err = code, err; return out }
	tmp, err := os.MkdirTemp("", "wrun-")
	if err != nil {
		return failed(exitWrunFailed, fmt.Errorf("creating the private temp dir: %w", err))
	}
	removeTmp := true
	defer func() {
		if removeTmp {
			os.RemoveAll(tmp)
		}
	}()
	h.TempDir = tmp
	h.Stdio = stdioPaths()
	p, err := policy.Compute(g, h, o)
	if err != nil {
		return failed(exitWrunFailed, err)
	}
	out.p = p
	_, nested := lookupEnv(h.Env, "WRUN_GRANT")
	pl, err := prepare(p, sandbox.Options{BestEffort: pf.bestEffort, KeepBackground: rf.keepBackground, NoObserve: rf.noObserve || nested})
	if err != nil {
		return failed(exitWrunFailed, err)
	}
	out.rep = pl.Report()
	if out.rep.Degraded && !pf.json {
		var gaps []string
		for _, gp := range out.rep.Gaps {
			if gp.Essential {
				gaps = append(gaps, gp.What)
			}
		}
		fmt.Fprintf(c.Stderr, "wrun: DEGRADED (--best-effort): not enforced: %s\n", strings.Join(gaps, "; "))
	}
	sess, err := verify.Prepare(p.Prepare)
	if err != nil {
		sess.Finish(p.Finish, true)
		return failed(exitWrunFailed, fmt.Errorf("preparing the sandbox: %w", err))
	}
	// When the command is git itself, pick its object directory here
	// rather than through the git shim: one program start less.
	c.Argv, p.Env = verify.DirectGit(c.Argv, p.Cwd, p.Env)
	c.ExtraFiles = sess.Files()
	// What the observer does not see (every denial without it; refused
	// reads and executions with it, unless the kernel's audit records are
	// read) can only be inferred from the command's stderr: pass it through
	// a pipe and keep its tail. Not when stderr is a terminal (or another
	// character device) and the observer is on: the child would lose its
	// terminal. Not under --keep-background: a background process holding
	// the pipe would keep wrun from ending.
	var tail *tailWriter
	var teeDone chan struct{}
	if !rf.keepBackground && (!out.rep.Observer || !isCharDevice(c.Stderr)) {
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
	res, err := pl.Run(c)
	if tail != nil {
		c.Stderr.Close()
		<-teeDone
	}
	if err != nil {
		code := exitWrunFailed
		var se *sandbox.StartError
		if errors.As(err, &se) {
			code = se.Code
		}
		sess.Finish(p.Finish, true) // no child started
		return failed(code, err)
	}
	out.started = true
	out.res, out.code = res, res.ExitCode
	if rf.keepBackground {
		removeTmp = false // background processes may still use it
	}
	// Unless asked to keep them, wrun has ended every process the command
	// started: nothing can change what the run wrote any more.
	for _, err := range sess.Finish(p.Finish, !rf.keepBackground) {
		out.res.Warnings = append(out.res.Warnings, "after the run: "+err.Error())
	}
	if len(out.res.Denials) == 0 && tail == nil {
		return out // nothing was denied: no request to build
	}
	prot := escalate.ProtectCarved
	if out.rep.MountProtection {
		prot = escalate.ProtectMounted
	}
	a, err := escalate.New(p, escalate.Facts{
		Home: h.Home, Env: h.Env, Protection: prot, UnixConfined: out.rep.UnixConfined,
		Ceiling: &ceiling, Argv: c.Argv, Exists: func(path string) bool { _, err := os.Lstat(path); return err == nil },
		VerifyScope: verify.Compute(policy.VerifyInput(g, h)).Writable,
	})
	if err != nil {
		out.res.Warnings = append(out.res.Warnings, "analysing denials: "+err.Error())
		return out
	}
	denials := out.res.Denials
	if tail != nil {
		for _, d := range a.Infer(tail.lines()) {
			// The observer sees every call that changes the file system:
			// with it, only what it cannot see is worth inferring.
			if !res.Observed || observerBlind(d) {
				denials = append(denials, d)
			}
		}
	}
	out.req = a.Request(escalate.Run{Time: time.Now(), ExitCode: out.code, Degraded: out.rep.Degraded}, denials)
	return out
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tailWriter) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(t.buf)))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// observerBlind says whether a denial is of a kind the observer does not
// watch: reading, listing, executing.
func observerBlind(d sandbox.Denial) bool {
	acc := escalate.ParseRights(d.Right)
	return acc != 0 && acc&^(policy.ReadFile|policy.ReadDir|policy.Execute) == 0
}

// isCharDevice says whether f is a terminal or another character device
// (/dev/null), where no output is worth keeping.
func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
