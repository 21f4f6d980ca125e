//go:build linux

package linux

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// Held calls (sandbox.Options.Hold): approval while the command runs.
//
// A call the supervisor lets continue, and that the command's own rules
// will refuse (predict.go), is one the kernel has not decided yet: where
// wrun could perform it (a write or create beyond the write scope), it is
// held instead, and Hold asked. Landlock cannot widen a running process,
// so an approved directory is never given to the command: wrun performs
// the call on a performer of its own (performer.go: no capabilities, the
// command's uid, gids and umask) whose Landlock domain is the command's
// rules plus the approved directory, and so every later call beneath it
// for the rest of the run. Calls the kernel refuses without a
// notification (reads, executions) cannot be held.

// maxHeld bounds the calls waiting for Hold at once; beyond it a call
// fails as the kernel would have failed it, and is recorded as a denial.
const maxHeld = 16

// maxWidenings bounds the directories approved during one run.
const maxWidenings = 32

// widenings are the directories approved while the command runs, and the
// performers of the calls beneath them.
type widenings struct {
	mu    sync.Mutex
	dirs  []string
	pools []*performers // one per approval, the last the widest
	held  atomic.Int32
}

// covering returns the performers of the widest domain when every
// path of missing lies beneath an approved directory, else nil.
func (w *widenings) covering(missing []access.Missing) *performers {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pools) == 0 {
		return nil
	}
	for _, m := range missing {
		if !w.covers(m.Path) {
			return nil
		}
	}
	return w.pools[len(w.pools)-1]
}

// covers reports whether path lies beneath an approved directory.
func (w *widenings) covers(path string) bool {
	if path == "" {
		return false
	}
	for _, d := range w.dirs {
		if policy.Within(path, d) {
			return true
		}
	}
	return false
}

// close ends every pool.
func (w *widenings) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pools {
		p.close()
	}
}

// widen adds dir to the approved directories and returns the performers
// whose domain holds them all. Older pools stay until the run ends (a
// call may be on one).
func (s *supervisor) widen(dir string) (*performers, error) {
	w := &s.wide
	w.mu.Lock()
	defer w.mu.Unlock()
	if slices.Contains(w.dirs, dir) {
		return w.pools[len(w.pools)-1], nil
	}
	if len(w.dirs) >= maxWidenings {
		return nil, fmt.Errorf("more than %d directories approved in one run", maxWidenings)
	}
	dirs := append(slices.Clone(w.dirs), dir)
	rules := slices.Clone(s.pl.Rules)
	for _, d := range dirs {
		rules = append(rules, policy.Rule{Path: d, Access: policy.ReadWrite, Source: "--allow-write"})
	}
	attr := rulesetAttr{handledFS: s.pl.attr.handledFS}
	p := newPerformers(func() (*ruleset, error) {
		rs, err := buildRuleset(attr, fsRules(rules))
		if err != nil {
			return nil, fmt.Errorf("the rules of an approved widening: %w", err)
		}
		return rs, nil
	}, s.fs)
	w.dirs, w.pools = dirs, append(w.pools, p)
	return p, nil
}

// holding reports whether calls are held for approval.
func (s *supervisor) holding() bool {
	return s.pl.Options.Hold != nil && !s.pl.Options.NoObserve && s.pl.ABI > 0
}

// holdable says whether op is a call wrun can perform for the command
// beneath an approved directory: an open that writes, a create, a
// removal, a rename, a link, a truncate.
func holdable(op access.Op) bool {
	switch op.Kind {
	case access.OpCreate, access.OpMkdir, access.OpMknod, access.OpSymlink, access.OpUnlink, access.OpRmdir,
		access.OpRename, access.OpLink, access.OpTrunc:
		return true
	case access.OpOpen:
		return !op.Dir && op.Rights&(policy.WriteFile|policy.Truncate) != 0
	}
	return false
}

// holdOrPredict is continueOrPredict for a call wrun can perform (do
// performs it on the performers it is given and answers it): one the
// command's rules will refuse is performed when every path they refuse
// lies beneath a directory approved earlier, else held and Hold asked
// about each such path; approved, it is performed, else it fails as the
// kernel would have failed it (EACCES; EXDEV for a move that only lacks
// refer) and is recorded.
func (s *supervisor) holdOrPredict(c *notice, op access.Op, do func(p *performers)) {
	if !s.holding() || !holdable(op) {
		s.continueOrPredict(c, op, op.Kind)
		return
	}
	missing := s.kernel.Check(op)
	if len(missing) == 0 {
		c.continueCall()
		return
	}
	errno := unix.EACCES
	if op.Kind == access.OpRename || op.Kind == access.OpLink {
		errno = moveErrno(missing)
	}
	if p := s.wide.covering(missing); p != nil {
		c.performed = true
		do(p)
		return
	}
	c.program()
	if s.wide.held.Add(1) > maxHeld {
		s.wide.held.Add(-1)
		s.refuse(c, errno, op.Kind, missing)
		return
	}
	defer s.wide.held.Add(-1)
	for _, m := range missing {
		s.wide.mu.Lock()
		covered := s.wide.covers(m.Path)
		s.wide.mu.Unlock()
		if covered {
			continue
		}
		dir, ok := s.pl.Options.Hold(sandbox.Denial{
			Time: time.Now().UTC().Format(time.RFC3339Nano), PID: c.tgid, Program: c.program(),
			Op: op.Kind, Path: m.Path, Addr: m.Addr, Right: m.Right, Exact: true, Count: 1,
		})
		if !ok || !policy.Within(m.Path, dir) {
			s.refuse(c, errno, op.Kind, missing)
			return
		}
		if _, err := s.widen(dir); err != nil {
			s.refuse(c, errno, op.Kind, missing)
			return
		}
	}
	p := s.wide.covering(missing)
	if p == nil || !c.valid() {
		s.refuse(c, errno, op.Kind, missing)
		return
	}
	c.performed = true
	do(p)
}

// performOn runs f on the performers p: false, the call answered EPERM
// and counted, when none could be made.
func (s *supervisor) performOn(c *notice, p *performers, f func()) bool {
	if err := p.do(f); err != nil {
		s.mu.Lock()
		s.failed++
		s.mu.Unlock()
		c.answer(-1, unix.EPERM)
		return false
	}
	return true
}

// holdSocket holds a connect to the pathname socket path outside the
// sandbox (one the mediation performs: below Landlock ABI 9) and asks
// Hold; an approved --allow-unix of that very socket is added to the
// allowed ones for the rest of the run.
func (s *supervisor) holdSocket(c *notice, path string) bool {
	if !s.holding() {
		return false
	}
	c.program()
	if s.wide.held.Add(1) > maxHeld {
		s.wide.held.Add(-1)
		return false
	}
	got, ok := s.pl.Options.Hold(sandbox.Denial{
		Time: time.Now().UTC().Format(time.RFC3339Nano), PID: c.tgid, Program: c.program(),
		Op: access.OpConnect, Path: path, Addr: "unix:" + path, Right: access.RightConnectUnix, Exact: true, Count: 1,
	})
	s.wide.held.Add(-1)
	if !ok || got != path || !c.valid() {
		return false
	}
	s.socks.allow(path)
	return true
}
