package escalate

import "slices"

// Remembered is one alternative a session approved (scope "session"),
// as later runs of the session recognise it: the same workspace and the
// same widening (kind, flags, commands), whatever its id in a request.
type Remembered struct {
	Workdir  string     `json:"workdir"`
	Kind     string     `json:"kind"`
	Args     []string   `json:"args"`
	Commands [][]string `json:"commands,omitempty"`
}

// Widen is the widening r remembers, read back from its args; a route or
// asking the parent (no args) is the zero Widen.
func (r Remembered) Widen() (Widen, error) {
	if len(r.Args) == 0 {
		return Widen{}, nil
	}
	return parseWiden(r.Args)
}

func (r Remembered) matches(req *Request, alt Alternative) bool {
	return r.Workdir == req.Workdir && r.Kind == alt.Kind && slices.Equal(r.Args, alt.Widen.Args()) &&
		slices.EqualFunc(r.Commands, alt.Commands, func(a, b []string) bool { return slices.Equal(a, b) })
}

// FromRemembered is the decision a session's remembered approvals make on
// req without asking anyone: when every denial of req has an alternative
// the session approved before, an approval of those (scope "session").
// Approve still checks it against this run's ceiling and guards. ok is
// false when some denial has none: the approver is asked then.
func FromRemembered(req *Request, rem []Remembered) (d Decision, ok bool) {
	if len(rem) == 0 || len(req.Denials) == 0 {
		return Decision{}, false
	}
	d = Decision{Decision: DecisionApprove, Scope: ScopeSession}
	for _, den := range req.Denials {
		found := false
		for _, alt := range den.Alternatives {
			if alt.Kind == KindBeyondCeiling {
				continue
			}
			if slices.ContainsFunc(rem, func(r Remembered) bool { return r.matches(req, alt) }) {
				d.Alternatives = append(d.Alternatives, alt.ID)
				found = true
				break
			}
		}
		if !found {
			return Decision{}, false
		}
	}
	return d, true
}

// ToRemember is what a session remembers of an approval w of req: each
// approved alternative.
func ToRemember(req *Request, w *Widening) []Remembered {
	var out []Remembered
	for _, den := range req.Denials {
		for _, alt := range den.Alternatives {
			if slices.Contains(w.Approved, alt.ID) {
				out = append(out, Remembered{Workdir: req.Workdir, Kind: alt.Kind, Args: alt.Widen.Args(), Commands: alt.Commands})
			}
		}
	}
	return out
}
