package escalate

import (
	"errors"
	"github.com/wrun-dev/wrun/access"
	"slices"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

func TestParseDecision(t *testing.T) {
	tests := []struct {
		in   string
		want Decision
		err  string
	}{
		{in: `{"decision": "approve"}`, want: Decision{Decision: "approve", Scope: "run"}},
		{in: `{"decision": "approve", "alternatives": ["d1.network-on", "d2.allow-write", "d1.network-on"], "scope": "session"}`,
			want: Decision{Decision: "approve", Alternatives: []string{"d1.network-on", "d2.allow-write"}, Scope: "session"}},
		{in: ` {"decision":"deny","scope":"run"} ` + "\n", want: Decision{Decision: "deny", Scope: "run"}},
		{in: `{"decision": "approve", "alternatives": []}`, want: Decision{Decision: "approve", Scope: "run"}},
		{in: ``, err: "it is empty"},
		{in: `yes`, err: "invalid character"},
		{in: `{}`, err: `"decision" is missing`},
		{in: `{"decision": "APPROVE"}`, err: `"decision" is "APPROVE"`},
		{in: `{"decision": "approve", "scope": "forever"}`, err: `"scope" is "forever"`},
		{in: `{"decision": "approve", "alternatives": "d1.x"}`, err: "cannot unmarshal string"},
		{in: `{"decision": "approve", "alternatives": [""]}`, err: "empty id"},
		{in: `{"decision": "approve", "sandbox": "off"}`, err: `unknown field "sandbox"`},
		{in: `{"decision": "approve"} {"decision": "deny"}`, err: "more follows"},
		{in: `[{"decision": "approve"}]`, err: "cannot unmarshal array"},
		{in: `{"decision": null}`, err: `"decision" is missing`},
	}
	for _, tc := range tests {
		got, err := ParseDecision([]byte(tc.in))
		if tc.err != "" {
			var de *DeniedError
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &de) {
				t.Errorf("ParseDecision(%s) = %v, want a *DeniedError containing %q", tc.in, err, tc.err)
			}
			if got.Decision != DecisionDeny || got.Reason == "" {
				t.Errorf("ParseDecision(%s): a bad answer must read as a deny with a reason, got %+v", tc.in, got)
			}
			if !strings.Contains(err.Error(), `want {"decision"`) {
				t.Errorf("the message does not say what is wanted: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDecision(%s): %v", tc.in, err)
			continue
		}
		if got.Decision != tc.want.Decision || got.Scope != tc.want.Scope || !slices.Equal(got.Alternatives, tc.want.Alternatives) {
			t.Errorf("ParseDecision(%s) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// approvalRequest is a request with four denials under verify: a write
// to cargo's registry, a TCP connect (network is on, so a second request
// uses network=off), a hook, a source file.
func approvalRequest(t *testing.T, spec string, c *Ceiling) (*Analyzer, *Request) {
	t.Helper()
	a := analyzer(t, spec, Facts{Argv: []string{"cargo", "test"}, Ceiling: c})
	req := mustRequest(t, a, runEnd, []sandbox.Denial{
		{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true},
		{Op: access.OpConnect, Addr: "127.0.0.1:9418", Right: access.RightConnectTCP, Exact: true},
		{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg", Exact: true},
		{Op: access.OpOpen, Path: ws + "/src/main.rs", Right: "write_file", Exact: true},
	})
	return a, req
}

func TestApprove(t *testing.T) {
	defaultCeiling := Ceiling{Grant: grant.Ceiling(), Source: grant.CeilingDefault}
	tests := []struct {
		name       string
		spec       string
		ceiling    Ceiling
		decision   string
		grant      string // the widened grant, compact
		allow      []string
		routes     []string
		unresolved []string
		err        string
	}{
		// The shared cache (d1) and the hook (d3) are approved only by id.
		{name: "default: the narrowest safe widening of each denial", spec: "verify,network=off", ceiling: defaultCeiling,
			decision: `{"decision": "approve"}`,
			grant:    "verify", allow: []string{ws + "/src/main.rs"}, unresolved: []string{"d1", "d3"}},
		{name: "empty alternatives: the same as omitted", spec: "verify,network=off", ceiling: defaultCeiling,
			decision: `{"decision": "approve", "alternatives": []}`,
			grant:    "verify", allow: []string{ws + "/src/main.rs"}, unresolved: []string{"d1", "d3"}},
		{name: "default: only what is inside the ceiling", spec: "verify,network=off", ceiling: Ceiling{Grant: mustGrant(t, "verify,network=off"), Source: grant.CeilingFlag},
			decision: `{"decision": "approve"}`,
			grant:    "verify,network=off", unresolved: []string{"d1", "d2", "d3", "d4"}},
		{name: "the shared cache, named", spec: "verify,network=off", ceiling: defaultCeiling,
			decision: `{"decision": "approve", "alternatives": ["d1.allow-write-cache", "d4.allow-write"]}`,
			grant:    "verify,network=off", allow: []string{home + "/.cargo/registry", ws + "/src/main.rs"}, unresolved: []string{"d2", "d3"}},
		{name: "one path", spec: "verify,network=off", ceiling: defaultCeiling,
			decision: `{"decision": "approve", "alternatives": ["d1.allow-write-cache"]}`,
			grant:    "verify,network=off", allow: []string{home + "/.cargo/registry"}, unresolved: []string{"d2", "d3", "d4"}},
		{name: "field changes combine", spec: "verify,network=off", ceiling: defaultCeiling,
			decision: `{"decision": "approve", "alternatives": ["d1.shell-full", "d2.network-on", "d4.files-write"], "scope": "session"}`,
			grant:    "full", unresolved: []string{"d3"}},
		{name: "a route widens nothing", spec: "verify,network=off", ceiling: defaultCeiling,
			decision: `{"decision": "approve", "alternatives": ["d1.cargo-fetch-first", "d3.ask-parent"]}`,
			grant:    "verify,network=off", routes: []string{"d1.cargo-fetch-first", "d3.ask-parent"}, unresolved: []string{"d1", "d2", "d3", "d4"}},
		{name: "deny", spec: "verify", ceiling: defaultCeiling, decision: `{"decision": "deny"}`, err: "escalation denied: the approver said deny"},
		{name: "garbage is a deny", spec: "verify", ceiling: defaultCeiling, decision: `ok, go ahead`, err: "escalation denied: the approver's answer is not a decision"},
		{name: "unknown id", spec: "verify", ceiling: defaultCeiling,
			decision: `{"decision": "approve", "alternatives": ["d9.sandbox-off"]}`, err: `no alternative "d9.sandbox-off" in the request; it offers d1.cargo-fetch-first`},
		{name: "beyond the ceiling, as offered", spec: "verify,network=off", ceiling: Ceiling{Grant: mustGrant(t, "verify,network=off"), Source: grant.EnvCeiling},
			decision: `{"decision": "approve", "alternatives": ["d2.network-on"]}`,
			err:      "widening refused: d2.network-on is beyond the ceiling; network=on exceeds the ceiling's network=off; the ceiling is verify,network=off (from WRUN_CEILING)"},
		{name: "beyond a ceiling narrower than the request's", spec: "verify,network=off", ceiling: Ceiling{Grant: mustGrant(t, "verify,network=off"), Source: grant.EnvCeiling},
			decision: `{"decision": "approve", "alternatives": ["d2.network-on"]}`,
			err:      "widening refused"},
		{name: "a path beyond the ceiling", spec: "verify,network=off", ceiling: Ceiling{Grant: mustGrant(t, "verify"), Source: grant.CeilingFlag},
			decision: `{"decision": "approve", "alternatives": ["d4.allow-write"]}`,
			err:      "--allow-write " + ws + "/src/main.rs counts as write: files=write exceeds the ceiling's files=read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The request is built under the default ceiling; approval
			// checks again against the ceiling in force, whatever the
			// request says.
			reqCeiling := &defaultCeiling
			if tc.name == "beyond the ceiling, as offered" {
				reqCeiling = &tc.ceiling
			}
			_, req := approvalRequest(t, tc.spec, reqCeiling)
			d, _ := ParseDecision([]byte(tc.decision))
			w, err := Approve(req, d, tc.ceiling)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Approve = %v, %v; want error %q", w, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Approve: %v", err)
			}
			if got := w.Grant.Compact(); got != tc.grant {
				t.Errorf("grant %s, want %s", got, tc.grant)
			}
			if !slices.Equal(w.AllowWrite, tc.allow) {
				t.Errorf("allow-write %q, want %q", w.AllowWrite, tc.allow)
			}
			var routes []string
			for _, r := range w.Routes {
				routes = append(routes, r.ID)
			}
			if !slices.Equal(routes, tc.routes) {
				t.Errorf("routes %q, want %q", routes, tc.routes)
			}
			if !slices.Equal(w.Unresolved, tc.unresolved) {
				t.Errorf("unresolved %q, want %q", w.Unresolved, tc.unresolved)
			}
			if !w.Grant.Within(tc.ceiling.Grant) {
				t.Errorf("widened grant %s is beyond the ceiling %s", w.Grant, tc.ceiling)
			}
		})
	}
}

func TestApproveErrorTypes(t *testing.T) {
	_, req := approvalRequest(t, "verify,network=off", nil)
	var ce *CeilingError
	_, err := Approve(req, Decision{Decision: DecisionApprove, Alternatives: []string{"d2.network-on"}}, Ceiling{Grant: mustGrant(t, "write"), Source: grant.EnvCeiling})
	if !errors.As(err, &ce) || ce.Ceiling.Source != grant.EnvCeiling {
		t.Errorf("want a *CeilingError naming the ceiling, got %v", err)
	}
	var de *DeniedError
	if _, err := Approve(req, Decision{Decision: DecisionDeny}, Ceiling{Grant: grant.Ceiling()}); !errors.As(err, &de) {
		t.Errorf("want a *DeniedError, got %v", err)
	}
}

// TestApproveDistrustsTheRequest: a request edited on its way to the
// approver (a beyond-ceiling entry relabelled) is still refused.
func TestApproveDistrustsTheRequest(t *testing.T) {
	c := Ceiling{Grant: mustGrant(t, "verify,network=off"), Source: grant.EnvCeiling}
	_, req := approvalRequest(t, "verify,network=off", &c)
	for i := range req.Denials {
		for j := range req.Denials[i].Alternatives {
			alt := &req.Denials[i].Alternatives[j]
			if alt.Kind == KindBeyondCeiling && len(alt.Args) == 2 {
				alt.WithinCeiling = true
				if alt.Args[0] == "--grant" {
					alt.Kind = KindGrant
				} else {
					alt.Kind = KindAllowWrite
				}
			}
		}
	}
	for _, id := range []string{"d2.network-on", "d1.shell-full", "d1.allow-write-cache", "d4.files-write"} {
		_, err := Approve(req, Decision{Decision: DecisionApprove, Alternatives: []string{id}}, c)
		var ce *CeilingError
		if !errors.As(err, &ce) {
			t.Errorf("%s: approved beyond the ceiling: %v", id, err)
		}
	}
}

func TestWidening(t *testing.T) {
	w := &Widening{Grant: mustGrant(t, "verify,shell=full"), AllowWrite: []string{"/a", "/b"}}
	if got := strings.Join(w.Args(), " "); got != "--grant verify,shell=full,network=on --allow-write /a --allow-write /b" {
		t.Errorf("Args = %s", got)
	}
	o := w.Options(policy.Options{AllowWrite: []string{"/b", "/c"}, KeepEnv: []string{"X"}})
	if !slices.Equal(o.AllowWrite, []string{"/b", "/c", "/a"}) || !slices.Equal(o.KeepEnv, []string{"X"}) {
		t.Errorf("Options = %+v", o)
	}
	if !w.Widens(mustGrant(t, "verify")) || (&Widening{Grant: mustGrant(t, "verify")}).Widens(mustGrant(t, "verify")) {
		t.Errorf("Widens is wrong")
	}
}

func TestApproveDropsCoveredPaths(t *testing.T) {
	a := analyzer(t, "verify", Facts{})
	req := mustRequest(t, a, runEnd, []sandbox.Denial{
		{Op: access.OpCreate, Path: "/opt/tool/a/x", Right: "make_reg", Exact: true},
		{Op: access.OpCreate, Path: "/opt/tool/y", Right: "make_reg", Exact: true},
	})
	w, err := Approve(req, Decision{Decision: DecisionApprove}, Ceiling{Grant: grant.Ceiling()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.AllowWrite, []string{"/opt/tool"}) {
		t.Errorf("allow-write %q, want the covering path only", w.AllowWrite)
	}
}

func mustGrant(t testing.TB, spec string) grant.Grant {
	t.Helper()
	g, err := grant.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestNarrowestNeverTakesWhatLaterRunsTrust: an approval naming nothing
// approves, per denial, the narrowest widening inside the ceiling, and
// never a write to a shared cache, a start-up file or a protected path.
func TestNarrowestNeverTakesWhatLaterRunsTrust(t *testing.T) {
	ceiling := Ceiling{Grant: grant.Ceiling(), Source: grant.CeilingDefault}
	tests := []struct {
		name    string
		argv    []string
		denials []sandbox.Denial
		want    []string
	}{
		{name: "a source file: the file itself", argv: []string{"sh"},
			denials: []sandbox.Denial{{Op: access.OpOpen, Path: ws + "/src/main.rs", Right: "write_file", Exact: true}},
			want:    []string{"d1.allow-write"}},
		{name: "outside the workspace: the directory", argv: []string{"sh"},
			denials: []sandbox.Denial{{Op: access.OpCreate, Path: "/opt/tool/x", Right: "make_reg", Exact: true}},
			want:    []string{"d1.allow-write"}},
		{name: "cargo's registry: nothing", argv: []string{"cargo", "build"},
			denials: []sandbox.Denial{{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true}}},
		{name: "the Go build cache: nothing", argv: []string{"go", "build"},
			denials: []sandbox.Denial{{Op: access.OpCreate, Path: home + "/.cache/go-build/ab/x", Right: "make_reg", Exact: true}}},
		{name: "a start-up file: nothing", argv: []string{"sh"},
			denials: []sandbox.Denial{{Op: access.OpOpen, Path: home + "/.bashrc", Right: "write_file", Exact: true}}},
		{name: "a hook: nothing", argv: []string{"sh"},
			denials: []sandbox.Denial{{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg", Exact: true}}},
		{name: "a cache beside a safe write: only the safe one", argv: []string{"cargo", "build"},
			denials: []sandbox.Denial{
				{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true},
				{Op: access.OpCreate, Path: "/opt/tool/x", Right: "make_reg", Exact: true},
			},
			want: []string{"d2.allow-write"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyzer(t, "verify", Facts{Argv: tc.argv, Ceiling: &ceiling})
			req := mustRequest(t, a, runEnd, tc.denials)
			got := Narrowest(req, ceiling)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Narrowest = %q, want %q", got, tc.want)
			}
			for _, empty := range []string{`{"decision": "approve"}`, `{"decision": "approve", "alternatives": []}`} {
				d, _ := ParseDecision([]byte(empty))
				w, err := Approve(req, d, ceiling)
				if err != nil {
					t.Fatalf("Approve(%s): %v", empty, err)
				}
				if !slices.Equal(w.Approved, tc.want) {
					t.Errorf("Approve(%s) approved %q, want %q", empty, w.Approved, tc.want)
				}
				if w.Grant.Shell == grant.ShellFull {
					t.Errorf("Approve(%s) raised shell to full (the tool caches): %s", empty, w.Grant)
				}
				for _, p := range w.AllowWrite {
					if policy.Within(p, home+"/.cargo") || policy.Within(p, home+"/.cache") || policy.Within(p, ws+"/.git") || p == home+"/.bashrc" {
						t.Errorf("Approve(%s) allowed a write to %s", empty, p)
					}
				}
			}
		})
	}
}

func TestSensitive(t *testing.T) {
	req := &Request{Grant: "verify", Denials: []DeniedAct{
		{ID: "d1", WithheldBy: WithheldBy{Rule: "tool-cache", Path: home + "/.cargo"}},
		{ID: "d2", WithheldBy: WithheldBy{Rule: "outside-scope"}},
	}}
	tests := []struct {
		den  int
		alt  Alternative
		want bool
	}{
		{0, Alternative{Kind: KindAllowWrite, Args: []string{"--allow-write", home + "/.cargo/registry"}}, true},
		{1, Alternative{Kind: KindAllowWrite, Args: []string{"--allow-write", "/opt/tool"}}, false},
		{1, Alternative{Kind: KindAllowWrite, Args: []string{"--allow-write", home + "/.cargo/bin"}}, true},
		{1, Alternative{Kind: KindAllowWrite, Args: []string{"--allow-write", home}}, true},
		{1, Alternative{Kind: KindGrant, Args: []string{"--grant", "verify,network=on"}}, false},
		{1, Alternative{Kind: KindGrant, Args: []string{"--grant", "full"}}, true},
		{1, Alternative{Kind: KindGrant, Args: []string{"--grant", "nonsense"}}, true},
		{1, Alternative{Kind: KindAllowUnix, Args: []string{"--allow-unix", "/run/user/1000/bus"}}, true},
	}
	for _, tc := range tests {
		if got := Sensitive(req, req.Denials[tc.den], fromArgs(tc.alt)); got != tc.want {
			t.Errorf("Sensitive(%s, %q) = %v, want %v", req.Denials[tc.den].ID, tc.alt.Args, got, tc.want)
		}
	}
}

// TestApproveAllowUnix: a refused connect to a socket outside offers
// --allow-unix with that socket; approving it (by id) widens nothing but
// the one socket, within a ceiling with desktop=on, and is refused beyond
// one with desktop=off.
func TestApproveAllowUnix(t *testing.T) {
	const sock = "/run/user/1000/agent.sock"
	den := sandbox.Denial{Op: access.OpConnect, Path: sock, Addr: "unix:" + sock, Right: access.RightConnectUnix, Exact: true}
	for _, tc := range []struct {
		ceiling string
		within  bool
	}{{"files=write,shell=full,network=on,desktop=on", true}, {"files=write,shell=full,network=on,desktop=off", false}} {
		c := &Ceiling{Grant: mustGrant(t, tc.ceiling), Source: grant.CeilingDefault}
		a := analyzer(t, "verify", Facts{Ceiling: c})
		req := mustRequest(t, a, runEnd, []sandbox.Denial{den})
		var alt *Alternative
		for i, x := range req.Denials[0].Alternatives {
			if x.ID == "d1.allow-unix" {
				alt = &req.Denials[0].Alternatives[i]
			}
		}
		if alt == nil || !slices.Equal(alt.Args, []string{"--allow-unix", sock}) || alt.WithinCeiling != tc.within {
			t.Fatalf("ceiling %s: the allow-unix alternative is %+v, want --allow-unix %s within=%v", tc.ceiling, alt, sock, tc.within)
		}
		w, err := Approve(req, Decision{Decision: DecisionApprove, Alternatives: []string{"d1.allow-unix"}}, *c)
		if !tc.within {
			var ce *CeilingError
			if !errors.As(err, &ce) {
				t.Errorf("ceiling %s: approving beyond it: %v, want a CeilingError", tc.ceiling, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ceiling %s: %v", tc.ceiling, err)
		}
		if got := strings.Join(w.Args(), " "); got != "--grant "+mustGrant(t, "verify").Spec()+" --allow-unix "+sock || len(w.Unresolved) != 0 {
			t.Errorf("ceiling %s: retry args %q, unresolved %v", tc.ceiling, got, w.Unresolved)
		}
		if o := w.Options(policy.Options{}); !slices.Equal(o.AllowUnix, []string{sock}) {
			t.Errorf("ceiling %s: options %+v", tc.ceiling, o)
		}
		// Never picked by an approval that names nothing.
		if slices.Contains(Narrowest(req, *c), "d1.allow-unix") {
			t.Errorf("ceiling %s: Narrowest picks --allow-unix", tc.ceiling)
		}
	}
}

// TestApproveAllowRead: a refused read of a hidden file offers
// --allow-read of exactly that file; approving it by id retries with it,
// and an approval naming nothing never picks it (what a file holds cannot
// be told from its path).
func TestApproveAllowRead(t *testing.T) {
	key := home + "/.ssh/id_ed25519"
	den := sandbox.Denial{Op: access.OpOpen, Path: key, Right: "read_file", Exact: true}
	c := &Ceiling{Grant: mustGrant(t, "verify"), Source: grant.CeilingDefault}
	a := analyzer(t, "verify", Facts{Ceiling: c})
	req := mustRequest(t, a, runEnd, []sandbox.Denial{den})
	alt := req.Denials[0].Alternatives[0]
	if alt.ID != "d1.allow-read" || !slices.Equal(alt.Args, []string{"--allow-read", key}) || !alt.WithinCeiling {
		t.Fatalf("the first alternative is %+v, want --allow-read %s within the ceiling", alt, key)
	}
	if !Sensitive(req, req.Denials[0], alt) || slices.Contains(Narrowest(req, *c), "d1.allow-read") {
		t.Errorf("--allow-read is not sensitive, or Narrowest picks it")
	}
	w, err := Approve(req, Decision{Decision: DecisionApprove, Alternatives: []string{"d1.allow-read"}}, *c)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.Args(), " "); got != "--grant "+mustGrant(t, "verify").Spec()+" --allow-read "+key || len(w.Unresolved) != 0 || !w.Widens(mustGrant(t, "verify")) {
		t.Errorf("retry args %q, unresolved %v", got, w.Unresolved)
	}
	if o := w.Options(policy.Options{AllowRead: []string{"/srv"}}); !slices.Equal(o.AllowRead, []string{"/srv", key}) {
		t.Errorf("options %+v", o)
	}
	// Malformed args are refused, not applied.
	bad := *req
	bad.Denials = slices.Clone(req.Denials)
	bad.Denials[0].Alternatives = []Alternative{fromArgs(Alternative{ID: "d1.allow-read", Kind: KindAllowRead, Args: []string{"--allow-read", "relative"}, WithinCeiling: true})}
	if _, err := Approve(&bad, Decision{Decision: DecisionApprove, Alternatives: []string{"d1.allow-read"}}, *c); err == nil {
		t.Error("an --allow-read of a relative path was approved")
	}
}

// TestApproveAllowHost: under network=loopback a refused connect to a
// host's loopback service offers --allow-host with that address and
// port, and network=on; approving it adds the one entry. A refused bind,
// or a connect beyond loopback, offers no --allow-host (it would not
// help), only network=on.
func TestApproveAllowHost(t *testing.T) {
	c := &Ceiling{Grant: mustGrant(t, "full"), Source: grant.CeilingDefault}
	a := analyzer(t, "verify,network=loopback", Facts{Ceiling: c})
	for _, tc := range []struct {
		den      sandbox.Denial
		host     string // the --allow-host offered, "" for none
		ruleWant string
	}{
		{sandbox.Denial{Op: access.OpConnect, Addr: "127.0.0.1:5432", Right: access.RightConnectTCP, Exact: true}, "127.0.0.1:5432", "network-loopback"},
		{sandbox.Denial{Op: access.OpConnect, Addr: "[::1]:6379", Right: access.RightConnectTCP, Exact: true}, "[::1]:6379", "network-loopback"},
		{sandbox.Denial{Op: "sendto", Addr: "udp:127.0.0.53:53", Right: access.RightConnectUDP, Exact: true}, "127.0.0.53:53", "network-loopback"},
		{sandbox.Denial{Op: access.OpConnect, Addr: "10.1.2.3:80", Right: access.RightConnectTCP, Exact: true}, "", "network-loopback"},
		{sandbox.Denial{Op: access.OpBind, Addr: "0.0.0.0:8080", Right: access.RightBindTCP, Exact: true}, "", "network-loopback"},
	} {
		req := mustRequest(t, a, runEnd, []sandbox.Denial{tc.den})
		d := req.Denials[0]
		if d.WithheldBy.Rule != tc.ruleWant || d.WithheldBy.Field != "network" {
			t.Errorf("%s: withheld by %+v", tc.den.Addr, d.WithheldBy)
		}
		var host *Alternative
		on := false
		for i, x := range d.Alternatives {
			switch {
			case x.Kind == KindAllowHost:
				host = &d.Alternatives[i]
			case x.Kind == KindGrant && len(x.Args) == 2 && strings.Contains(mustGrant(t, x.Args[1]).String(), "network=on"):
				on = true
			}
		}
		if !on {
			t.Errorf("%s: no network=on alternative: %+v", tc.den.Addr, d.Alternatives)
		}
		if tc.host == "" {
			if host != nil {
				t.Errorf("%s: offers %q", tc.den.Addr, host.Args)
			}
			continue
		}
		if host == nil || !slices.Equal(host.Args, []string{"--allow-host", tc.host}) || !host.WithinCeiling {
			t.Fatalf("%s: the allow-host alternative is %+v, want --allow-host %s", tc.den.Addr, host, tc.host)
		}
		if !Sensitive(req, d, *host) {
			t.Errorf("%s: --allow-host is not sensitive", tc.den.Addr)
		}
		w, err := Approve(req, Decision{Decision: DecisionApprove, Alternatives: []string{host.ID}}, *c)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(w.Args(), " "); !strings.HasSuffix(got, " --allow-host "+tc.host) || len(w.Unresolved) != 0 {
			t.Errorf("%s: retry args %q, unresolved %v", tc.den.Addr, got, w.Unresolved)
		}
		if o := w.Options(policy.Options{}); len(o.AllowHost) != 1 || o.AllowHost[0].String() != tc.host {
			t.Errorf("%s: options %+v", tc.den.Addr, o.AllowHost)
		}
	}
}

// fromArgs is alt as a request read from its JSON form offers it: its
// widening read back from its flags.
func fromArgs(alt Alternative) Alternative {
	alt.Widen, _ = parseWiden(alt.Args)
	return alt
}
