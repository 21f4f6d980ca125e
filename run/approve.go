package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
)

// Approver answers an escalation request with a decision. An error is a
// denial; its message says why. Whatever it decides, escalate.Approve
// checks the decision against the ceiling before anything is widened.
//
// ctx ends when wrun is told to stop waiting (SIGINT, SIGTERM, SIGHUP,
// SIGQUIT while it waits): the approver must then return at once.
type Approver func(ctx context.Context, req *escalate.Request) (escalate.Decision, error)

// Session is the session a run belongs to (policy.EnvSession): what it
// approved with scope "session" before, and where to remember more.
type Session interface {
	Remembered() []escalate.Remembered
	Remember([]escalate.Remembered) error
}

// Confirmer says whether a command that already ran once (and is not
// marked retry-safe) may run again with the approved widening.
type Confirmer func(argv []string, w *escalate.Widening) bool

// decide asks approve for a decision on req and checks it against the
// ceiling with escalate.Approve. It returns the decision's summary and,
// when approved, the widening.
//
// The approver is shown, and escalate.Approve applies, the request with
// its --allow-write paths resolved (resolved): the path a retry's rule
// would really open, not a link the child planted on the way to it. Every
// process of the child has ended by then (unless --keep-background), so
// what is approved is what the retry gets.
//
// With a session, what the session approved before decides without asking
// (escalate.FromRemembered), and an approval of scope "session" is
// remembered for its later runs. Without one, such an approval is
// refused: nothing would remember it.
func decide(ctx context.Context, req *escalate.Request, approve Approver, ceiling escalate.Ceiling, sess Session) (*DecisionSummary, *escalate.Widening) {
	ds := &DecisionSummary{}
	req, _ = resolved(req)
	var d escalate.Decision
	remembered := false
	if sess != nil {
		d, remembered = escalate.FromRemembered(req, sess.Remembered())
	}
	if !remembered {
		if approve == nil {
			ds.Reason = "no approver to ask"
			return ds, nil
		}
		var err error
		if d, err = approve(ctx, req); err != nil {
			ds.Reason = err.Error()
			return ds, nil
		}
		if d.Decision == escalate.DecisionApprove && d.Scope == escalate.ScopeSession && sess == nil {
			ds.Reason = fmt.Sprintf(`the approver approved with scope "session", but this run belongs to no session: set %s in wrun's environment (the harness's session id; see "For harness authors"), or approve with scope "run"`, policy.EnvSession)
			return ds, nil
		}
	}
	w, err := escalate.Approve(req, d, ceiling)
	if err == nil && len(w.Approved) == 0 {
		err = fmt.Errorf("no alternative within the ceiling (%s) would allow what was denied", ceiling)
	}
	if err != nil {
		ds.Reason = err.Error()
		return ds, nil
	}
	ds.Approved, ds.Args, ds.IDs, ds.Scope, ds.SessionRemembered = true, w.Args(), w.Approved, w.Scope, remembered
	if sess != nil && w.Scope == escalate.ScopeSession && !remembered {
		if err := sess.Remember(escalate.ToRemember(req, w)); err != nil {
			ds.Warning = "the session could not remember the approval: " + err.Error()
		}
	}
	for _, r := range w.Routes {
		ds.Routes = append(ds.Routes, r.Description)
	}
	return ds, w
}

// resolved returns a copy of req whose --allow-write alternatives name
// their paths with every symbolic link resolved, and for each path that
// changed, what it was. A path that cannot be resolved is left as it is
// (the retry then refuses it as it refuses any missing --allow-write).
func resolved(req *escalate.Request) (*escalate.Request, map[string]string) {
	was := map[string]string{}
	out := *req
	out.Denials = slices.Clone(req.Denials)
	for i := range out.Denials {
		d := &out.Denials[i]
		d.Alternatives = slices.Clone(d.Alternatives)
		for j := range d.Alternatives {
			a := &d.Alternatives[j]
			if a.Widen.Kind != escalate.KindAllowWrite {
				continue
			}
			c, err := canonical(a.Widen.Path)
			if err != nil || c == a.Widen.Path {
				continue
			}
			was[c] = a.Widen.Path
			a.Widen.Path = c
			a.Args = a.Widen.Args()
		}
	}
	return &out, was
}

// DefaultApproverTimeout is how long a CommandApprover may think unless
// told otherwise (--approver-timeout).
const DefaultApproverTimeout = 5 * time.Minute

// approverGrace is how long, once the approver has exited, wrun waits for
// its stdout to close (a background child may hold it), and once its
// stdout has closed, for it to exit. Then its process group is killed.
const approverGrace = 500 * time.Millisecond

// CommandApprover runs command (with sh -c) with the request as JSON on its
// stdin and reads its decision from its stdout (see
// escalate.ParseDecision); the command's stderr goes to stderr. Anything
// but a well-formed decision within timeout (DefaultApproverTimeout when
// 0) is a denial.
//
// The approver runs in a process group of its own, and wrun never waits
// on anything the approver left behind: once the approver has exited (or
// closed its stdout) wrun waits approverGrace for the other, then kills the
// group. At the timeout, or when ctx ends (a signal to wrun), the group is
// killed at once.
func CommandApprover(command string, timeout time.Duration, stderr io.Writer) Approver {
	if timeout <= 0 {
		timeout = DefaultApproverTimeout
	}
	return func(ctx context.Context, req *escalate.Request) (escalate.Decision, error) {
		b, err := req.JSON()
		if err != nil {
			return escalate.Decision{}, fmt.Errorf("encoding the request for approver %q: %w", command, err)
		}
		out, err := runApprover(ctx, command, b, timeout, stderr)
		if err != nil {
			return escalate.Decision{}, fmt.Errorf("approver %q: %w", command, err)
		}
		d, err := escalate.ParseDecision(out)
		if err != nil {
			return escalate.Decision{}, fmt.Errorf("approver %q: %w", command, err)
		}
		return d, nil
	}
}

// runApprover runs command in its own process group with in on its stdin
// and returns what it wrote on stdout. Every pipe is wrun's own (no
// goroutine of os/exec waits on a pipe a background child may hold).
func runApprover(ctx context.Context, command string, in []byte, timeout time.Duration, stderr io.Writer) ([]byte, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	defer outR.Close()
	errW, ok := stderr.(*os.File)
	if !ok {
		r, w, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			outW.Close()
			return nil, err
		}
		go func() { _, _ = io.Copy(stderr, r); r.Close() }()
		errW = w
		defer w.Close()
	}
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = newProcessGroup()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		return nil, fmt.Errorf("starting: %w", err)
	}
	pgid := cmd.Process.Pid
	killGroup := func() { killProcessGroup(pgid) }
	go func() { _, _ = inW.Write(in); inW.Close() }()

	var buf bytes.Buffer
	lb := &limitedBuffer{buf: &buf, max: 1 << 20}
	readDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(lb, outR)
		readDone <- err
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var grace <-chan time.Time
	var waitErr, readErr error
	gotExit, gotEOF := false, false
	for !gotExit || !gotEOF {
		select {
		case <-ctx.Done():
			killGroup()
			return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		case <-timer.C:
			killGroup()
			return nil, fmt.Errorf("no decision within %s (--approver-timeout); its process group was killed", timeout)
		case waitErr = <-exited:
			gotExit = true
			if grace == nil {
				grace = time.After(approverGrace)
			}
		case readErr = <-readDone:
			gotEOF = true
			if grace == nil {
				grace = time.After(approverGrace)
			}
		case <-grace:
			// The approver exited with its stdout still held by a child
			// of its, or closed stdout and lingers: what it said is said.
			killGroup()
			if !gotEOF {
				outR.Close() // unblocks the copy, whoever still holds the pipe
				readErr = <-readDone
				gotEOF = true
				if readErr != nil && errors.Is(readErr, os.ErrClosed) {
					readErr = nil
				}
			}
			if !gotExit {
				<-exited // killed by wrun after it answered: no error of its
				gotExit = true
				waitErr = nil
			}
		}
	}
	killGroup() // whatever it left behind
	if waitErr != nil {
		return nil, fmt.Errorf("failed: %w", waitErr)
	}
	if readErr != nil {
		return nil, readErr
	}
	return buf.Bytes(), nil
}

// limitedBuffer is a bytes.Buffer that refuses to grow beyond max bytes.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		return 0, errors.New("approver output over 1 MiB")
	}
	return l.buf.Write(p)
}

// TerminalApprover shows the denials and their alternatives on the
// controlling terminal (/dev/tty) and reads the answer there: y approves
// what an approval naming nothing approves (escalate.Narrowest), a comma-separated list of ids
// approves those, anything else denies. Without a terminal it denies.
//
// Everything the child chose (paths, addresses) is shown quoted
// (quote.Word), so nothing in it can move the cursor, clear the screen or
// reorder the line; and the prompt shows the exact wrun flags each
// alternative, and y, would grant, with their paths resolved as decide
// resolves them.
func TerminalApprover() Approver {
	return func(ctx context.Context, req *escalate.Request) (escalate.Decision, error) {
		tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return escalate.Decision{}, errors.New("no --approver and no terminal to ask on")
		}
		_, _ = io.WriteString(tty, approvalPrompt(req))
		answer := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(tty).ReadString('\n')
			answer <- line
		}()
		select {
		case line := <-answer:
			tty.Close()
			return terminalDecision(line)
		case <-ctx.Done():
			// The read goroutine ends with the process.
			return escalate.Decision{}, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
	}
}

// approvalPrompt is what TerminalApprover shows for req: every line
// passes through quote.Line, paths and flags through quote.Word.
func approvalPrompt(req *escalate.Request) string {
	req, was := resolved(req)
	var b strings.Builder
	line := func(format string, a ...any) {
		b.WriteString(quote.Line(fmt.Sprintf(format, a...)) + "\n")
	}
	line("wrun: the sandbox denied:")
	for _, d := range req.Denials {
		line("  %s", strings.TrimPrefix(d.Summary, "wrun: "))
		for _, a := range d.Alternatives {
			switch {
			case a.Kind == escalate.KindBeyondCeiling:
				line("    (not offered) %s", a.Description)
				continue
			case len(a.Args) > 0:
				line("    [%s] grants: %s", a.ID, quote.Words(a.Args))
				if len(a.Args) == 2 && was[a.Args[1]] != "" {
					line("        (the denied path %s is reached through a link; this is where it leads)", quote.Word(was[a.Args[1]]))
				}
			default:
				line("    [%s] grants nothing (%s)", a.ID, a.Kind)
			}
			line("        %s", a.Description)
		}
	}
	c, err := grant.Parse(req.Ceiling)
	if err == nil {
		var w *escalate.Widening
		w, err = escalate.Approve(req, escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun}, escalate.Ceiling{Grant: c, Write: req.CeilingWrite, Source: req.CeilingSource})
		if err == nil && len(w.Approved) > 0 {
			line("y grants %s (%s)", quote.Words(w.Args()), strings.Join(w.Approved, ", "))
		}
	}
	b.WriteString("Approve the narrowest safe widening of each (y; never a shared cache or protected path), the ones listed (ids, comma-separated), or deny (n)? ")
	return b.String()
}

// terminalDecision reads an answer typed on the terminal as a decision.
func terminalDecision(line string) (escalate.Decision, error) {
	line = strings.TrimSpace(line)
	switch {
	case line == "y" || line == "yes":
		return escalate.ParseDecision([]byte(`{"decision":"approve"}`))
	case line == "" || line == "n" || line == "no":
		return escalate.Decision{}, errors.New("denied on the terminal")
	}
	var ids []string
	for _, id := range strings.Split(line, ",") {
		ids = append(ids, fmt.Sprintf("%q", strings.TrimSpace(id)))
	}
	return escalate.ParseDecision([]byte(`{"decision":"approve","alternatives":[` + strings.Join(ids, ",") + `]}`))
}

// ConfirmOnTerminal asks on the controlling terminal whether a command not
// marked retry-safe may run again (or, when a route was approved, whether
// the route's commands may run); without a terminal the answer is no.
func ConfirmOnTerminal(argv []string, w *escalate.Widening) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer tty.Close()
	for _, r := range w.Routes {
		if len(r.Commands) > 0 {
			var lines []string
			for _, c := range r.Commands {
				lines = append(lines, quote.Words(c))
			}
			fmt.Fprintf(tty, "Run route %s instead of %s: %s? The command already ran once. [y/N] ", quote.Word(r.ID), quote.Words(argv), strings.Join(lines, "; then "))
			line, _ := bufio.NewReader(tty).ReadString('\n')
			line = strings.TrimSpace(line)
			return line == "y" || line == "yes"
		}
	}
	fmt.Fprintf(tty, "Rerun %s with %s? It already ran once. [y/N] ", quote.Words(argv), quote.Words(w.Args()))
	line, _ := bufio.NewReader(tty).ReadString('\n')
	line = strings.TrimSpace(line)
	return line == "y" || line == "yes"
}
