package main

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

// approverTimeout bounds how long an approver may think.
const approverTimeout = 10 * time.Minute

// decide asks for a decision on req: from the approver command if there is
// one, else on the terminal if there is one, else it is a denial. The
// decision is then checked against the ceiling by escalate.Approve.
func decide(req *escalate.Request, rf runFlags, ceiling escalate.Ceiling, stderr io.Writer) (*decisionSummary, *escalate.Widening) {
	var d escalate.Decision
	var err error
	switch {
	case rf.approver != "":
		d, err = askApprover(rf.approver, req, stderr)
	default:
		d, err = askTerminal(req, stderr)
	}
	ds := &decisionSummary{}
	if err != nil {
		ds.Reason = err.Error()
		fmt.Fprintf(stderr, "wrun: escalation not approved: %v\n", err)
		return ds, nil
	}
	w, err := escalate.Approve(req, d, ceiling)
	if err == nil && len(w.Approved) == 0 {
		err = fmt.Errorf("no alternative within the ceiling (%s) would allow what was denied", ceiling)
	}
	if err != nil {
		ds.Reason = err.Error()
		fmt.Fprintf(stderr, "wrun: escalation not approved: %v\n", err)
		return ds, nil
	}
	ds.Approved, ds.Args, ds.IDs, ds.Scope = true, w.Args(), w.Approved, w.Scope
	for _, r := range w.Routes {
		ds.Routes = append(ds.Routes, r.Description)
	}
	fmt.Fprintf(stderr, "wrun: approved (%s): rerun with wrun %s -- %s\n", strings.Join(w.Approved, ", "), strings.Join(w.Args(), " "), strings.Join(req.Command, " "))
	for _, r := range ds.Routes {
		fmt.Fprintf(stderr, "wrun: approved route: %s\n", r)
	}
	return ds, w
}

// askApprover runs the approver with the request on stdin and reads its
// decision from stdout. Anything but a well-formed decision is a denial.
func askApprover(command string, req *escalate.Request, stderr io.Writer) (escalate.Decision, error) {
	b, err := req.JSON()
	if err != nil {
		return escalate.Decision{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), approverTimeout)
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

// askTerminal shows the alternatives on the controlling terminal and reads
// the answer there.
func askTerminal(req *escalate.Request, stderr io.Writer) (escalate.Decision, error) {
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

// confirmRerun asks on the terminal whether a command not marked
// --retry-safe may run again; without a terminal the answer is no.
func confirmRerun(argv []string, w *escalate.Widening, stderr io.Writer) bool {
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
