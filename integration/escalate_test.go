//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/internal/schematest"
	runpkg "github.com/wrun-dev/wrun/run"
)

// summary is the --json object a run prints on stderr at exit.
type summary struct {
	ExitCode int             `json:"exit_code"`
	Grant    string          `json:"grant"`
	Request  json.RawMessage `json:"request"`
	Decision *struct {
		Approved bool     `json:"approved"`
		Reason   string   `json:"reason"`
		Args     []string `json:"args"`
		Retried  bool     `json:"retried"`
	} `json:"decision"`
	Retry *struct {
		ExitCode int `json:"exit_code"`
	} `json:"retry"`
}

// validateRequest checks a request document against the published schema.
func validateRequest(doc []byte) error { return validate(escalate.RequestSchema(), doc) }

// validateSummary checks a --json summary against the published schema.
func validateSummary(doc []byte) error { return validate(runpkg.SummarySchema(), doc) }

// compiled are the schemas compiled so far, by their text.
var compiled sync.Map

// validate checks doc against schema, compiling each schema once.
func validate(schema, doc []byte) error {
	s, ok := compiled.Load(string(schema))
	if !ok {
		c, err := schematest.Compile(schema)
		if err != nil {
			return err
		}
		s, _ = compiled.LoadOrStore(string(schema), c)
	}
	return s.(*schematest.Schema).Validate(doc)
}

// runJSON runs wrun --json and returns its summary, with the request
// checked against the schema.
func runJSON(t *testing.T, o runOpts, args ...string) (summary, *escalate.Request, result) {
	t.Helper()
	r := wrun(t, o, append([]string{"--json"}, args...)...)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var s summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("--json summary: %v\n%s", err, r)
	}
	if err := validateSummary([]byte(lines[len(lines)-1])); err != nil {
		t.Fatalf("the summary is not valid against its schema: %v\n%s", err, lines[len(lines)-1])
	}
	if len(s.Request) == 0 {
		return s, nil, r
	}
	if err := validateRequest(s.Request); err != nil {
		t.Fatalf("the request is not valid against the schema: %v\n%s", err, s.Request)
	}
	var req escalate.Request
	if err := json.Unmarshal(s.Request, &req); err != nil {
		t.Fatal(err)
	}
	return s, &req, r
}

func kinds(d escalate.DeniedAct) []string {
	var out []string
	for _, a := range d.Alternatives {
		out = append(out, a.Kind)
	}
	return out
}

func TestRequestNamesTheWriteAndTheRight(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "result.txt")
	s, req, r := runJSON(t, runOpts{dir: ws}, "--", "sh", "-c", "echo x > "+outside)
	if req == nil || s.ExitCode == 0 {
		t.Fatalf("want a request and a failing exit status:\n%s", r)
	}
	if len(req.Denials) != 1 {
		t.Fatalf("want one denial, got %+v", req.Denials)
	}
	d := req.Denials[0]
	if d.Op != "create" || d.Path != outside || d.Right != "make_reg" || d.Evidence != "exact" {
		t.Errorf("denial %+v", d)
	}
	if !strings.Contains(strings.Join(kinds(d), ","), "allow-write") {
		t.Errorf("want an --allow-write alternative, got %v", kinds(d))
	}
	for _, a := range d.Alternatives {
		if strings.Contains(strings.ToLower(a.Description), "disable") || strings.Contains(strings.ToLower(a.Description), "unsandboxed") {
			t.Errorf("alternative suggests leaving the sandbox: %+v", a)
		}
	}
	// Without --json: one plain line, and the child's status unchanged.
	r = wrun(t, runOpts{dir: ws}, "--", "sh", "-c", "echo x > "+outside)
	if r.code != 2 || !strings.Contains(r.stderr, "wrun: denied create "+outside) || !strings.Contains(r.stderr, "Try:") {
		t.Errorf("plain words:\n%s", r)
	}
	// A run that is denied nothing writes no request.
	file := filepath.Join(workspace(t), "req.json")
	s, req, _ = runJSON(t, runOpts{dir: ws}, "--escalation-file", file, "--", "true")
	if req != nil || exists(file) {
		t.Errorf("a request for a run that was denied nothing")
	}
	_, _, _ = runJSON(t, runOpts{dir: ws}, "--escalation-file", file, "--", "sh", "-c", "echo x > "+outside)
	if err := validateRequest([]byte(mustRead(t, file))); err != nil {
		t.Errorf("--escalation-file: %v", err)
	}
}

// TestRegistryWriteUnderVerifyOffersTheCache: a shell's write into the
// cargo registry is offered the registry (the narrowest widening), not
// `cargo fetch` first, which would leave this write refused.
func TestRegistryWriteUnderVerifyOffersTheCache(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	home := workspace(t)
	reg := filepath.Join(home, ".cargo", "registry")
	if err := os.MkdirAll(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	o := runOpts{dir: ws, env: []string{"HOME=" + home, "CARGO_HOME=" + filepath.Join(home, ".cargo")}}
	// Control: without wrun the write succeeds.
	if got := bare(t, o, "write", filepath.Join(reg, "control")); got != "ok" {
		t.Fatalf("control: %s", got)
	}
	_, req, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", "echo x > ~/.cargo/registry/x")
	if req == nil || len(req.Denials) != 1 {
		t.Fatalf("want one denial:\n%s", r)
	}
	d := req.Denials[0]
	if d.WithheldBy.Field != "shell" || d.WithheldBy.Rule != "tool-cache" || kinds(d)[0] != escalate.KindAllowWrite ||
		strings.Join(d.Alternatives[0].Args, " ") != "--allow-write "+reg || strings.Contains(d.Summary, "cargo fetch") {
		t.Errorf("want --allow-write %s first, and no cargo fetch: %+v", reg, d)
	}
	if exists(filepath.Join(reg, "x")) {
		t.Fatal("the registry was written")
	}
}

func TestNetworkDenialNamesTheGrantField(t *testing.T) {
	ws := workspace(t)
	addr, _ := listen(t)
	_, req, r := runJSON(t, runOpts{dir: ws}, "--grant", "verify,network=off", "--", bins.probe, "tcp", addr)
	if req == nil || len(req.Denials) != 1 {
		t.Fatalf("want one denial:\n%s", r)
	}
	d := req.Denials[0]
	if d.Op != "socket" || d.Addr != "AF_INET" || d.WithheldBy.Field != "network" {
		t.Errorf("denial %+v", d)
	}
	found := false
	for _, a := range d.Alternatives {
		if a.Kind == "grant" && strings.Contains(a.Grant, "network=on") {
			found = true
		}
	}
	if !found {
		t.Errorf("want a network=on alternative: %+v", d.Alternatives)
	}
}

func TestProtectedPathHasNoWideningAlternative(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	newRepo(t, ws)
	_, req, r := runJSON(t, runOpts{dir: ws}, "--grant", "full", "--", "sh", "-c", "echo evil > .git/hooks/pre-commit")
	if req == nil || len(req.Denials) != 1 {
		t.Fatalf("want one denial:\n%s", r)
	}
	for _, a := range req.Denials[0].Alternatives {
		if a.Kind != "ask-parent" {
			t.Errorf("a protected path got a widening alternative: %+v", a)
		}
	}
}

func TestApproverWidensAndTheRetrySucceeds(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outDir := workspace(t)
	target := filepath.Join(outDir, "built.txt")
	approver := filepath.Join(workspace(t), "approve.sh")
	log := filepath.Join(workspace(t), "seen.json")
	mustWrite(t, approver, "#!/bin/sh\ncat > "+log+"\necho '{\"decision\": \"approve\"}'\n")
	os.Chmod(approver, 0o755)

	// Control: the first run alone is denied and leaves nothing.
	r := wrun(t, runOpts{dir: ws}, "--", "sh", "-c", "echo ok > "+target)
	if r.code == 0 || exists(target) {
		t.Fatalf("control: %s", r)
	}
	s, req, r := runJSON(t, runOpts{dir: ws}, "--on-denial=retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo ok > "+target)
	if req == nil || s.Decision == nil || !s.Decision.Approved || !s.Decision.Retried || s.Retry == nil {
		t.Fatalf("want an approved retry:\n%s", r)
	}
	if r.code != 0 || s.Retry.ExitCode != 0 || s.ExitCode != 0 || mustRead(t, target) != "ok\n" {
		t.Fatalf("the retry did not succeed: exit %d\n%s", r.code, r)
	}
	if err := validateRequest([]byte(mustRead(t, log))); err != nil {
		t.Errorf("the approver got an invalid request: %v", err)
	}
	if !strings.Contains(strings.Join(s.Decision.Args, " "), "--allow-write "+outDir) {
		t.Errorf("want the narrowest widening (--allow-write %s), got %v", outDir, s.Decision.Args)
	}
}

func TestApproverGarbageIsADenial(t *testing.T) {
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "x")
	s, _, r := runJSON(t, runOpts{dir: ws}, "--on-denial=retry", "--retry-safe", "--approver", "echo sure", "--", "sh", "-c", "echo x > "+outside)
	if s.Decision == nil || s.Decision.Approved || s.Retry != nil || exists(outside) {
		t.Fatalf("a non-JSON answer must be a denial:\n%s", r)
	}
}

func TestNestedCeilingForbidsTheWidening(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "x")
	approver := `echo '{"decision": "approve"}'`
	// The outer run's ceiling is inspect; the nested wrun inherits it.
	r := wrun(t, runOpts{dir: ws}, "--grant", "inspect", "--ceiling", "inspect", "--",
		// Inside another wrun the outer one mediates: a nested run may be
		// refused what only its own mediation would hold (--best-effort).
		bins.wrun, "--best-effort", "--json", "--on-denial=retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo x > "+outside)
	var s summary
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatalf("%v\n%s", err, r)
			}
		}
	}
	var req escalate.Request
	if err := json.Unmarshal(s.Request, &req); err != nil || len(req.Denials) != 1 {
		t.Fatalf("want one denial: %v\n%s", err, r)
	}
	if req.Ceiling != "files=read,shell=inspect,network=off,desktop=off" {
		t.Errorf("the nested run's ceiling is %q", req.Ceiling)
	}
	for _, a := range req.Denials[0].Alternatives {
		if (a.Kind == "allow-write" || a.Kind == "grant") && a.WithinCeiling {
			t.Errorf("alternative %+v is within an inspect ceiling", a)
		}
	}
	if s.Decision == nil || s.Decision.Approved || exists(outside) {
		t.Fatalf("a widening beyond the ceiling was approved:\n%s", r)
	}
}

func TestInferredDenialsWithoutTheObserver(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "x")
	_, req, r := runJSON(t, runOpts{dir: ws}, "--observe=off", "--", "sh", "-c", "echo x > "+outside)
	if exists(outside) {
		t.Fatal("the kernel did not refuse without the observer")
	}
	if req == nil || len(req.Denials) != 1 || req.Denials[0].Evidence != "inferred" || req.Denials[0].Path != outside {
		t.Fatalf("want one inferred denial of %s:\n%s", outside, r)
	}
}
