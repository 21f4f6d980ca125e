package run

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
)

// live is what one attempt tells the events stream and the control
// channel while the command runs: each denial as the supervisor records
// it, each held call's question and its answer.
type live struct {
	ev      *Events
	ctl     *Control
	a       *escalate.Analyzer
	ceiling escalate.Ceiling
	grant   grant.Grant
	runID   string
	deg     bool
	// host and opts are the attempt's, to compute what a rerun with an
	// approved --allow-write would protect beneath it.
	host policy.Host
	opts policy.Options

	mu  sync.Mutex
	ids map[string]string // denial key -> "d1", "d2", ...
	// checks are the checks after the run of the directories approved
	// live (what a rerun's check would make beneath them: a repository
	// the command makes there, a start-up file), by directory. The run's
	// own check, computed before the command started, searches none of
	// them.
	checks map[string]*liveCheck
}

// liveCheck is the check after the run of one directory approved live:
// its journal recorded (and locked) at the approval, before any call
// beneath it is performed, so a wrun killed meanwhile leaves it to the
// next run.
type liveCheck struct {
	sess  *verify.Session
	steps []verify.Step
}

// one is the request for the single denial d, numbered in the order the
// run's denials were first seen.
func (l *live) one(d sandbox.Denial) *escalate.Request {
	l.mu.Lock()
	key := sandbox.DenialKey(d)
	id, ok := l.ids[key]
	if !ok {
		id = "d" + strconv.Itoa(len(l.ids)+1)
		l.ids[key] = id
	}
	l.mu.Unlock()
	return l.a.One(escalate.Run{RunID: l.runID, Time: time.Now(), Degraded: l.deg}, d, id)
}

// denied is sandbox.Options.Denied.
func (l *live) denied(d sandbox.Denial) {
	if l.ev == nil {
		return
	}
	if req := l.one(d); req != nil {
		l.ev.Denial(req.Denials[0])
	}
}

// hold is sandbox.Options.Hold: the control channel's question.
func (l *live) hold(d sandbox.Denial) (string, bool) {
	return l.ctl.ask(d, func() *escalate.Request { return l.one(d) }, func(q *question) {
		l.ev.Held(q.id, q.req.Denials[0])
	})
}

// decide checks an approval of alternative alt for q as a rerun's would
// be checked (escalate.Approve: the ceiling and the guards, whatever the
// harness says), and takes only what can be applied while the command
// runs: one --allow-write holding the denied path.
func (l *live) decide(q *question, d escalate.Decision) (string, string, error) {
	d.Scope = escalate.ScopeRun // nothing held is remembered for a session
	w, err := escalate.Approve(q.req, d, l.ceiling)
	if err != nil {
		return "", "", err
	}
	alt := strings.Join(w.Approved, ",")
	if q.op == access.OpConnect {
		// A connect takes the one socket it was refused.
		if len(w.AllowUnix) != 1 || len(w.AllowWrite)+len(w.AllowRead)+len(w.AllowHost)+len(w.Routes) > 0 || !w.Grant.Equal(l.grant) {
			return "", "", fmt.Errorf("%s cannot be applied while the command runs (only an --allow-unix alternative can, for a connect): rerun with it", alt)
		}
		if w.AllowUnix[0] != q.path {
			return "", "", fmt.Errorf("%s is not the socket refused, %s", w.AllowUnix[0], q.path)
		}
		return q.path, alt, nil
	}
	if len(w.AllowWrite) != 1 || len(w.AllowRead)+len(w.AllowUnix)+len(w.AllowHost)+len(w.Routes) > 0 || !w.Grant.Equal(l.grant) {
		return "", "", fmt.Errorf("%s cannot be applied while the command runs (only an --allow-write alternative can): rerun with it", alt)
	}
	dir := w.AllowWrite[0]
	if !policy.Within(q.path, dir) {
		return "", "", fmt.Errorf("%s does not hold %s", dir, q.path)
	}
	p, why := l.guardedBeneath(dir)
	if why != "" {
		return "", "", fmt.Errorf("%s cannot be applied while the command runs: %s, which a rerun with --allow-write %s keeps protected or hidden (wrun performs live writes without carving): rerun with it", alt, why, dir)
	}
	if err := l.check(dir, p); err != nil {
		return "", "", fmt.Errorf("%s cannot be applied while the command runs: %w", alt, err)
	}
	return dir, alt, nil
}

// check records, for the directory dir approved live, the check a rerun
// whose policy is p would make after the run beneath dir.
func (l *live) check(dir string, p *policy.Policy) error {
	var g *verify.Guard
	for _, st := range p.Finish {
		if st.Kind == verify.StepGuardClose && st.Guard != nil {
			g = st.Guard
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.checks[dir]; ok || g == nil {
		return nil
	}
	if l.checks == nil {
		l.checks = map[string]*liveCheck{}
	}
	gd := beneath(g, dir, fmt.Sprintf("%s-live%d", g.ID, len(l.checks)+1))
	if gd.Empty() {
		return nil
	}
	sess, err := verify.Prepare([]verify.Step{{Kind: verify.StepGuardOpen, Dir: gd.Journal, Guard: gd}})
	if err != nil {
		sess.Finish(nil, true)
		return fmt.Errorf("recording the check after the run beneath %s: %w", dir, err)
	}
	l.checks[dir] = &liveCheck{sess: sess, steps: []verify.Step{{Kind: verify.StepGuardClose, Dir: gd.Journal, Guard: gd}}}
	return nil
}

// beneath is the part of g that checks beneath dir, named id: the
// repositories made there, what must not appear, the listings and the
// links in it.
func beneath(g *verify.Guard, dir, id string) *verify.Guard {
	in := func(p string) bool { return policy.Within(p, dir) }
	out := &verify.Guard{ID: id, Journal: g.Journal, Roots: []string{dir}}
	out.Absent = slices.DeleteFunc(slices.Clone(g.Absent), func(p string) bool { return !in(p) })
	out.Known = slices.DeleteFunc(slices.Clone(g.Known), func(p string) bool { return !in(p) })
	out.Lists = slices.DeleteFunc(slices.Clone(g.Lists), func(l verify.GuardList) bool { return !in(l.Dir) })
	out.Named = slices.DeleteFunc(slices.Clone(g.Named), func(n verify.GuardNamed) bool { return !in(n.Dir) })
	out.Links = slices.DeleteFunc(slices.Clone(g.Links), func(k verify.GuardLink) bool { return !in(k.Path) })
	return out
}

// finish makes the checks after the run of the directories approved
// live (ended: every process of the command has ended), and returns what
// they changed and what went wrong.
func (l *live) finish(ended bool) ([]verify.Finding, []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found []verify.Finding
	var errs []error
	for _, c := range l.checks {
		errs = append(errs, c.sess.Finish(c.steps, ended)...)
		found = append(found, c.sess.Findings()...)
	}
	l.checks = nil
	return found, errs
}

// guardedBeneath says what a rerun with --allow-write dir would protect
// or hide beneath dir (a repository's config and hooks, a start-up file):
// the live widening carves nothing, so such a directory is refused.
// When nothing is, it returns that rerun's policy.
func (l *live) guardedBeneath(dir string) (*policy.Policy, string) {
	o := l.opts
	o.AllowWrite = append(slices.Clone(o.AllowWrite), dir)
	p, err := policy.Compute(l.grant, l.host, o)
	if err != nil {
		return nil, "what it would protect could not be computed (" + err.Error() + ")"
	}
	for _, pr := range p.Protected {
		if policy.Within(pr.Path, dir) {
			return nil, "it holds " + pr.Path
		}
	}
	for _, h := range p.Hidden {
		if policy.Within(h.Path, dir) {
			return nil, "it holds " + h.Path
		}
	}
	return p, ""
}

// answered tells the events stream how q was decided.
func (l *live) answered(q *question) {
	l.ev.Answer(q.id, q.ok, q.alt, q.reason)
}
