package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
)

// linkedRequest is a request whose one --allow-write alternative names a
// link the child planted in the workspace, leading to another project.
func linkedRequest(t *testing.T) (req *escalate.Request, link, other string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, other := filepath.Join(dir, "ws"), filepath.Join(dir, "other-project")
	for _, d := range []string{ws, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link = filepath.Join(ws, "out\x1b[2J\n\u202e")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	req = &escalate.Request{Grant: "files=read,shell=verify,network=off,desktop=off", Workdir: ws,
		Ceiling: grant.Ceiling().String(), CeilingSource: grant.CeilingDefault,
		Denials: []escalate.DeniedAct{{
			ID: "d1", Path: link + "/x", Summary: "wrun: denied create $'" + link + "/x' (fake)",
			Alternatives: []escalate.Alternative{
				{ID: "d1.allow-write", Kind: escalate.KindAllowWrite, Args: []string{"--allow-write", link},
					Widen:       escalate.Widen{Kind: escalate.KindAllowWrite, Path: link},
					Description: "let this run write " + link + " as well"},
				{ID: "d1.ask-parent", Kind: escalate.KindAskParent, Args: []string{}, Description: "ask the parent"},
			},
		}}}
	return req, link, other
}

// TestApprovalPromptShowsWhatIsGranted: the prompt carries no control or
// formatting character, and names the directory the approval really
// opens, not the link the child planted.
func TestApprovalPromptShowsWhatIsGranted(t *testing.T) {
	req, link, other := linkedRequest(t)
	p := approvalPrompt(req)
	for _, r := range p {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("the prompt holds %U:\n%s", r, p)
		}
	}
	for _, want := range []string{
		"[d1.allow-write] grants: --allow-write " + other + "\n",
		`(the denied path $'` + strings.ReplaceAll(link, "\x1b[2J\n\u202e", `\e[2J\n\u202e`) + `' is reached through a link`,
		"y grants --grant verify,network=off --allow-write " + other + " (d1.allow-write)\n",
		"[d1.ask-parent] grants nothing (ask-parent)\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	// One line per item: the child's newline did not add one.
	if n := strings.Count(p, "\n"); n != 8 {
		t.Errorf("the prompt has %d lines, want 8:\n%s", n, p)
	}
}

// TestDecideResolvesLinks: what is approved is the path the prompt showed,
// resolved, never the link (whose target the child could choose).
func TestDecideResolvesLinks(t *testing.T) {
	req, _, other := linkedRequest(t)
	var shown *escalate.Request
	ds, w := decide(context.Background(), req, func(_ context.Context, r *escalate.Request) (escalate.Decision, error) {
		shown = r
		return escalate.Decision{Decision: escalate.DecisionApprove, Scope: escalate.ScopeRun}, nil
	}, escalate.Ceiling{Grant: grant.Ceiling(), Source: grant.CeilingDefault}, nil)
	if w == nil || !ds.Approved {
		t.Fatalf("not approved: %+v", ds)
	}
	if len(w.AllowWrite) != 1 || w.AllowWrite[0] != other {
		t.Errorf("approved %q, want %q", w.AllowWrite, other)
	}
	if got := shown.Denials[0].Alternatives[0].Args[1]; got != other {
		t.Errorf("the approver was shown %q, want %q", got, other)
	}
	if req.Denials[0].Alternatives[0].Args[1] == other {
		t.Errorf("decide changed the caller's request")
	}
}

// memSession is a session kept in memory.
type memSession struct{ rem []escalate.Remembered }

func (m *memSession) Remembered() []escalate.Remembered { return m.rem }
func (m *memSession) Remember(r []escalate.Remembered) error {
	m.rem = append(m.rem, r...)
	return nil
}

// TestSessionScope: an approval of scope "session" is remembered by the
// run's session and decides the same request of a later run without
// asking; without a session it is refused; an approval of scope "run"
// is not remembered (the control).
func TestSessionScope(t *testing.T) {
	req, _, other := linkedRequest(t)
	ceiling := escalate.Ceiling{Grant: grant.Ceiling(), Source: grant.CeilingDefault}
	asked := 0
	approver := func(scope string) Approver {
		return func(context.Context, *escalate.Request) (escalate.Decision, error) {
			asked++
			return escalate.Decision{Decision: escalate.DecisionApprove, Scope: scope}, nil
		}
	}
	deny := func(context.Context, *escalate.Request) (escalate.Decision, error) {
		asked++
		return escalate.Decision{Decision: escalate.DecisionDeny, Scope: escalate.ScopeRun}, nil
	}

	ds, w := decide(context.Background(), req, approver(escalate.ScopeSession), ceiling, nil)
	if w != nil || ds.Approved || !strings.Contains(ds.Reason, "belongs to no session: set WRUN_SESSION") {
		t.Errorf("scope session without a session: %+v", ds)
	}

	sess := &memSession{}
	if ds, w = decide(context.Background(), req, approver(escalate.ScopeRun), ceiling, sess); w == nil || len(sess.rem) != 0 {
		t.Errorf("scope run: %+v, remembered %+v", ds, sess.rem)
	}
	if ds, w = decide(context.Background(), req, approver(escalate.ScopeSession), ceiling, sess); w == nil || len(sess.rem) != 1 {
		t.Fatalf("scope session: %+v, remembered %+v", ds, sess.rem)
	}
	asked = 0
	ds, w = decide(context.Background(), req, deny, ceiling, sess)
	if w == nil || !ds.SessionRemembered || asked != 0 || len(w.AllowWrite) != 1 || w.AllowWrite[0] != other {
		t.Errorf("a later run of the session: %+v, asked %d times", ds, asked)
	}
	// Remembered approvals stay inside this run's ceiling.
	narrow := escalate.Ceiling{Grant: grant.Grant{}, Source: grant.CeilingFlag}
	if ds, w = decide(context.Background(), req, deny, narrow, sess); w != nil || ds.Approved {
		t.Errorf("a remembered approval beyond this run's ceiling was taken: %+v", ds)
	}
}
