package escalate

import (
	"encoding/json"
	"github.com/wrun-dev/wrun/access"
	"strings"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/schematest"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
)

var runEnd = Run{RunID: "20261201T100000Z-0123abcd", Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), ExitCode: 1}

// validateRequest checks a request document against the published schema.
func validateRequest(doc []byte) error { return schematest.Validate(RequestSchema(), doc) }

// mustRequest builds a request and checks it against the schema: every
// request a test produces is validated.
func mustRequest(t *testing.T, a *Analyzer, run Run, ds []sandbox.Denial) *Request {
	t.Helper()
	req := a.Request(run, ds)
	if req == nil {
		return nil
	}
	b, err := req.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := validateRequest(b); err != nil {
		t.Fatalf("request does not validate: %v\n%s", err, b)
	}
	var back Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("request does not read back: %v", err)
	}
	return req
}

// TestRequestDoneMeans is the example: a write under ~/.cargo
// under verify is one line saying what was denied and what to do instead,
// and the same as schema-valid JSON.
func TestRequestDoneMeans(t *testing.T) {
	argv := []string{"sh", "-c", "echo x > ~/.cargo/registry/x"}
	a := analyzer(t, "verify", Facts{Argv: argv})
	op := access.Op{Kind: access.OpCreate, Path: home + "/.cargo/registry/x"}
	var ds []sandbox.Denial
	for i := range 3 {
		for _, d := range exactDenials(op, a.Check(op)) {
			d.PID, d.Program, d.Time = 100+i, "sh", "2026-12-01T09:59:5"+string(rune('0'+i))+"Z"
			ds = append(ds, d)
		}
	}
	// sh also said so on stderr: the same act, inferred.
	ds = append(ds, a.Infer([]string{"sh: 1: cannot create /home/u/.cargo/registry/x: Permission denied"})...)
	req := mustRequest(t, a, runEnd, ds)
	if len(req.Denials) != 1 {
		t.Fatalf("want one denial, got %+v", req.Denials)
	}
	d := req.Denials[0]
	if d.Count != 3 || d.Evidence != EvidenceExact || d.PID != 100 || d.Right != "make_reg" || d.Op != access.OpCreate {
		t.Errorf("denial %+v", d)
	}
	if d.WithheldBy.Field != "shell" || d.WithheldBy.Rule != "tool-cache" {
		t.Errorf("withheld by %+v", d.WithheldBy)
	}
	want := "wrun: denied create /home/u/.cargo/registry/x (3 times) (shell=verify keeps CARGO_HOME read-only). " +
		"Try: --allow-write /home/u/.cargo/registry; or --grant verify,shell=full,network=on"
	if got := req.Lines(); len(got) != 1 || got[0] != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	if req.Grant != "files=read,shell=verify,network=on,desktop=off" || req.GrantName != "verify" ||
		req.Ceiling != grant.Ceiling().String() || req.CeilingSource != grant.CeilingDefault || req.ExitCode != 1 ||
		req.Time != "2026-12-01T10:00:00Z" || strings.Join(req.Command, " ") != strings.Join(argv, " ") {
		t.Errorf("request header %+v", req)
	}
	if d.Alternatives[0].ID != "d1.allow-write-cache" {
		t.Errorf("alternative ids are not prefixed with the denial's: %s", d.Alternatives[0].ID)
	}
}

func TestRequestNothingDenied(t *testing.T) {
	a := analyzer(t, "verify", Facts{})
	if req := a.Request(runEnd, nil); req != nil {
		t.Errorf("a request with no denial: %+v", req)
	}
}

func TestSummaryLines(t *testing.T) {
	tests := []struct {
		name  string
		grant string
		facts Facts
		d     sandbox.Denial
		want  string
	}{
		{name: "protected", grant: "write",
			d:    sandbox.Denial{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg", Exact: true},
			want: "wrun: denied create /home/u/proj/.git/hooks/pre-commit (protected: git hooks: a planted hook runs at the next unsandboxed commit, merge or checkout). Try: ask the parent"},
		{name: "network", grant: "inspect", facts: Facts{Argv: []string{"cargo", "build"}},
			d:    sandbox.Denial{Op: access.OpConnect, Addr: "127.0.0.1:8080", Right: access.RightConnectTCP, Exact: true},
			want: "wrun: denied connect to 127.0.0.1:8080 (network=off). Try: cargo build --offline; or --grant inspect,network=on"},
		{name: "beyond the ceiling", grant: "verify",
			d:    sandbox.Denial{Op: access.OpConnect, Addr: "unix:/run/user/1000/bus", Right: access.RightConnectUnix, Exact: true},
			want: "wrun: denied connect to unix:/run/user/1000/bus (desktop=off allows no UNIX socket outside the sandbox; --allow-unix PATH allows that one socket). Try: ask the parent (1 wider option beyond the ceiling)"},
		{name: "inferred", grant: "verify",
			d:    sandbox.Denial{Op: access.OpOpen, Path: home + "/.ssh/id_ed25519", Right: "read_file", Count: 2},
			want: "wrun: denied read /home/u/.ssh/id_ed25519 (2 times) [inferred from output] (hidden: credential store (SSH keys)). Try: --allow-read /home/u/.ssh/id_ed25519"},
		{name: "lock file", grant: "verify", facts: Facts{Argv: []string{"cargo", "test"}},
			d:    sandbox.Denial{Op: access.OpOpen, Path: ws + "/Cargo.lock", Right: "write_file,truncate", Exact: true},
			want: "wrun: denied write to /home/u/proj/Cargo.lock (files=read keeps the lock file read-only). Try: --allow-write /home/u/proj/Cargo.lock; or --grant write,network=on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := analyzer(t, tc.grant, tc.facts)
			req := mustRequest(t, a, runEnd, []sandbox.Denial{tc.d})
			if got := req.Lines()[0]; got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestDedup(t *testing.T) {
	p := ws + "/x"
	in := []sandbox.Denial{
		{Op: access.OpCreate, Path: p, Right: "make_reg", Exact: true, Time: "2026-12-01T10:00:02Z", PID: 2},
		{Op: access.OpCreate, Path: p + "/", Right: "make_reg", Exact: true, Time: "2026-12-01T10:00:01Z", PID: 1},
		{Op: access.OpOpen, Path: p, Right: "make_reg", Exact: false},                 // inferred, folds into the exact one
		{Op: access.OpOpen, Path: "/etc/x", Right: "write_file", Exact: false},        // inferred
		{Op: access.OpOpen, Path: "/etc/x", Right: "write_file", Exact: false},        // inferred again: counted
		{Op: access.OpOpen, Path: "/etc/x", Right: "write_file", Exact: true, PID: 7}, // exact: takes over
		{Op: access.OpConnect, Addr: "1.2.3.4:443", Right: access.RightConnectTCP, Exact: true, Count: 5},
		{Op: access.OpUnlink, Path: p, Right: "remove_file", Exact: true},
	}
	got := Dedup(in)
	want := []struct {
		path  string
		count int
		exact bool
		pid   int
	}{{p, 2, true, 1}, {"/etc/x", 1, true, 7}, {"1.2.3.4:443", 5, true, 0}, {p, 1, true, 0}}
	if len(got) != len(want) {
		t.Fatalf("Dedup = %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Path+g.Addr != w.path || g.Count != w.count || g.Exact != w.exact || g.PID != w.pid {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
}

// TestEveryRequestValidates builds requests over a matrix of grants,
// protections, ceilings and denials and validates each against the
// schema.
func TestEveryRequestValidates(t *testing.T) {
	denials := []sandbox.Denial{
		{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true, PID: 9, Program: "cargo", Time: "2026-12-01T09:00:00Z"},
		{Op: access.OpOpen, Path: ws + "/Cargo.lock", Right: "write_file,truncate", Exact: true},
		{Op: access.OpCreate, Path: ws + "/src/x.rs", Right: "make_reg", Exact: true},
		{Op: access.OpCreate, Path: ws + "/notes", Right: "make_reg", Exact: true},
		{Op: access.OpMkdir, Path: ws + "/target/debug", Right: "make_dir"},
		{Op: access.OpCreate, Path: ws + "/.git/hooks/pre-commit", Right: "make_reg", Exact: true},
		{Op: access.OpRename, Path: ws + "/.git", Right: "remove_dir", Exact: true},
		{Op: access.OpOpen, Path: home + "/.ssh/id_rsa", Right: "read_file"},
		{Op: access.OpCreate, Path: "/opt/x/y", Right: "make_reg", Exact: true},
		{Op: access.OpCreate, Path: home + "/.cache/go-build/x", Right: "make_reg", Exact: true},
		{Op: access.OpConnect, Addr: "127.0.0.1:9418", Right: access.RightConnectTCP, Exact: true},
		{Op: access.OpSocket, Addr: "inet", Right: access.RightSocketInet, Exact: true},
		{Op: access.OpConnect, Addr: "unix:/run/docker.sock", Right: access.RightConnectUnix, Exact: true},
		{Op: access.OpConnect, Addr: "unix:@/tmp/.X11-unix/X0", Right: access.RightConnectAbstract, Exact: true},
		{Op: access.OpChmod, Path: ws + "/.git/config", Right: access.RightMetadata, Exact: true},
		{Op: access.OpRename, Path: tmp + "/a", Right: "refer", Exact: true},
		{Op: "ioctl", Path: "/dev/tty", Right: "ioctl_dev", Exact: true},
	}
	ceilings := []*Ceiling{nil, ceilingOf(t, "verify", grant.EnvCeiling), ceilingOf(t, "inspect", grant.CeilingFlag+" narrowed by "+grant.EnvGrant)}
	argvs := [][]string{{"cargo", "test"}, {"go", "test", "./..."}, {"npm", "ci"}, {"sh", "-c", "make && echo <done> & true"}, nil}
	n := 0
	for _, spec := range []string{"inspect", "verify", "write", "full", "inspect,files=none", "verify,network=off,desktop=on"} {
		for _, prot := range []access.Protection{access.ProtectCarved, access.ProtectExact} {
			for i, c := range ceilings {
				f := Facts{Protection: prot, Ceiling: c, Argv: argvs[(n+i)%len(argvs)],
					VerifyScope: []verify.Path{{Path: ws + "/target", Dir: true}}}
				a := analyzer(t, spec, f)
				req := mustRequest(t, a, Run{RunID: runEnd.RunID, Time: runEnd.Time, ExitCode: 101, Degraded: prot == access.ProtectExact}, denials)
				for _, d := range req.Denials {
					checkAlternatives(t, a, d.Alternatives)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no request built")
	}
}

func TestSchemaFile(t *testing.T) {
	var s struct {
		ID         string `json:"$id"`
		Properties struct {
			Schema struct {
				Const string `json:"const"`
			} `json:"schema"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(RequestSchema(), &s); err != nil {
		t.Fatal(err)
	}
	if s.ID != SchemaID || s.Properties.Schema.Const != SchemaID {
		t.Errorf("schema $id %q / const %q, want %q", s.ID, s.Properties.Schema.Const, SchemaID)
	}
}

// TestSchemaRejects mutates a valid request and expects the schema to
// refuse each mutation, naming where.
func TestSchemaRejects(t *testing.T) {
	a := analyzer(t, "verify", Facts{Argv: []string{"cargo", "test"}})
	req := mustRequest(t, a, runEnd, []sandbox.Denial{
		{Op: access.OpCreate, Path: home + "/.cargo/registry/x", Right: "make_reg", Exact: true},
		{Op: access.OpConnect, Addr: "unix:/run/user/1000/bus", Right: access.RightConnectUnix, Exact: true},
	})
	tests := []struct {
		name   string
		mutate func(m map[string]any)
		where  string
	}{
		{"missing grant", func(m map[string]any) { delete(m, "grant") }, `missing property 'grant'`},
		{"extra property", func(m map[string]any) { m["sandbox"] = "off" }, `additional properties 'sandbox' not allowed`},
		{"version 1", func(m map[string]any) { m["version"] = 1 }, "/version"},
		{"no run id", func(m map[string]any) { delete(m, "run_id") }, "run_id"},
		{"an unknown ceiling source", func(m map[string]any) { m["ceiling_source"] = "config" }, "/ceiling_source"},
		{"a route command without the grant", func(m map[string]any) {
			alt(m, 0, 0)["commands"] = []any{[]any{"wrun", "--", "cargo", "fetch", "now"}}
		}, "/denials/0/alternatives/0/commands/0"},
		{"bad time", func(m map[string]any) { m["time"] = "yesterday" }, "/time"},
		{"relative workdir", func(m map[string]any) { m["workdir"] = "proj" }, "/workdir"},
		{"bad grant", func(m map[string]any) { m["grant"] = "verify" }, "/grant"},
		{"no denials", func(m map[string]any) { m["denials"] = []any{} }, "at '/denials': minItems"},
		{"neither path nor addr", func(m map[string]any) { delete(den(m, 0), "path") }, "at '/denials/0': 'anyOf' failed"},
		{"bad evidence", func(m map[string]any) { den(m, 0)["evidence"] = "guessed" }, "/denials/0/evidence"},
		{"count zero", func(m map[string]any) { den(m, 0)["count"] = 0 }, "/denials/0/count"},
		{"fractional exit code", func(m map[string]any) { m["exit_code"] = 1.5 }, "at '/exit_code': got number, want integer"},
		{"unknown field", func(m map[string]any) { den(m, 0)["withheld_by"].(map[string]any)["field"] = "magic" }, "/denials/0/withheld_by/field"},
		{"beyond the ceiling yet within", func(m map[string]any) { alt(m, 1, 0)["within_ceiling"] = true }, "at '/denials/1/alternatives/0': 'oneOf' failed"},
		{"allow-write without a path", func(m map[string]any) { alt(m, 0, 1)["args"] = []any{"--allow-write"} }, "at '/denials/0/alternatives/1': 'oneOf' failed"},
		{"a command that is not wrun", func(m map[string]any) {
			alt(m, 0, 0)["commands"] = []any{[]any{"cargo", "fetch", "now"}}
		}, "/denials/0/alternatives/0/commands/0/0"},
		{"an unknown kind", func(m map[string]any) { alt(m, 0, 0)["kind"] = "unsandboxed" }, "/denials/0/alternatives/0/kind"},
	}
	b, _ := req.JSON()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			tc.mutate(m)
			mb, _ := json.Marshal(m)
			err := validateRequest(mb)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tc.where) {
				t.Errorf("error %q does not name %q", err, tc.where)
			}
		})
	}
}

func den(m map[string]any, i int) map[string]any {
	return m["denials"].([]any)[i].(map[string]any)
}

func alt(m map[string]any, i, j int) map[string]any {
	return den(m, i)["alternatives"].([]any)[j].(map[string]any)
}

// TestGroupedLines: denials refused the same way with the same things to
// try are one line, at the first of them; any difference (the act, the
// rule, what to try, a path or an address) keeps a line of its own.
func TestGroupedLines(t *testing.T) {
	// npm's node_modules does not exist yet: each --allow-write names the
	// workspace, and the lines say the same.
	missing := func(p string) bool { return !strings.Contains(p, "node_modules") && !strings.Contains(p, "/x/") }
	a := analyzer(t, "verify", Facts{Argv: []string{"npm", "install"}, Exists: missing})
	mk := func(op, path, right string, n int) sandbox.Denial {
		return sandbox.Denial{Op: op, Path: path, Right: right, Count: n, Exact: true}
	}
	var npm []sandbox.Denial
	for _, p := range []string{"", "/a", "/b", "/b/node_modules", "/c"} {
		npm = append(npm, mk(access.OpMkdir, ws+"/web/node_modules"+p, "make_dir", 1))
	}
	tests := []struct {
		name string
		ds   []sandbox.Denial
		want []string // substrings, one per line
	}{
		{"one", npm[:1], []string{"denied create directory " + ws + "/web/node_modules (files=read"}},
		{"npm install's directories", npm, []string{"denied create directory " + ws + "/web/node_modules and 4 more paths under " + ws + "/web/node_modules (files=read"}},
		{"counts add up", []sandbox.Denial{mk(access.OpMkdir, ws+"/x/a", "make_dir", 3), mk(access.OpMkdir, ws+"/x/b", "make_dir", 1)},
			[]string{"denied create directory " + ws + "/x/a and 1 more path under " + ws + "/x (4 times in all) (files=read"}},
		{"another act stays apart", []sandbox.Denial{npm[0], mk(access.OpCreate, ws+"/web/node_modules.tmp", "make_reg", 1), npm[1]},
			[]string{"node_modules and 1 more path under " + ws + "/web/node_modules (", "denied create " + ws + "/web/node_modules.tmp ("}},
		{"another rule stays apart", []sandbox.Denial{npm[0], mk(access.OpMkdir, home+"/.npm/_cacache", "make_dir", 1)},
			[]string{"node_modules (files=read", "_cacache (shell=verify keeps npm's cache read-only"}},
		{"other things to try stay apart", []sandbox.Denial{mk(access.OpOpen, ws+"/Cargo.lock", "write_file", 1), mk(access.OpOpen, ws+"/go.sum", "write_file", 1)},
			[]string{"Cargo.lock (", "go.sum ("}},
		{"addresses stay apart", []sandbox.Denial{{Op: access.OpConnect, Addr: "127.0.0.1:1", Right: access.RightConnectTCP, Exact: true}, {Op: access.OpConnect, Addr: "127.0.0.1:2", Right: access.RightConnectTCP, Exact: true}},
			[]string{"127.0.0.1:1", "127.0.0.1:2"}},
	}
	for _, tc := range tests {
		acts := a.acts(tc.ds, "d")
		got := GroupedLines(acts)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.name, len(got), len(tc.want), strings.Join(got, "\n"))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) || !strings.HasPrefix(got[i], "wrun: denied ") || !strings.Contains(got[i], ". Try: ") {
				t.Errorf("%s: line %d is %q, want it to contain %q", tc.name, i, got[i], w)
			}
		}
	}
	// Lines from elsewhere (a request read back, a test's) whose summary
	// is not wrun's own form are printed as they are.
	odd := []DeniedAct{{Path: "/x", Summary: "one"}, {Path: "/y", Summary: "one"}}
	if got := GroupedLines(odd); len(got) != 2 {
		t.Errorf("foreign summaries grouped: %q", got)
	}
}

// TestOne: the request of one denial (a held call's question, a denial
// event) numbers it as asked, its alternatives with it, and validates.
func TestOne(t *testing.T) {
	a := analyzer(t, "verify", Facts{})
	op := access.Op{Kind: access.OpCreate, Path: home + "/.cargo/registry/x"}
	ds := exactDenials(op, a.Check(op))
	if len(ds) == 0 {
		t.Fatal("no denial to ask about")
	}
	for _, id := range []string{"d1", "d7", "d12"} {
		req := a.One(runEnd, ds[0], id)
		b, err := req.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := validateRequest(b); err != nil {
			t.Fatalf("%s: %v\n%s", id, err, b)
		}
		if len(req.Denials) != 1 || req.Denials[0].ID != id || len(req.Denials[0].Alternatives) == 0 {
			t.Fatalf("%s: %+v", id, req.Denials)
		}
		for _, alt := range req.Denials[0].Alternatives {
			if !strings.HasPrefix(alt.ID, id+".") {
				t.Errorf("%s: alternative %s", id, alt.ID)
			}
		}
	}
	if a.One(runEnd, ds[0], "") != nil {
		t.Error("a request without an id")
	}
}
