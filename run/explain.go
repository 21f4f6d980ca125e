package run

import (
	"errors"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Explanation is what a grant would do here, without running anything.
type Explanation struct {
	// Policy is the effective policy, with notes on any narrowing.
	Policy *policy.Policy
	// Report says how the platform would enforce it; when it cannot
	// plan at all, Summary says why.
	Report sandbox.Report
	// WouldRun is set when a run under the grant would start.
	WouldRun bool
	// Refused is set when the kernel cannot enforce an essential part of
	// the grant (and Spec.BestEffort is not set).
	Refused bool
}

// Explain computes the policy s describes on this host and how the
// platform would enforce it. Nothing is run and nothing is created. The
// error is set when there is no policy to explain (a bad grant, a missing
// path); a platform that cannot enforce it is no error (WouldRun, Refused).
func Explain(s Spec) (Explanation, error) {
	env := s.env()
	g, notes, err := effectiveGrant(s.Grant, env)
	if err != nil {
		return Explanation{}, err
	}
	h, o, err := hostFacts(&s, env)
	if err != nil {
		return Explanation{}, err
	}
	platform := s.platform()
	g, vnote := verifyDefault(s.Grant, g, platform)
	if vnote != "" {
		notes = append(notes, vnote)
	}
	h.Sandbox = platform.Name()
	p, err := policy.Compute(g, h, o)
	if err != nil {
		return Explanation{}, err
	}
	p.Notes = append(p.Notes, notes...)
	e := Explanation{Policy: p}
	pl, perr := platform.Prepare(p, sandbox.Options{BestEffort: s.BestEffort})
	if pl != nil {
		e.Report = pl.Report()
	} else if perr != nil {
		e.Report = sandbox.Report{Platform: platform.Name(), Summary: "not available: " + perr.Error()}
	}
	var ue *sandbox.UnenforceableError
	e.Refused = errors.As(perr, &ue)
	e.WouldRun = perr == nil
	return e, nil
}
