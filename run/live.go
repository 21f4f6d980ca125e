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
	if why := l.guardedBeneath(dir); why != "" {
		return "", "", fmt.Errorf("%s cannot be applied while the command runs: %s, which a rerun with --allow-write %s keeps protected or hidden (wrun performs live writes without carving): rerun with it", alt, why, dir)
	}
	return dir, alt, nil
}

// guardedBeneath says what a rerun with --allow-write dir would protect
// or hide beneath dir (a repository's config and hooks, a start-up file):
// the live widening carves nothing, so such a directory is refused.
func (l *live) guardedBeneath(dir string) string {
	o := l.opts
	o.AllowWrite = append(slices.Clone(o.AllowWrite), dir)
	p, err := policy.Compute(l.grant, l.host, o)
	if err != nil {
		return "what it would protect could not be computed (" + err.Error() + ")"
	}
	for _, pr := range p.Protected {
		if policy.Within(pr.Path, dir) {
			return "it holds " + pr.Path
		}
	}
	for _, h := range p.Hidden {
		if policy.Within(h.Path, dir) {
			return "it holds " + h.Path
		}
	}
	return ""
}

// answered tells the events stream how q was decided.
func (l *live) answered(q *question) {
	l.ev.Answer(q.id, q.ok, q.alt, q.reason)
}
