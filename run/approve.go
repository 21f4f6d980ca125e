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
	"strings"
	"time"

	"github.com/wrun-dev/wrun/escalate"
)

// ApproverTimeout bounds how long a CommandApprover may think.
const ApproverTimeout = 10 * time.Minute

// Approver answers an escalation request with a decision. An error is a
// denial; its message says why. Whatever it decides, escalate.Approve
// checks the decision against the ceiling before anything is widened.
type Approver func(req *escalate.Request) (escalate.Decision, error)

// Confirmer says whether a command that already ran once (and is not
// marked retry-safe) may run again with the approved widening.
type Confirmer func(argv []string, w *escalate.Widening) bool

// decide asks approve for a decision on req and checks it against the
// ceiling with escalate.Approve. It returns the decision's summary and,
// when approved, the widening.
func decide(req *escalate.Request, approve Approver, ceiling escalate.Ceiling) (*DecisionSummary, *escalate.Widening) {
	ds := &DecisionSummary{}
	if approve == nil {
		ds.Reason = "no approver to ask"
		return ds, nil
	}
	d, err := approve(req)
	if err != nil {
		ds.Reason = err.Error()
		return ds, nil
	}
	w, err := escalate.Approve(req, d, ceiling)
	if err == nil && len(w.Approved) == 0 {
		err = fmt.Errorf("no alternative within the ceiling (%s) would allow what was denied", ceiling)
	}
	if err != nil {
		ds.Reason = err.Error()
		return ds, nil
	}
	ds.Approved, ds.Args, ds.IDs, ds.Scope = true, w.Args(), w.Approved, w.Scope
	for _, r := range w.Routes {
		ds.Routes = append(ds.Routes, r.Description)
	}
	return ds, w
}

// CommandApprover runs command (with sh -c) with the request as JSON on its
// stdin and reads its decision from its stdout (see
// escalate.ParseDecision); the command's stderr goes to stderr. Anything
// but a well-formed decision within ApproverTimeout is a denial.
func CommandApprover(command string, stderr io.Writer) Approver {
	return func(req *escalate.Request) (escalate.Decision, error) {
		b, err := req.JSON()
		if err != nil {
			return escalate.Decision{}, fmt.Errorf("encoding the request for approver %q: %w", command, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), ApproverTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Stdin = bytes.NewReader(b)
		var out bytes.Buffer
		cmd.Stdout = &limitedBuffer{buf: &out, max: 1 << 20}
		cmd.Stderr = stderr
		if err := cmd.Run(); err != nil {
			return escalate.Decision{}, fmt.Errorf("approver %q failed: %w", command, err)
		}
		d, err := escalate.ParseDecision(out.Bytes())
		if err != nil {
			return escalate.Decision{}, fmt.Errorf("approver %q: %w", command, err)
		}
		return d, nil
	}
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
// the narrowest alternative of each denial, a comma-separated list of ids
// approves those, anything else denies. Without a terminal it denies.
func TerminalApprover() Approver {
	return func(req *escalate.Request) (escalate.Decision, error) {
		tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return escalate.Decision{}, errors.New("no --approver and no terminal to ask on")
		}
		defer tty.Close()
		fmt.Fprintln(tty, "wrun: the sandbox denied:")
		for _, d := range req.Denials {
			fmt.Fprintf(tty, "  %s\n", d.Summary)
			for _, a := range d.Alternatives {
				fmt.Fprintf(tty, "    [%s] %s\n", a.ID, a.Description)
			}
		}
		fmt.Fprint(tty, "Approve the narrowest alternative of each (y), the ones listed (ids, comma-separated), or deny (n)? ")
		line, _ := bufio.NewReader(tty).ReadString('\n')
		return terminalDecision(line)
	}
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
// marked retry-safe may run again; without a terminal the answer is no.
func ConfirmOnTerminal(argv []string, w *escalate.Widening) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer tty.Close()
	fmt.Fprintf(tty, "Rerun %q with %s? It already ran once. [y/N] ", strings.Join(argv, " "), strings.Join(w.Args(), " "))
	line, _ := bufio.NewReader(tty).ReadString('\n')
	line = strings.TrimSpace(line)
	return line == "y" || line == "yes"
}
