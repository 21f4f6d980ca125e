package receipt

import (
	"encoding/json"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox"
)

// SchemaID names the receipt schema (receipt/schema/receipt.v3.json).
const SchemaID = "https://wrun.dev/schema/receipt.v3.json"

// Receipt is one run as the receipts file records it.
type Receipt struct {
	Schema string `json:"schema"`
	// ID names the run ("20261202T204512Z-3f9a1c0b").
	ID    string    `json:"id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// DurationMS is End - Start in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Argv is the command as given: it may hold secrets.
	Argv    []string `json:"argv"`
	Workdir string   `json:"workdir"`
	PID     int      `json:"pid"`
	// Role, Model and Thinking are as resolved ("" when none).
	Role     string `json:"role,omitempty"`
	Model    string `json:"model,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	// Grant is the grant the command ran under; GrantRequested the spec
	// asked for and GrantSource where that came from.
	Grant          string `json:"grant"`
	GrantRequested string `json:"grant_requested"`
	GrantSource    string `json:"grant_source"`
	// Ceiling and CeilingSource: the ceiling of the run.
	Ceiling       string   `json:"ceiling"`
	CeilingSource string   `json:"ceiling_source"`
	AllowWrite    []string `json:"allow_write,omitempty"`
	AllowRead     []string `json:"allow_read,omitempty"`
	// Notes say what was narrowed.
	Notes []string `json:"notes,omitempty"`
	// Enforcement is what held the grant.
	Enforcement Enforcement `json:"enforcement"`
	// ExitCode is wrun's exit status; Signal the signal that ended the
	// command (0 when none).
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`
	Error    string `json:"error,omitempty"`
	// Denials are every denial of every attempt, with evidence.
	Denials []Denial `json:"denials"`
	// Request is the escalation request the run produced, if any.
	Request *escalate.Request `json:"request,omitempty"`
	// Decision is the approval decision on it; Attempts every run of the
	// command after a retry.
	Decision *run.DecisionSummary `json:"decision,omitempty"`
	Attempts []run.Attempt        `json:"attempts,omitempty"`
}

// Enforcement is the enforcement a run was under.
type Enforcement struct {
	Sandbox     string   `json:"sandbox"`
	Summary     string   `json:"summary,omitempty"`
	LandlockABI int      `json:"landlock_abi,omitempty"`
	Observer    bool     `json:"observer"`
	Degraded    bool     `json:"degraded"`
	Gaps        []string `json:"gaps,omitempty"`
}

// Denial is one denied act.
type Denial struct {
	// Attempt is the index of the attempt (0: the command; 1...: reruns).
	Attempt int `json:"attempt"`
	// Kind: "asked" (in the request), "ignored" (the command succeeded)
	// or "expected" (wrun expects it and never asks).
	Kind     string `json:"kind"`
	Op       string `json:"op"`
	Path     string `json:"path,omitempty"`
	Addr     string `json:"addr,omitempty"`
	Right    string `json:"right"`
	Program  string `json:"program,omitempty"`
	Count    int    `json:"count"`
	Evidence string `json:"evidence"`
	Summary  string `json:"summary"`
}

// NewID returns a fresh receipt id: the run's id (run.NewID), which its
// summary and roster entry carry too.
func NewID(start time.Time) string { return run.NewID(start) }

// Facts are what a receipt says beyond the summary.
type Facts struct {
	ID                  string
	Start, End          time.Time
	Argv                []string
	Workdir             string
	PID                 int
	Role, Model, Think  string
	GrantRequested      string
	GrantSource         string
	Ceiling, CeilingSrc string
	AllowWrite          []string
	AllowRead           []string
	Report              *sandbox.Report
	ExitCode            int
}

// New builds the receipt of a run from its summary.
func New(f Facts, s *run.Summary) Receipt {
	r := Receipt{
		Schema: SchemaID, ID: f.ID, Start: f.Start.UTC(), End: f.End.UTC(), DurationMS: f.End.Sub(f.Start).Milliseconds(),
		Argv: f.Argv, Workdir: f.Workdir, PID: f.PID, Role: f.Role, Model: f.Model, Thinking: f.Think,
		Grant: s.Grant, GrantRequested: f.GrantRequested, GrantSource: f.GrantSource,
		Ceiling: f.Ceiling, CeilingSource: f.CeilingSrc, AllowWrite: f.AllowWrite, AllowRead: f.AllowRead,
		Notes: s.Notes, ExitCode: f.ExitCode, Signal: s.Signal, Error: s.Error,
		Request: s.Request, Decision: s.Decision, Attempts: s.Attempts, Denials: []Denial{},
	}
	if r.Argv == nil {
		r.Argv = []string{}
	}
	if r.Grant == "" {
		r.Grant = f.GrantRequested
	}
	r.Enforcement = Enforcement{Sandbox: s.Sandbox, Degraded: s.Degraded, Gaps: s.Gaps}
	if f.Report != nil {
		r.Enforcement.Summary = f.Report.Summary
		r.Enforcement.LandlockABI = f.Report.ABI
		r.Enforcement.Observer = f.Report.Observer
	}
	add := func(attempt int, sum *run.Summary) {
		if sum.Request != nil {
			for _, d := range sum.Request.Denials {
				r.Denials = append(r.Denials, denial(attempt, "asked", d))
			}
		}
		for _, d := range sum.DenialsIgnored {
			r.Denials = append(r.Denials, denial(attempt, "ignored", d))
		}
		for _, d := range sum.DenialsExpected {
			r.Denials = append(r.Denials, denial(attempt, "expected", d))
		}
	}
	add(0, s)
	if s.Retry != nil {
		if s.Retry.Signal != 0 {
			r.Signal = s.Retry.Signal
		}
		add(len(s.Attempts)-1, s.Retry)
	}
	return r
}

func denial(attempt int, kind string, d escalate.DeniedAct) Denial {
	return Denial{Attempt: attempt, Kind: kind, Op: d.Op, Path: d.Path, Addr: d.Addr, Right: d.Right, Program: d.Program,
		Count: d.Count, Evidence: d.Evidence, Summary: d.Summary}
}

// Line is r as one JSON line, ending in a newline.
func (r *Receipt) Line() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
