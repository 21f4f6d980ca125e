package escalate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// SchemaID identifies the request format; it is the $id of
// schema/request.v3.json. Version changes with any change a reader must
// know of.
const (
	SchemaID      = "https://wrun.dev/schema/escalation-request.v3.json"
	SchemaVersion = 3
)

//go:embed schema/request.v3.json
var requestSchemaJSON []byte

// RequestSchema returns the published JSON Schema of the request (a copy of
// schema/request.v3.json). wrun does not validate its own requests at run
// time; its tests check every request they build against this schema.
func RequestSchema() []byte { return bytes.Clone(requestSchemaJSON) }

// The values of DeniedAct.Evidence.
const (
	// EvidenceExact: the call itself was seen, by the observer or in the
	// kernel's audit record, or wrun's own git shim or remote helper
	// refused it and reported so.
	EvidenceExact = "exact"
	// EvidenceInferred: read from the child's output.
	EvidenceInferred = "inferred"
)

// Request is an escalation request: everything the sandbox refused in one
// run, each with what withheld it and the alternatives. It is what
// --escalation-file writes and --json prints.
type Request struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	// RunID names the run: its summary's run_id, its receipt's and its
	// roster entry's id.
	RunID   string   `json:"run_id"`
	Time    string   `json:"time"`
	Command []string `json:"command"`
	Workdir string   `json:"workdir"`
	// Grant is the run's grant in canonical form; GrantName the preset it
	// equals or "custom".
	Grant     string `json:"grant"`
	GrantName string `json:"grant_name"`
	// AllowWrite and AllowRead are the run's extra paths.
	AllowWrite []string `json:"allow_write"`
	AllowRead  []string `json:"allow_read"`
	// Ceiling bounds every alternative: its fields here, and in
	// CeilingWrite the directories an approved --allow-write may lie in
	// (["/"] when it bounds no path); grant.Bound is its syntax.
	// CeilingSource says where it came from (grant.CeilingDefault, ...).
	Ceiling       string   `json:"ceiling"`
	CeilingWrite  []string `json:"ceiling_write"`
	CeilingSource string   `json:"ceiling_source"`
	// Nested is set when this wrun runs inside another.
	Nested   bool `json:"nested"`
	Degraded bool `json:"degraded"`
	ExitCode int  `json:"exit_code"`
	// Denials are deduplicated: one entry per act, with a count.
	Denials []DeniedAct `json:"denials"`
}

// DeniedAct is one denial in a request.
type DeniedAct struct {
	// ID is "d1", "d2", ... in the order first seen; alternative ids start
	// with it.
	ID       string `json:"id"`
	Op       string `json:"op"`
	Path     string `json:"path,omitempty"`
	Addr     string `json:"addr,omitempty"`
	Right    string `json:"right"`
	Program  string `json:"program,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Time     string `json:"time,omitempty"`
	Count    int    `json:"count"`
	Evidence string `json:"evidence"`
	// Confirmed: a Landlock audit record of the kernel shows the denial.
	Confirmed bool `json:"confirmed,omitempty"`
	// WithheldBy says which part of the grant refused it.
	WithheldBy WithheldBy `json:"withheld_by"`
	// Summary is the plain-words line for stderr.
	Summary      string        `json:"summary"`
	Alternatives []Alternative `json:"alternatives"`
}

// Run is what a request says about the run besides its denials.
type Run struct {
	// RunID names the run (run.NewID).
	RunID string
	// Time is when the run ended.
	Time     time.Time
	ExitCode int
	Degraded bool
	// Reported are the refusals the child's output reported (Infer),
	// whether or not they are among the run's denials: what the command
	// itself said went wrong (see Sort).
	Reported []sandbox.Denial
}

// Dedup merges repeated denials: the same operation on the same path or
// address for the same right is one entry, counted, with the earliest
// time. An inferred denial whose path or address and right match another
// entry is folded into it whatever operation the heuristics guessed; when
// that entry is exact, the inferred sighting is the same act seen twice and
// does not add to its count, and an exact sighting takes over an inferred
// entry. The order is that of first sighting.
func Dedup(ds []sandbox.Denial) []sandbox.Denial {
	type key struct{ op, path, addr, right string }
	var out []sandbox.Denial
	full := map[key]int{}
	loose := map[key][]int{} // by path or address and right, any op
	for _, d := range ds {
		d.Path = cleanPath(d.Path)
		n := max(d.Count, 1)
		k := key{d.Op, d.Path, d.Addr, d.Right}
		lk := key{"", d.Path, d.Addr, d.Right}
		i, ok := full[k]
		if !ok {
			for _, j := range loose[lk] {
				if !d.Exact || !out[j].Exact {
					i, ok = j, true
					break
				}
			}
		}
		if !ok {
			d.Count = n
			full[k] = len(out)
			loose[lk] = append(loose[lk], len(out))
			out = append(out, d)
			continue
		}
		e := &out[i]
		switch {
		case d.Exact && !e.Exact:
			// The observer saw what the output only suggested.
			*e = d
			e.Count = n
			full[k] = i
		case !d.Exact && e.Exact:
			// The same act, seen again in the output.
		default:
			e.Count += n
			e.Audited = e.Audited || d.Audited
			if d.Time != "" && (e.Time == "" || d.Time < e.Time) {
				e.Time, e.PID, e.Program = d.Time, d.PID, d.Program
			}
		}
	}
	return out
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Clean(p)
}

// Request builds the escalation request for a run's denials (observed and
// inferred alike), or nil when nothing was denied: a request is written
// only then. It asks for every denial; Sort asks only for what the run may
// have needed.
func (a *Analyzer) Request(run Run, denials []sandbox.Denial) *Request {
	return a.request(run, Dedup(denials))
}

// request builds the request for deduplicated denials ds.
func (a *Analyzer) request(run Run, ds []sandbox.Denial) *Request {
	if len(ds) == 0 {
		return nil
	}
	var allowRead, allowWrite []string
	for _, r := range a.p.Rules {
		switch r.Source {
		case "--allow-write":
			allowWrite = append(allowWrite, r.Path)
		case "--allow-read":
			allowRead = append(allowRead, r.Path)
		}
	}
	req := &Request{
		Schema:        SchemaID,
		Version:       SchemaVersion,
		RunID:         run.RunID,
		Time:          run.Time.UTC().Format(time.RFC3339),
		Command:       slices.Clone(a.argv()),
		Workdir:       a.p.Workdir,
		Grant:         a.p.Grant.String(),
		GrantName:     policy.GrantName(a.p.Grant),
		AllowWrite:    nonNil(allowWrite),
		AllowRead:     nonNil(allowRead),
		Ceiling:       a.ceiling.Grant.String(),
		CeilingWrite:  a.ceiling.Write,
		CeilingSource: a.ceiling.Source,
		Nested:        a.nested,
		Degraded:      run.Degraded,
		ExitCode:      run.ExitCode,
	}
	if req.Command == nil {
		req.Command = []string{}
	}
	if req.CeilingWrite == nil {
		req.CeilingWrite = []string{"/"}
	}
	req.Denials = a.acts(ds, "d")
	return req
}

// acts describes deduplicated denials ds, with ids prefix+"1", prefix+"2",
// ... in their order; nil when there are none.
func (a *Analyzer) acts(ds []sandbox.Denial, prefix string) []DeniedAct {
	var out []DeniedAct
	for i, d := range ds {
		f := a.find(d)
		id := fmt.Sprintf("%s%d", prefix, i+1)
		alts := a.alternatives(f)
		for j := range alts {
			alts[j].ID = id + "." + alts[j].ID
		}
		ev := EvidenceInferred
		if d.Exact {
			ev = EvidenceExact
		}
		act := DeniedAct{
			ID: id, Op: d.Op, Path: d.Path, Addr: d.Addr, Right: d.Right,
			Program: d.Program, PID: d.PID, Time: d.Time, Count: d.Count,
			Evidence: ev, Confirmed: d.Audited, WithheldBy: f.by, Alternatives: alts,
		}
		act.Summary = summary(act, f.short)
		out = append(out, act)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// JSON renders the request as indented JSON, without escaping <, > and &
// (so commands read as written), ending in a newline. It holds the
// child's paths as they are, but no byte a terminal acts on: DEL, C1
// controls and formatting characters are \u escapes (quote.JSON).
func (r *Request) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding the escalation request: %w", err)
	}
	return quote.JSON(buf.Bytes()), nil
}

// One builds the request for the single denial d, its id id ("d3"; its
// alternatives' ids start with it): what a denial event carries and what
// an approver asked while the call waits (run's --on-denial=hold) is
// asked about. Nil when id is empty.
func (a *Analyzer) One(run Run, d sandbox.Denial, id string) *Request {
	if id == "" {
		return nil
	}
	req := a.request(run, []sandbox.Denial{d})
	if req == nil {
		return nil
	}
	act := &req.Denials[0]
	old := act.ID
	act.ID = id
	for i := range act.Alternatives {
		act.Alternatives[i].ID = id + strings.TrimPrefix(act.Alternatives[i].ID, old)
	}
	return req
}
