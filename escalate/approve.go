package escalate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
)

// Ceiling bounds every approval: no alternative that exceeds it is
// offered, and no widening beyond it is approved. Package run computes it
// (run.Resolve); here it is only checked against.
type Ceiling struct {
	// Grant bounds the fields; Write, when not nil, the directories an
	// approved --allow-write may lie in (grant.Bound).
	Grant grant.Grant
	Write []string
	// Source says where it came from (grant.CeilingDefault, ...), with
	// " narrowed by PLACE" for each narrowing.
	Source string
	// Guarded are this run's paths no approval may open a directory
	// above: its hidden and protected paths (Analyzer.Guarded). System
	// start-up locations are guarded whatever it holds (StartupDirs).
	Guarded []string
}

// Bound is the ceiling's spec part: its fields and paths.
func (c Ceiling) Bound() grant.Bound { return grant.Bound{Grant: c.Grant, Write: c.Write} }

// String renders the ceiling and its source: "verify,network=off (from
// WRUN_CEILING)".
func (c Ceiling) String() string {
	return c.Bound().Compact() + " (from " + c.Source + ")"
}

// CeilingError is a widening the ceiling forbids.
type CeilingError struct {
	Ceiling Ceiling
	Exceeds []string
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("widening refused: %s; the ceiling is %s", strings.Join(e.Exceeds, "; "), e.Ceiling)
}

// The values of Decision.Decision and Decision.Scope.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
	ScopeRun        = "run"
	ScopeSession    = "session"
)

// Decision is an approver's answer to a request.
type Decision struct {
	Decision string `json:"decision"`
	// Alternatives are the approved alternatives' ids; none means
	// Narrowest: the narrowest safe widening of each denial.
	Alternatives []string `json:"alternatives,omitempty"`
	// Scope is ScopeRun (this retry only) or ScopeSession (the caller may
	// remember it for later runs of the session).
	Scope string `json:"scope"`
	// Reason carries the message of a decision that was not understood.
	Reason string `json:"-"`
}

// DeniedError is a request that was not approved: the approver said deny,
// or said something that is not a decision.
type DeniedError struct{ Reason string }

func (e *DeniedError) Error() string { return "escalation denied: " + e.Reason }

// ParseDecision reads an approver's decision: {"decision": "approve" |
// "deny", "alternatives": [ids] (optional), "scope": "run" | "session"
// (optional, default run)}. Anything else is a denial: the error says what
// was wrong, and the returned decision is then a deny carrying that reason.
func ParseDecision(b []byte) (Decision, error) {
	d, err := parseDecision(b)
	if err != nil {
		return Decision{Decision: DecisionDeny, Scope: ScopeRun, Reason: err.Error()}, err
	}
	return d, nil
}

func parseDecision(b []byte) (Decision, error) {
	bad := func(format string, args ...any) (Decision, error) {
		return Decision{}, &DeniedError{Reason: "the approver's answer is not a decision: " + fmt.Sprintf(format, args...) +
			`; want {"decision": "approve"|"deny", "alternatives": [ids], "scope": "run"|"session"}`}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return bad("it is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var raw struct {
		Decision     *string   `json:"decision"`
		Alternatives *[]string `json:"alternatives"`
		Scope        *string   `json:"scope"`
	}
	if err := dec.Decode(&raw); err != nil {
		return bad("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("more follows the JSON object")
	}
	d := Decision{Scope: ScopeRun}
	switch {
	case raw.Decision == nil:
		return bad(`"decision" is missing`)
	case *raw.Decision != DecisionApprove && *raw.Decision != DecisionDeny:
		return bad(`"decision" is %q`, *raw.Decision)
	}
	d.Decision = *raw.Decision
	if raw.Scope != nil {
		if *raw.Scope != ScopeRun && *raw.Scope != ScopeSession {
			return bad(`"scope" is %q`, *raw.Scope)
		}
		d.Scope = *raw.Scope
	}
	if raw.Alternatives != nil {
		for _, id := range *raw.Alternatives {
			if strings.TrimSpace(id) == "" {
				return bad(`"alternatives" holds an empty id`)
			}
			if !slices.Contains(d.Alternatives, id) {
				d.Alternatives = append(d.Alternatives, id)
			}
		}
	}
	return d, nil
}

// Widening is an approved escalation: what the retry runs with.
type Widening struct {
	// Grant is the retry's grant: the request's grant with every approved
	// field change, inside the ceiling.
	Grant grant.Grant
	// AllowWrite are the extra writable paths approved.
	AllowWrite []string
	// AllowRead are the extra readable paths approved.
	AllowRead []string
	// AllowUnix are the UNIX sockets outside the sandbox approved.
	AllowUnix []string
	// AllowHost are the --allow-host entries approved.
	AllowHost []string
	// Approved are the ids of the approved alternatives.
	Approved []string
	// Routes are approved alternatives that widen nothing (routes, asking
	// the parent); the caller shows them, a retry cannot apply them.
	Routes []Alternative
	// Unresolved are the ids of denials that no approved alternative
	// addresses.
	Unresolved []string
	Scope      string
}

// Widens reports whether the widening changes anything a retry could use.
func (w *Widening) Widens(from grant.Grant) bool {
	return len(w.AllowWrite) > 0 || len(w.AllowRead) > 0 || len(w.AllowUnix) > 0 || len(w.AllowHost) > 0 || !w.Grant.Equal(from)
}

// Args are the wrun flags of the retry: --grant SPEC, one --allow-write
// or --allow-read per path, one --allow-unix per socket and one
// --allow-host per host.
func (w *Widening) Args() []string {
	out := []string{"--grant", w.Grant.Spec()}
	for _, p := range w.AllowWrite {
		out = append(out, "--allow-write", p)
	}
	for _, p := range w.AllowRead {
		out = append(out, "--allow-read", p)
	}
	for _, p := range w.AllowUnix {
		out = append(out, "--allow-unix", p)
	}
	for _, h := range w.AllowHost {
		out = append(out, "--allow-host", h)
	}
	return out
}

// Options adds the approved paths to the run's options.
func (w *Widening) Options(o policy.Options) policy.Options {
	o.AllowWrite = appendNew(o.AllowWrite, w.AllowWrite...)
	o.AllowRead = appendNew(o.AllowRead, w.AllowRead...)
	o.AllowUnix = appendNew(o.AllowUnix, w.AllowUnix...)
	o.AllowHost = slices.Clone(o.AllowHost)
	for _, v := range w.AllowHost {
		// Approve parsed each one.
		if h, err := grant.ParseHost(v); err == nil {
			o.AllowHost = appendNew(o.AllowHost, h)
		}
	}
	return o
}

// appendNew returns a copy of to with each of vs it lacks added.
func appendNew[T comparable](to []T, vs ...T) []T {
	out := slices.Clone(to)
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Approve turns an approver's decision on req into a widening, checked
// against the ceiling. It trusts nothing in the request but the ids and
// widenings of its alternatives (Alternative.Widen; a request read from
// JSON has them from its args): every widening is checked again here. A deny
// decision is a *DeniedError; an unknown id or an alternative that is not
// approvable an error naming it; a widening beyond the ceiling a
// *CeilingError naming the ceiling.
func Approve(req *Request, d Decision, ceiling Ceiling) (*Widening, error) {
	if d.Decision != DecisionApprove {
		reason := "the approver said deny"
		if d.Reason != "" {
			reason = d.Reason
		}
		return nil, &DeniedError{Reason: reason}
	}
	cur, err := grant.Parse(req.Grant)
	if err != nil {
		return nil, fmt.Errorf("approving: the request's grant: %w", err)
	}
	w := &Widening{Grant: cur, Scope: d.Scope}
	if w.Scope == "" {
		w.Scope = ScopeRun
	}
	byID := map[string]Alternative{}
	owner := map[string]string{}
	var ids []string
	for _, den := range req.Denials {
		for _, alt := range den.Alternatives {
			byID[alt.ID], owner[alt.ID] = alt, den.ID
			ids = append(ids, alt.ID)
		}
	}
	chosen := d.Alternatives
	if len(chosen) == 0 {
		chosen = Narrowest(req, ceiling)
	}
	resolved := map[string]bool{}
	var exceeded []string
	for _, id := range chosen {
		alt, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("approving: no alternative %q in the request; it offers %s", id, strings.Join(ids, ", "))
		}
		switch alt.Kind {
		case KindBeyondCeiling:
			return nil, &CeilingError{Ceiling: ceiling, Exceeds: append([]string{id + " is beyond the ceiling"}, alt.Exceeds...)}
		case KindRoute, KindAskParent:
			w.Routes = append(w.Routes, alt)
		case KindAllowWrite, KindAllowRead, KindAllowUnix, KindAllowHost, KindGrant:
			wd, err := checked(id, alt)
			if err != nil {
				return nil, err
			}
			if wd.Kind == KindAllowWrite {
				if why := guardRefusal(wd.Path, ceiling.Guarded); why != "" {
					return nil, fmt.Errorf("approving %s: no approval opens it: %s", id, why)
				}
				if !ceiling.Bound().WriteAllowed(wd.Path) {
					exceeded = append(exceeded, outsideCeilingPaths(wd.Path, ceiling))
				}
			}
			if wd.Kind != KindGrant {
				as := wd.needs(cur, req.Workdir)
				if ex := widening(cur, as, ceiling.Grant); len(ex) > 0 {
					flag := quote.Words(wd.Args())
					if wd.Kind == KindAllowHost {
						flag = "--allow-host " + wd.Host.String()
					}
					exceeded = append(exceeded, fmt.Sprintf("%s counts as %s: %s", flag, as.Compact(), strings.Join(ex, "; ")))
				}
			}
			w.add(wd)
			resolved[owner[id]] = true
		default:
			return nil, fmt.Errorf("approving %s: kind %q cannot be approved", id, alt.Kind)
		}
		w.Approved = append(w.Approved, id)
	}
	exceeded = append(exceeded, widening(cur, w.Grant, ceiling.Grant)...)
	if len(exceeded) > 0 {
		return nil, &CeilingError{Ceiling: ceiling, Exceeds: exceeded}
	}
	// Drop paths beneath another approved path: the wider one covers them.
	w.AllowWrite = slices.DeleteFunc(slices.Clone(w.AllowWrite), func(p string) bool {
		for _, q := range w.AllowWrite {
			if q != p && policy.Within(p, q) {
				return true
			}
		}
		return false
	})
	for _, den := range req.Denials {
		if !resolved[den.ID] {
			w.Unresolved = append(w.Unresolved, den.ID)
		}
	}
	return w, nil
}

// add records one approved widening.
func (w *Widening) add(wd Widen) {
	switch wd.Kind {
	case KindAllowWrite:
		w.AllowWrite = appendNew(w.AllowWrite, wd.Path)
	case KindAllowRead:
		w.AllowRead = appendNew(w.AllowRead, wd.Path)
	case KindAllowUnix:
		w.AllowUnix = appendNew(w.AllowUnix, wd.Path)
	case KindAllowHost:
		w.AllowHost = appendNew(w.AllowHost, wd.Host.String())
	case KindGrant:
		w.Grant = widen(w.Grant, wd.Grant)
	}
}

// widen is the narrowest grant that is at least as wide as a and b in
// every field; the tool list stays a's.
func widen(a, b grant.Grant) grant.Grant {
	out := a.Union(b)
	out.Tools = a.Tools
	return out
}

// Narrowest is what an approval naming no alternative approves: for each
// denial, its narrowest widening (--allow-write or --grant) that is within
// the ceiling and is not sensitive (see Sensitive). A denial whose every
// widening is sensitive gets none: approving it takes naming the id. Routes
// and asking the parent widen nothing and are approved only by id.
func Narrowest(req *Request, ceiling Ceiling) []string {
	cur, err := grant.Parse(req.Grant)
	if err != nil {
		return nil
	}
	var out []string
	for _, den := range req.Denials {
		for _, alt := range den.Alternatives {
			if alt.Kind == alt.Widen.Kind && alt.Kind != "" && !Sensitive(req, den, alt) && withinCeiling(req, cur, alt, ceiling) {
				out = append(out, alt.ID)
				break
			}
		}
	}
	return out
}

// withinCeiling reports whether the widening alt is inside the ceiling, as
// Approve checks it.
func withinCeiling(req *Request, cur grant.Grant, alt Alternative, ceiling Ceiling) bool {
	wd := alt.Widen
	switch wd.Kind {
	case "":
		return false
	case KindAllowRead:
		return filepath.IsAbs(wd.Path)
	case KindAllowWrite:
		p := filepath.Clean(wd.Path)
		if guardRefusal(p, ceiling.Guarded) != "" || !ceiling.Bound().WriteAllowed(p) {
			return false
		}
	case KindGrant:
		return len(widening(cur, widen(cur, wd.Grant), ceiling.Grant)) == 0
	}
	return len(widening(cur, wd.needs(cur, req.Workdir), ceiling.Grant)) == 0
}

// sensitiveRules are the rules whose denials guard what a later run
// outside the sandbox trusts: a tool cache shared between runs, a
// protected path (a repository's config and hooks, start-up files), a
// hidden one.
var sensitiveRules = []string{"tool-cache", "protected", "protected-ancestor", "hidden", "hidden-ancestor"}

// Sensitive reports whether alt, offered for den in req, would let the
// sandbox write what a later run trusts: a shared tool cache, a start-up
// file or another protected path. It judges from the request alone:
//   - any widening of a denial withheld by one of those (tool-cache,
//     protected, hidden and their -ancestor forms);
//   - a --grant that raises shell to full, which makes the user's tool
//     caches writable;
//   - an --allow-write whose path contains, or lies in, a path any denial
//     of req names as such a guard (withheld_by.path);
//   - every --allow-read: what a file outside the child's reads holds
//     (a key, a token, another project) cannot be told from its path;
//   - every --allow-unix: what a socket outside the sandbox gives (a
//     docker socket is root, an ssh agent the user's keys) cannot be told
//     from its path, so approving one takes naming it; and every
//     --allow-host, for the same reason (a loopback port may be a
//     database, docker's API or a cloud metadata proxy).
func Sensitive(req *Request, den DeniedAct, alt Alternative) bool {
	if slices.Contains(sensitiveRules, den.WithheldBy.Rule) {
		return true
	}
	wd := alt.Widen
	if wd.Kind != alt.Kind && alt.Kind != KindBeyondCeiling && alt.Kind != KindRoute && alt.Kind != KindAskParent {
		return true // a widening that cannot be told apart: as if it were
	}
	switch wd.Kind {
	case KindAllowRead, KindAllowUnix, KindAllowHost:
		return true
	case KindGrant:
		cur, err := grant.Parse(req.Grant)
		if err != nil || wd.Grant.Shell == grant.ShellFull && cur.Shell != grant.ShellFull {
			return true
		}
	case KindAllowWrite:
		p := filepath.Clean(wd.Path)
		for _, o := range req.Denials {
			gp := o.WithheldBy.Path
			if gp != "" && slices.Contains(sensitiveRules, o.WithheldBy.Rule) && (policy.Within(gp, p) || policy.Within(p, gp)) {
				return true
			}
		}
	}
	return false
}
