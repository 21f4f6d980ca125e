package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/wrun-dev/wrun/config"
	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/receipt"
	"github.com/wrun-dev/wrun/roster"
	"github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox"
	"time"
)

// recorder registers a run in the roster and writes its receipt.
type recorder struct {
	// off: the run is not recorded (nested, or no place for records).
	off                   bool
	note                  func(string)
	st                    *settings
	rf                    runFlags
	argv                  []string
	workdir               string
	start                 time.Time
	id                    string
	allowWrite, allowRead []string
	grant                 string // effective, canonical, once resolved
	ceiling, ceilingSrc   string // the ceiling in force, once resolved
}

// register resolves the run's grant as run.Run will, and registers the
// run in the roster, refusing it when a live run holds an overlapping
// directory for writing. A nested wrun cannot reach the roster (it is
// hidden from every sandbox): its enclosing run holds the scope.
func (r *recorder) register(grantSpec, ceilingSpec, ceilingSource string, spec run.Spec) (*roster.Held, error) {
	b, err := run.Resolve(grantSpec, ceilingSpec, ceilingSource, os.Environ())
	if err != nil {
		return nil, err // run.Run says so again, in its own words
	}
	r.grant = b.Grant.String()
	r.ceiling, r.ceilingSrc = b.Ceiling.Bound().String(), b.Ceiling.Source
	if r.off {
		return nil, nil
	}
	scopes := writeScopes(b.Grant, r.workdir, spec.AllowWrite)
	if r.st.req.ConductorDir != "" {
		// The conductor's own directory is private to conductors.
		scopes = slices.DeleteFunc(scopes, func(s roster.Scope) bool {
			return s.What == "--allow-write" && s.Path == canonicalOr(r.st.req.ConductorDir)
		})
	}
	e := roster.Entry{ID: r.id, PID: os.Getpid(), Start: r.start, Argv: r.argv, Role: r.st.req.Role, Model: r.st.req.Model.V,
		Thinking: r.st.req.Thinking.V, Grant: r.grant, Workdir: canonicalOr(r.workdir), Writes: scopes, Share: r.rf.shareWorkdir}
	h, err := roster.Register(r.st.paths.Roster, e)
	var ce *roster.ConflictError
	switch {
	case errors.As(err, &ce):
		return nil, fmt.Errorf("refused: %w", err)
	case err != nil:
		call(r.note, "this run is not in the roster, and no write-scope guard holds for it: "+err.Error())
	}
	return h, nil
}

func canonicalOr(p string) string {
	if c, err := canonicalPath(p); err == nil {
		return c
	}
	return p
}

// write appends the run's receipt, unless --no-receipt or nested (the
// receipts are hidden from the sandbox the enclosing run made; its own
// receipt records the whole command, nested runs included). A receipt
// that cannot be written is a warning: the run is over.
func (r *recorder) write(stderr io.Writer, sum *run.Summary, rep *sandbox.Report) {
	if r.rf.noReceipt || r.off || r.st == nil {
		return
	}
	path := r.st.paths.Receipts
	if r.rf.receiptFile != "" {
		path = r.rf.receiptFile
	}
	if r.id == "" {
		r.id = run.NewID(r.start)
	}
	ceiling, ceilingSrc := r.ceiling, r.ceilingSrc
	if ceilingSrc == "" {
		ceiling, ceilingSrc = r.st.req.Ceiling.V, r.st.req.Ceiling.Source
	}
	rec := receipt.New(receipt.Facts{
		ID: r.id, Start: r.start, End: time.Now(), Argv: r.argv, Workdir: canonicalOr(r.workdir), PID: os.Getpid(),
		Role: r.st.req.Role, Model: r.st.req.Model.V, Think: r.st.req.Thinking.V,
		GrantRequested: r.st.req.Grant.V, GrantSource: r.st.req.Grant.Source,
		Ceiling: ceiling, CeilingSrc: ceilingSrc, AllowWrite: r.allowWrite, AllowRead: r.allowRead,
		Report: rep, ExitCode: sum.Status(),
	}, sum)
	if rec.Grant == "" && r.grant != "" {
		rec.Grant = r.grant
	}
	if err := receipt.Append(path, r.st.eff.ReceiptsMax.V, &rec); err != nil {
		fmt.Fprintln(stderr, "wrun: warning: no receipt written:", quote.Line(err.Error()))
	}
}

// conductorApprover wraps the conductor's approver: a widening that would
// write inside or over a git repository is never approved by a command (only a
// person at the terminal may approve it), since a conductor's write there
// defeats the worker's scope.
func conductorApprover(inner run.Approver, automatic bool) run.Approver {
	if inner == nil || !automatic {
		return inner
	}
	return func(ctx context.Context, req *escalate.Request) (escalate.Decision, error) {
		d, err := inner(ctx, req)
		if err != nil || d.Decision != escalate.DecisionApprove {
			return d, err
		}
		for _, den := range req.Denials {
			for _, alt := range den.Alternatives {
				if len(d.Alternatives) > 0 && !slices.Contains(d.Alternatives, alt.ID) {
					continue
				}
				if why := conductorRefusal(req.Workdir, alt.Widen); why != "" {
					return escalate.Decision{Decision: escalate.DecisionDeny, Scope: escalate.ScopeRun}, &escalate.DeniedError{Reason: why}
				}
			}
		}
		return d, nil
	}
}

// conductorRefusal says why the conductor's rule refuses widening w of a
// run in workdir without a person at the terminal, or "" when it does not.
func conductorRefusal(workdir string, w escalate.Widen) string {
	dir, what := w.Path, "a write"
	switch {
	case w.Kind == escalate.KindGrant && w.Grant.Files == grant.FilesWrite:
		dir, what = workdir, "a writable workspace"
	case w.Kind != escalate.KindAllowWrite:
		return ""
	}
	if repo := gitRepoOf(dir); repo != "" {
		return fmt.Sprintf("role %s: %s inside a git repository (%s is in %s) is never approved automatically; approve it at the terminal, or delegate to a worker", config.Conductor, what, dir, repo)
	}
	if repo := gitRepoBelow(dir, conductorScanLimit); repo != "" {
		return fmt.Sprintf("role %s: %s over a git repository (%s holds %s) is never approved automatically; approve it at the terminal, or delegate to a worker", config.Conductor, what, dir, repo)
	}
	return ""
}

// conductorScanLimit is how many directories gitRepoBelow looks through
// before it gives up, answering as if it had found a repository.
const conductorScanLimit = 20000

// gitRepoBelow returns a repository (a directory holding a .git) below
// dir, or "" when there is none. A directory it cannot read, or more than
// limit of them, answers dir itself: what it could not look through may
// hold one. Symbolic links are not followed: a write through one leaves
// the widened directory, which Landlock refuses.
func gitRepoBelow(dir string, limit int) string {
	found, seen := "", 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.Name() == ".git" && p != dir:
			found = filepath.Dir(p)
			return fs.SkipAll
		case !e.IsDir():
			return nil
		}
		if seen++; seen > limit {
			return fmt.Errorf("more than %d directories", limit)
		}
		return nil
	})
	if found == "" && err != nil && !errors.Is(err, fs.ErrNotExist) {
		return dir
	}
	return found
}

// conductorSession is the conductor's session: what the session
// remembered decides without asking anyone, so a remembered widening the
// conductor's rule refuses (one approved by an approver command in
// another role's run of the same workspace) is not taken from it.
type conductorSession struct{ run.Session }

func (s conductorSession) Remembered() []escalate.Remembered {
	return slices.DeleteFunc(s.Session.Remembered(), func(r escalate.Remembered) bool {
		w, err := r.Widen()
		return err != nil || conductorRefusal(r.Workdir, w) != ""
	})
}
