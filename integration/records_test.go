//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/internal/schematest"
	"github.com/wrun-dev/wrun/receipt"
	"github.com/wrun-dev/wrun/roster"
	runpkg "github.com/wrun-dev/wrun/run"
)

// records are one test's own config, state and runtime directories, so
// that its receipts and roster are its own.
type records struct {
	state, config, runtime string
}

func newRecords(t *testing.T) records {
	t.Helper()
	base := workspace(t)
	r := records{state: filepath.Join(base, "state"), config: filepath.Join(base, "config"), runtime: filepath.Join(base, "run")}
	for _, d := range []string{r.state, r.config, r.runtime} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r records) env() []string {
	return []string{"XDG_STATE_HOME=" + r.state, "XDG_CONFIG_HOME=" + r.config, "XDG_RUNTIME_DIR=" + r.runtime}
}

func (r records) receiptsFile() string { return filepath.Join(r.state, "wrun", "receipts.jsonl") }
func (r records) rosterDir() string    { return filepath.Join(r.runtime, "wrun") }

// receipts reads the test's receipts file, checking every line against
// the published schema and every request in it against the request's.
func (r records) receipts(t *testing.T) []receipt.Receipt {
	t.Helper()
	schema, err := os.ReadFile("../receipt/schema/receipt.v3.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(r.receiptsFile())
	if err != nil {
		t.Fatal(err)
	}
	var out []receipt.Receipt
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if err := schematest.Validate(schema, line); err != nil {
			t.Fatalf("receipt line %d does not match its schema: %v\n%s", i+1, err, line)
		}
		var raw struct {
			Request json.RawMessage `json:"request"`
		}
		_ = json.Unmarshal(line, &raw)
		if len(raw.Request) > 0 {
			if err := validateRequest(raw.Request); err != nil {
				t.Fatalf("receipt line %d: its request does not match the request schema: %v", i+1, err)
			}
		}
		var rc receipt.Receipt
		if err := json.Unmarshal(line, &rc); err != nil {
			t.Fatal(err)
		}
		out = append(out, rc)
	}
	return out
}

// TestReceiptsFieldByField: a passing, a failing, a signalled and a denied
// run each leave one receipt saying what happened.
func TestReceiptsFieldByField(t *testing.T) {
	requireABI(t, 1)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	before := time.Now().Add(-time.Second)
	runs := []struct {
		args []string
		code int
	}{
		{[]string{"--role", "scout", "--model", "m-1", "--", "true"}, 0},
		{[]string{"--grant", "verify,network=off", "--", "sh", "-c", "exit 3"}, 3},
		{[]string{"--", "sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"--", "sh", "-c", "echo x > " + filepath.Join(ws, "new")}, 2},
	}
	for _, rn := range runs {
		if r := wrun(t, o, rn.args...); r.code != rn.code {
			t.Fatalf("wrun %v: %s (want exit %d)", rn.args, r, rn.code)
		}
	}
	rs := rec.receipts(t)
	if len(rs) != len(runs) {
		t.Fatalf("%d receipts for %d runs", len(rs), len(runs))
	}
	ids := map[string]bool{}
	for i, r := range rs {
		if ids[r.ID] || r.ID == "" {
			t.Errorf("receipt %d: id %q not unique", i, r.ID)
		}
		ids[r.ID] = true
		if r.Start.Before(before) || r.End.Before(r.Start) || r.DurationMS != r.End.Sub(r.Start).Milliseconds() || r.PID <= 1 {
			t.Errorf("receipt %d: times %v..%v (%dms), pid %d", i, r.Start, r.End, r.DurationMS, r.PID)
		}
		if r.Workdir != ws || r.ExitCode != runs[i].code {
			t.Errorf("receipt %d: workdir %s exit %d", i, r.Workdir, r.ExitCode)
		}
		if want := runs[i].args[slicesIndex(runs[i].args, "--")+1:]; strings.Join(r.Argv, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("receipt %d: argv %q, want %q", i, r.Argv, want)
		}
		if r.Enforcement.Sandbox != "landlock" || r.Enforcement.LandlockABI != bins.features.LandlockABI || r.Enforcement.Summary == "" || r.Enforcement.Degraded {
			t.Errorf("receipt %d: enforcement %+v", i, r.Enforcement)
		}
		if r.CeilingSource == "" || r.GrantSource == "" {
			t.Errorf("receipt %d: sources %q %q", i, r.GrantSource, r.CeilingSource)
		}
	}
	pass, fail, sig, denied := rs[0], rs[1], rs[2], rs[3]
	if pass.Role != "scout" || pass.Model != "m-1" || pass.Thinking != "low" || pass.Grant != "files=read,shell=inspect,network=off,desktop=off" ||
		pass.GrantSource != "role scout (built-in)" || len(pass.Denials) != 0 || pass.Request != nil || pass.Signal != 0 {
		t.Errorf("passing run: %+v", pass)
	}
	if fail.Grant != "files=read,shell=verify,network=off,desktop=off" || fail.GrantSource != "flag --grant" || fail.Role != "" || fail.Signal != 0 {
		t.Errorf("failing run: %+v", fail)
	}
	if sig.Signal != 15 {
		t.Errorf("signalled run: signal %d", sig.Signal)
	}
	if denied.Request == nil || len(denied.Denials) == 0 {
		t.Fatalf("denied run: no denial recorded: %+v", denied)
	}
	d := denied.Denials[0]
	if d.Kind != "asked" || d.Path != filepath.Join(ws, "new") || d.Evidence == "" || !strings.HasPrefix(d.Summary, "wrun: denied") || d.Attempt != 0 {
		t.Errorf("denied run: denial %+v", d)
	}
	// Environment values are never recorded.
	if b, _ := os.ReadFile(rec.receiptsFile()); bytes.Contains(b, []byte(rec.config)) {
		t.Errorf("the receipts hold an environment value (XDG_CONFIG_HOME)")
	}
	// The file is the user's only.
	fi, _ := os.Stat(rec.receiptsFile())
	di, _ := os.Stat(filepath.Dir(rec.receiptsFile()))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v in %v, want 0600 in 0700", fi.Mode(), di.Mode())
	}
	// wrun receipts --denied answers what was refused; show tells one.
	r := wrun(t, o, "receipts", "--denied")
	if r.code != 0 || !strings.Contains(r.stdout, denied.ID) || strings.Contains(r.stdout, pass.ID) || !strings.Contains(r.stdout, filepath.Join(ws, "new")) {
		t.Errorf("receipts --denied:\n%s", r)
	}
	r = wrun(t, o, "receipts", "show", denied.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "request:") || !strings.Contains(r.stdout, "denied:") {
		t.Errorf("receipts show:\n%s", r)
	}
	r = wrun(t, o, "receipts", "--last", "2", "--json")
	var last []receipt.Receipt
	if err := json.Unmarshal([]byte(r.stdout), &last); err != nil || len(last) != 2 || last[1].ID != denied.ID {
		t.Errorf("receipts --last 2 --json: %v\n%s", err, r)
	}
	// --no-receipt writes none; --receipt-file writes elsewhere.
	wrun(t, o, "--no-receipt", "--", "true")
	other := filepath.Join(workspace(t), "r.jsonl")
	wrun(t, o, "--receipt-file", other, "--", "true")
	if n := len(rec.receipts(t)); n != len(runs) {
		t.Errorf("--no-receipt / --receipt-file wrote to the default file: %d receipts", n)
	}
	if rs, bad, err := receipt.Read(other); err != nil || bad != 0 || len(rs) != 1 {
		t.Errorf("--receipt-file: %d receipts, %d bad, %v", len(rs), bad, err)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestReceiptOfRetriedEscalation: the decision and both attempts are in
// the receipt.
func TestReceiptOfRetriedEscalation(t *testing.T) {
	requireABI(t, 3)
	rec := newRecords(t)
	ws := workspace(t)
	target := filepath.Join(workspace(t), "out")
	approver := `cat >/dev/null; echo '{"decision": "approve"}'`
	r := wrun(t, runOpts{dir: ws, env: rec.env()}, "--on-denial=retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo ok > "+target+" || exit 1")
	if r.code != 0 {
		t.Fatalf("retry: %s", r)
	}
	rs := rec.receipts(t)
	if len(rs) != 1 {
		t.Fatalf("%d receipts, want 1 for the whole run", len(rs))
	}
	x := rs[0]
	if x.ExitCode != 0 || x.Decision == nil || !x.Decision.Approved || !x.Decision.Retried || len(x.Decision.Args) == 0 {
		t.Errorf("decision: %+v", x.Decision)
	}
	if len(x.Attempts) != 2 || x.Attempts[0].ExitCode != 1 || x.Attempts[0].Denials == 0 || x.Attempts[1].ExitCode != 0 {
		t.Errorf("attempts: %+v", x.Attempts)
	}
	if x.Request == nil || len(x.Denials) == 0 || x.Denials[0].Attempt != 0 || x.Denials[0].Kind != "asked" {
		t.Errorf("denials: %+v", x.Denials)
	}
}

// TestHundredConcurrentReceipts: 100 runs at once leave 100 whole lines.
func TestHundredConcurrentReceipts(t *testing.T) {
	requireABI(t, 1)
	rec := newRecords(t)
	ws := workspace(t)
	const n = 100
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bins.wrun, "--", "true")
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), rec.env()...)
			_ = cmd.Run()
			codes <- cmd.ProcessState.ExitCode()
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 0 {
			t.Fatalf("a run exited %d", c)
		}
	}
	rs := rec.receipts(t) // every line valid against the schema
	if len(rs) != n {
		t.Fatalf("%d receipts for %d runs", len(rs), n)
	}
	ids := map[string]bool{}
	for _, r := range rs {
		ids[r.ID] = true
	}
	if len(ids) != n {
		t.Errorf("%d distinct ids for %d runs", len(ids), n)
	}
}

// startWrun starts wrun in the background in its own process group
// (killed at cleanup) with stdin a pipe the test holds.
func startWrun(t *testing.T, o runOpts, args ...string) (*exec.Cmd, *os.File, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bins.wrun, args...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), o.env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stdin, cmd.Stderr = pr, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		pw.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		// The sandboxed child may have its own process group: end it too.
		reapArg(t, "wrun-records-test")
	})
	return cmd, pw, &errb
}

// waitRoster waits until the roster lists n runs, and returns them.
func waitRoster(t *testing.T, o runOpts, n int) []roster.Entry {
	t.Helper()
	var live []roster.Entry
	for range 200 {
		r := wrun(t, o, "roster", "--json")
		var l roster.Listing
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			t.Fatalf("roster --json: %v\n%s", err, r)
		}
		if err := schematest.Validate(roster.ListingSchema(), []byte(r.stdout)); err != nil {
			t.Fatalf("roster --json does not match its schema: %v\n%s", err, r.stdout)
		}
		live = l.Runs
		if len(live) == n {
			return live
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("the roster lists %d runs, want %d: %+v", len(live), n, live)
	return nil
}

// TestRosterLiveExitAndKill: the roster shows a live run with its role,
// grant and model, and drops it after it exits, and after wrun is
// SIGKILLed (its entry file left behind, recognisably dead).
func TestRosterLiveExitAndKill(t *testing.T) {
	requireABI(t, 1)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	if l := waitRoster(t, o, 0); len(l) != 0 {
		t.Fatal(l)
	}
	cmd, stdin, _ := startWrun(t, o, "--role", "worker", "--model", "m-2", "--thinking", "high", "--", "sh", "-c", "read x # wrun-records-test")
	live := waitRoster(t, o, 1)
	e := live[0]
	if e.PID != cmd.Process.Pid || e.Role != "worker" || e.Model != "m-2" || e.Thinking != "high" || e.Workdir != ws ||
		e.Grant != "files=write,shell=verify,network=off,desktop=off" || len(e.Writes) != 1 || e.Writes[0].Path != ws {
		t.Errorf("roster entry: %+v", e)
	}
	r := wrun(t, o, "roster")
	if !strings.Contains(r.stdout, strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(r.stdout, "worker") || !strings.Contains(r.stdout, "write") {
		t.Errorf("roster:\n%s", r)
	}
	stdin.Close() // the command ends
	waitRoster(t, o, 0)
	if ents, _ := filepath.Glob(filepath.Join(rec.rosterDir(), "*.json")); len(ents) != 0 {
		t.Errorf("entries left after exit: %v", ents)
	}

	// SIGKILL: wrun has no chance to remove its entry.
	cmd, _, _ = startWrun(t, o, "--grant", "write", "--", "sh", "-c", "read x # wrun-records-test")
	waitRoster(t, o, 1)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if err := syscall.Kill(cmd.Process.Pid, 0); err == syscall.ESRCH {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ents, _ := filepath.Glob(filepath.Join(rec.rosterDir(), "*.json")); len(ents) != 1 {
		t.Fatalf("after SIGKILL the entry file should remain (stale): %v", ents)
	}
	waitRoster(t, o, 0)
	// Nor does the stale entry block a writer.
	if r := wrun(t, o, "--grant", "write", "--", "true"); r.code != 0 {
		t.Errorf("a dead run's stale entry blocked a writer: %s", r)
	}
}

// TestConflictGuard: a second writer into a live run's workspace is
// refused naming the owner, through a symbolic link and a bind mount
// too; read-only runs and runs that both share are not; and of two
// writers starting at the same instant exactly one runs.
func TestConflictGuard(t *testing.T) {
	requireABI(t, 1)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	link := filepath.Join(workspace(t), "link")
	if err := os.Symlink(filepath.Join(ws, "sub"), link); err != nil {
		t.Fatal(err)
	}
	owner, stdin, _ := startWrun(t, o, "--role", "worker", "--", "sh", "-c", "read x # wrun-records-test")
	e := waitRoster(t, o, 1)[0]
	for _, tc := range []struct {
		name string
		o    runOpts
		args []string
	}{
		{"same workspace", o, []string{"--grant", "write", "--", "true"}},
		{"inside it", runOpts{dir: filepath.Join(ws, "sub"), env: rec.env()}, []string{"--grant", "write", "--", "true"}},
		{"--allow-write into it", runOpts{dir: workspace(t), env: rec.env()}, []string{"--allow-write", filepath.Join(ws, "sub"), "--", "true"}},
		{"through a symbolic link", runOpts{dir: link, env: rec.env()}, []string{"--grant", "write", "--", "true"}},
		{"only the second shares", o, []string{"--grant", "write", "--share-workdir", "--", "true"}},
	} {
		r := wrun(t, tc.o, tc.args...)
		if r.code != 125 || !strings.Contains(r.stderr, e.ID) || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", owner.Process.Pid)) || !strings.Contains(r.stderr, "worker") {
			t.Errorf("%s: not refused naming the owner:\n%s", tc.name, r)
		}
	}
	// Read-only runs are never blocked; nor is a writer elsewhere.
	if r := wrun(t, o, "--grant", "verify", "--", "true"); r.code != 0 {
		t.Errorf("a read-only run was blocked: %s", r)
	}
	if r := wrun(t, runOpts{dir: workspace(t), env: rec.env()}, "--grant", "write", "--", "true"); r.code != 0 {
		t.Errorf("a writer elsewhere was blocked: %s", r)
	}
	// A bind mount of the workspace (needs mount rights).
	mnt := workspace(t)
	if err := syscall.Mount(ws, mnt, "", syscall.MS_BIND, ""); err == nil {
		t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
		if r := wrun(t, runOpts{dir: filepath.Join(mnt, "sub"), env: rec.env()}, "--grant", "write", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, e.ID) {
			t.Errorf("through a bind mount: not refused:\n%s", r)
		}
	} else {
		t.Logf("bind mount case skipped: %v", err)
	}
	stdin.Close()
	waitRoster(t, o, 0)
	// Control: with the owner gone, the same writer runs.
	if r := wrun(t, o, "--grant", "write", "--", "true"); r.code != 0 {
		t.Errorf("control: %s", r)
	}
	// Both share: both run.
	_, stdin2, _ := startWrun(t, o, "--grant", "write", "--share-workdir", "--", "sh", "-c", "read x # wrun-records-test")
	waitRoster(t, o, 1)
	if r := wrun(t, o, "--grant", "write", "--share-workdir", "--", "true"); r.code != 0 {
		t.Errorf("both share: refused: %s", r)
	}
	stdin2.Close()
	waitRoster(t, o, 0)

	// The same instant: of several writers started together exactly one
	// holds the workspace; the others are refused.
	const n = 4
	var wg sync.WaitGroup
	results := make(chan result, n)
	gate := filepath.Join(workspace(t), "gate")
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bins.wrun, "--grant", "write", "--", "sh", "-c", "sleep 1 # wrun-records-test")
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), rec.env()...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			for !exists(gate) {
				time.Sleep(time.Millisecond)
			}
			_ = cmd.Run()
			results <- result{stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	mustWrite(t, gate, "")
	wg.Wait()
	close(results)
	ran, refused := 0, 0
	for r := range results {
		switch {
		case r.code == 0:
			ran++
		case r.code == 125 && strings.Contains(r.stderr, "holds for writing"):
			refused++
		default:
			t.Errorf("unexpected: %s", r)
		}
	}
	if ran != 1 || refused != n-1 {
		t.Errorf("same instant: %d ran, %d refused; want 1 and %d", ran, refused, n-1)
	}
}

// TestRecordsHiddenFromSandbox: a sandboxed child can neither read nor
// write the receipts or the roster, under any grant, desktop included;
// the same acts succeed without the sandbox (the control).
func TestRecordsHiddenFromSandbox(t *testing.T) {
	requireABI(t, 1)
	escapeAttempt(t)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	// A live run, so that the roster has an entry; and one receipt.
	wrun(t, o, "--", "true")
	_, stdin, _ := startWrun(t, o, "--", "sh", "-c", "read x # wrun-records-test")
	live := waitRoster(t, o, 1)
	entry := filepath.Join(rec.rosterDir(), live[0].ID+".json")
	for _, act := range [][]string{
		{"read", rec.receiptsFile()},
		{"append", rec.receiptsFile()},
		{"read", entry},
		{"write", filepath.Join(rec.rosterDir(), "planted.json")},
		{"write", filepath.Join(filepath.Dir(rec.receiptsFile()), "planted")},
	} {
		for _, g := range []string{"inspect", "full", "full,desktop=on"} {
			got := probe(t, o, g, act...)
			if !strings.HasPrefix(got, "err EACCES") && !strings.HasPrefix(got, "err EROFS") {
				t.Errorf("%s %v under %s: %q, want EACCES or EROFS", act[0], act[1], g, got)
			}
		}
		if act[0] == "write" {
			continue // the control below would plant it
		}
		// The control: the same act succeeds without the sandbox (the
		// file is restored after an append).
		keep, err := os.ReadFile(act[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := bare(t, o, act...); got != "ok" {
			t.Errorf("control: %v without the sandbox: %q", act, got)
		}
		if err := os.WriteFile(act[1], keep, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Names can be listed, as in every hidden directory; an entry's
	// content cannot be read.
	r := wrun(t, o, "--grant", "full", "--", "cat", entry)
	if r.code == 0 || strings.Contains(r.stdout, live[0].ID) {
		t.Errorf("a roster entry could be read:\n%s", r)
	}
	if r := run(t, o, "cat", entry); r.code != 0 || !strings.Contains(r.stdout, live[0].ID) {
		t.Errorf("control: cat: %s", r)
	}
	stdin.Close()
	waitRoster(t, o, 0)
	if rs := rec.receipts(t); len(rs) < 2 {
		t.Errorf("%d receipts", len(rs))
	}
}

// TestConfigAtRunTime: the user config and a repository's .wrun.toml set
// a run's grant in that order, the repository only narrowing; a file that
// tries to widen, or is malformed, stops wrun with one line naming file,
// line and key.
func TestConfigAtRunTime(t *testing.T) {
	requireABI(t, 1)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	userFile := filepath.Join(rec.config, "wrun", "config.toml")
	mustWrite(t, userFile, "[defaults]\ngrant = \"write\"\n\n[models.small]\nthinking = [\"off\", \"low\"]\n\n[roles.cheap]\ngrant = \"inspect\"\nmodel = \"small\"\nthinking = \"low\"\n")
	target := filepath.Join(ws, "made")
	// The user's default grant: write. The workspace is writable.
	if r := wrun(t, o, "--", "sh", "-c", "echo x > "+target); r.code != 0 {
		t.Fatalf("user config grant=write: %s", r)
	}
	// The repository narrows it to inspect: the same write is denied.
	mustWrite(t, filepath.Join(ws, ".wrun.toml"), "[defaults]\ngrant = \"inspect\"\n\n[roles.docs]\ndescription = \"reads\"\ngrant = \"inspect\"\n")
	if r := wrun(t, o, "--", "sh", "-c", "echo y > "+target); r.code == 0 {
		t.Fatalf("repository grant=inspect did not narrow: %s", r)
	}
	// A flag overrides both, within the ceiling.
	if r := wrun(t, o, "--grant", "write", "--", "sh", "-c", "echo z > "+target); r.code != 0 {
		t.Fatalf("--grant write over the repository's inspect: %s", r)
	}
	rs := rec.receipts(t)
	if len(rs) != 3 || rs[0].GrantSource != "user config "+userFile || !strings.HasPrefix(rs[1].GrantSource, "repository ") || rs[2].GrantSource != "flag --grant" {
		t.Errorf("grant sources: %+v", rs)
	}
	r := wrun(t, o, "config")
	if r.code != 0 || !strings.Contains(r.stdout, "(narrowing)") || !strings.Contains(r.stdout, userFile) {
		t.Errorf("wrun config:\n%s", r)
	}
	r = wrun(t, o, "roles", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"name":"docs"`) || !strings.Contains(r.stdout, `"name":"cheap"`) {
		t.Errorf("wrun roles --json:\n%s", r)
	}
	// The model's thinking levels are enforced.
	r = wrun(t, o, "--role", "cheap", "--thinking", "high", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "small supports only off, low") {
		t.Errorf("unsupported thinking level: %s", r)
	}
	// A repository that tries to widen is refused, naming file, line, key.
	mustWrite(t, filepath.Join(ws, ".wrun.toml"), "# widen\n[defaults]\ngrant = \"full\"\n")
	r = wrun(t, o, "--", "true")
	want := "wrun: " + filepath.Join(ws, ".wrun.toml") + ":3: defaults.grant: full would widen the default grant (write, user config " + userFile + ")"
	if r.code != 125 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("widening repository file:\n%s\nwant %s...", r, want)
	}
	// A malformed user config: one line, file:line: key.
	os.Remove(filepath.Join(ws, ".wrun.toml"))
	mustWrite(t, userFile, "[defaults]\ngrant = \"write\"\nceiling = \"sideways\"\n")
	r = wrun(t, o, "--", "true")
	if r.code != 125 || !strings.HasPrefix(r.stderr, "wrun: "+userFile+":3: defaults.ceiling: bad grant") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("malformed user config:\n%s", r)
	}
}

// TestConductor: its own directory is writable without asking, the
// workspace is not, and inside a git repository it gets no shell.
func TestConductor(t *testing.T) {
	requireABI(t, 1)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	own := filepath.Join(rec.state, "wrun", "conductor", "plan.md")
	r := wrun(t, o, "--role", "conductor", "--on-denial", "report", "--", "sh", "-c", "echo plan > "+own+" && echo x > "+filepath.Join(ws, "f"))
	if r.code == 0 || mustRead(t, own) != "plan\n" || exists(filepath.Join(ws, "f")) {
		t.Errorf("conductor: own dir writable, workspace not:\n%s", r)
	}
	repo := workspace(t)
	gitCmd(t, repo, "init", "-q")
	r = wrun(t, runOpts{dir: repo, env: rec.env()}, "--role", "conductor", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "no shell inside a git repository") || !strings.Contains(r.stderr, "--role worker") {
		t.Errorf("conductor in a git repository:\n%s", r)
	}
	// Control: a worker runs there.
	if r := wrun(t, runOpts{dir: repo, env: rec.env()}, "--role", "worker", "--", "true"); r.code != 0 {
		t.Errorf("control: worker in a git repository: %s", r)
	}
	// A write into a git repository is never approved by a command for
	// the conductor; the same approval of a write elsewhere is.
	approver := `cat >/dev/null; echo '{"decision": "approve"}'`
	inRepo := filepath.Join(repo, "notes")
	r = wrun(t, o, "--role", "conductor", "--on-denial", "retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo x > "+inRepo)
	if r.code == 0 || exists(inRepo) || !strings.Contains(r.stderr, "never approved automatically") {
		t.Errorf("conductor: a write into a git repository was approved:\n%s", r)
	}
	elsewhere := filepath.Join(workspace(t), "notes")
	r = wrun(t, o, "--role", "conductor", "--on-denial", "retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo x > "+elsewhere)
	if r.code != 0 || !exists(elsewhere) {
		t.Errorf("control: conductor's approved write outside a repository:\n%s", r)
	}
}

// runSummary is what the records tests read of a --json-fd summary.
type runSummary struct {
	RunID    string            `json:"run_id"`
	ExitCode int               `json:"exit_code"`
	Request  *escalate.Request `json:"request"`
	Decision *struct {
		Approved          bool   `json:"approved"`
		Reason            string `json:"reason"`
		Scope             string `json:"scope"`
		SessionRemembered bool   `json:"session_remembered"`
		Retried           bool   `json:"retried"`
	} `json:"decision"`
}

// runWithSummary runs wrun with its summary on descriptor 3 and returns
// the summary, checked against its schema (and its request against the
// request's), and the raw summary.
func runWithSummary(t *testing.T, o runOpts, args ...string) (runSummary, []byte, result) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o.files = append(o.files, f)
	r := wrun(t, o, append([]string{"--json-fd", "3"}, args...)...)
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := validateSummary(b); err != nil {
		t.Fatalf("the summary is not valid against its schema: %v\n%s\n%s", err, b, r)
	}
	var s runSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s, b, r
}

// TestRunIDJoinsSummaryReceiptRoster: a run's summary names the id its
// roster entry carries while it runs and its receipt carries after, and
// its request names it too; two runs have two ids.
func TestRunIDJoinsSummaryReceiptRoster(t *testing.T) {
	requireABI(t, 3)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	gate := filepath.Join(t.TempDir(), "gate")
	f, err := os.Create(filepath.Join(t.TempDir(), "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bins.wrun, wrunArgs(t, o, "--json-fd", "3", "--role", "scout", "--", "sh", "-c",
		"while [ ! -e "+gate+" ]; do sleep 0.02; done; echo x > "+filepath.Join(ws, "new"))...)
	cmd.Dir, cmd.Env, cmd.ExtraFiles = ws, append(os.Environ(), o.env...), []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	live := waitRoster(t, o, 1)
	mustWrite(t, gate, "")
	err = cmd.Wait()
	b, _ := os.ReadFile(f.Name())
	if err := validateSummary(b); err != nil {
		t.Fatalf("the summary is not valid against its schema: %v\n%s", err, b)
	}
	var s runSummary
	if json.Unmarshal(b, &s) != nil || err == nil || s.Request == nil {
		t.Fatalf("want a failure with a request (%v):\n%s", err, b)
	}
	rs := rec.receipts(t)
	if len(rs) != 1 {
		t.Fatalf("%d receipts", len(rs))
	}
	if s.RunID == "" || live[0].ID != s.RunID || rs[0].ID != s.RunID || s.Request.RunID != s.RunID {
		t.Errorf("run ids: summary %q, roster %q, receipt %q, request %q: want one id", s.RunID, live[0].ID, rs[0].ID, s.Request.RunID)
	}
	// The control: another run, another id.
	s2, _, _ := runWithSummary(t, o, "--", "true")
	if s2.RunID == "" || s2.RunID == s.RunID {
		t.Errorf("two runs share the id %q", s.RunID)
	}
	if rs = rec.receipts(t); len(rs) != 2 || rs[1].ID != s2.RunID {
		t.Errorf("the second receipt's id is not the second summary's %q", s2.RunID)
	}
}

// TestEveryJSONOutputValidates: every JSON document wrun prints for a
// harness matches its published schema (an off-the-shelf validator,
// internal/schematest): the summary of a run that succeeded with denials,
// of one that failed with a request, of a retry, of a refused run;
// explain --json, doctor --json, roster --json (waitRoster checks it).
// The control: the same documents with their schema member changed, or a
// required member removed, are refused.
func TestEveryJSONOutputValidates(t *testing.T) {
	requireABI(t, 3)
	rec := newRecords(t)
	ws := workspace(t)
	o := runOpts{dir: ws, env: rec.env()}
	outside := workspace(t)
	var docs [][]byte
	for _, args := range [][]string{
		{"--", "sh", "-c", "echo x > " + filepath.Join(ws, "new") + " 2>/dev/null; true"},
		{"--", "sh", "-c", "echo x > " + filepath.Join(ws, "new")},
		{"--on-denial=retry", "--retry-safe", "--approver", `echo '{"decision": "approve"}'`, "--", "sh", "-c", "echo x > " + filepath.Join(outside, "x")},
		{"--grant", "nonsense", "--", "true"},
	} {
		_, b, r := runWithSummary(t, o, args...)
		if len(b) == 0 {
			t.Fatalf("no summary for %q:\n%s", args, r)
		}
		docs = append(docs, b)
	}
	if !bytes.Contains(docs[0], []byte(`"denials_ignored"`)) || !bytes.Contains(docs[1], []byte(`"request"`)) ||
		!bytes.Contains(docs[2], []byte(`"attempts"`)) || !bytes.Contains(docs[3], []byte(`"error"`)) {
		t.Errorf("the runs did not produce the documents meant:\n%s", bytes.Join(docs, []byte("\n")))
	}
	checkDoc := func(what string, schema, doc []byte) {
		t.Helper()
		if err := validate(schema, doc); err != nil {
			t.Errorf("%s does not match its schema: %v\n%s", what, err, doc)
		}
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		m["schema"] = "https://wrun.dev/schema/something-else.v1.json"
		bad, _ := json.Marshal(m)
		if validate(schema, bad) == nil {
			t.Errorf("control: %s with another schema id validates", what)
		}
		delete(m, "version")
		m["schema"] = nil
		delete(m, "schema")
		bad, _ = json.Marshal(m)
		if validate(schema, bad) == nil {
			t.Errorf("control: %s without its schema and version validates", what)
		}
	}
	for i, d := range docs {
		checkDoc(fmt.Sprintf("summary %d", i), runpkg.SummarySchema(), d)
	}
	schemaFile := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r := wrun(t, o, "explain", "--grant", "verify", "--json")
	checkDoc("explain --json", schemaFile("../cmd/wrun/schema/explain.v1.json"), []byte(r.stdout))
	r = wrun(t, o, "doctor", "--json")
	checkDoc("doctor --json", schemaFile("../cmd/wrun/schema/doctor.v1.json"), []byte(r.stdout))
	r = wrun(t, o, "roster", "--json")
	checkDoc("roster --json", roster.ListingSchema(), []byte(r.stdout))
}

// TestCeilingSourceSaysWhere: a request's ceiling_source names where the
// ceiling came from: nobody (default, the control), the user's
// config.toml, --ceiling, --ceiling narrowed by config.toml, and an
// enclosing run's WRUN_GRANT narrowing it; the ceiling's paths come along
// as ceiling_write.
func TestCeilingSourceSaysWhere(t *testing.T) {
	requireABI(t, 3)
	rec := newRecords(t)
	ws := workspace(t)
	deny := []string{"--", "sh", "-c", "echo x > " + filepath.Join(ws, "new")}
	source := func(o runOpts, args ...string) *escalate.Request {
		t.Helper()
		s, _, r := runWithSummary(t, o, append(args, deny...)...)
		if s.Request == nil {
			t.Fatalf("no request:\n%s", r)
		}
		return s.Request
	}
	o := runOpts{dir: ws, env: rec.env()}
	if req := source(o); req.CeilingSource != "default" || !slices.Equal(req.CeilingWrite, []string{"/"}) {
		t.Errorf("no ceiling set: %q %q, want default [/]", req.CeilingSource, req.CeilingWrite)
	}
	if req := source(o, "--ceiling", "write,allow-write=/srv:/tmp"); req.CeilingSource != "--ceiling" || !slices.Equal(req.CeilingWrite, []string{"/srv", "/tmp"}) {
		t.Errorf("--ceiling: %q %q", req.CeilingSource, req.CeilingWrite)
	}
	mustWrite(t, filepath.Join(rec.config, "wrun", "config.toml"), "[defaults]\nceiling = \"write,network=off,allow-write=/tmp\"\n")
	if req := source(o); req.CeilingSource != "config.toml" || req.Ceiling != "files=write,shell=verify,network=off,desktop=off" || !slices.Equal(req.CeilingWrite, []string{"/tmp"}) {
		t.Errorf("config.toml: %q %q %q", req.CeilingSource, req.Ceiling, req.CeilingWrite)
	}
	if req := source(o, "--ceiling", "inspect,allow-write=/tmp/x"); req.CeilingSource != "--ceiling" {
		t.Errorf("--ceiling within config.toml: %q", req.CeilingSource)
	}
	if req := source(o, "--ceiling", "full"); req.CeilingSource != "--ceiling narrowed by config.toml" {
		t.Errorf("--ceiling wider than config.toml: %q", req.CeilingSource)
	}
	nested := runOpts{dir: ws, env: append(rec.env(), "WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off")}
	if req := source(nested, "--ceiling", "write"); req.CeilingSource != "--ceiling narrowed by WRUN_GRANT" {
		t.Errorf("--ceiling inside a run of grant inspect: %q", req.CeilingSource)
	}
}

// TestSessionApprovals: with WRUN_SESSION set, an approval of scope
// "session" is remembered: the next run of the session is approved
// without asking; another session (the control) asks again; without a
// session the approval is refused, saying why. The command never sees the
// id, not even with --keep-env.
func TestSessionApprovals(t *testing.T) {
	requireABI(t, 3)
	rec := newRecords(t)
	ws := workspace(t)
	outside := workspace(t)
	calls := filepath.Join(t.TempDir(), "calls")
	approver := filepath.Join(t.TempDir(), "approver.sh")
	mustWrite(t, approver, "#!/bin/sh\ncat >/dev/null\necho asked >> "+calls+"\necho '{\"decision\": \"approve\", \"scope\": \"session\"}'\n")
	if err := os.Chmod(approver, 0o755); err != nil {
		t.Fatal(err)
	}
	asked := func() int { b, _ := os.ReadFile(calls); return strings.Count(string(b), "asked") }
	target := filepath.Join(outside, "x")
	args := []string{"--on-denial=retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo x > " + target}
	sess := func(id string) runOpts { return runOpts{dir: ws, env: append(rec.env(), "WRUN_SESSION="+id)} }

	s, _, r := runWithSummary(t, runOpts{dir: ws, env: rec.env()}, args...)
	if s.Decision == nil || s.Decision.Approved || !strings.Contains(s.Decision.Reason, "set WRUN_SESSION") || exists(target) {
		t.Fatalf("scope session without a session: want it refused, naming WRUN_SESSION:\n%s", r)
	}
	const id = "test-session-5c1e0a7b92d3"
	s, _, r = runWithSummary(t, sess(id), args...)
	if s.Decision == nil || !s.Decision.Approved || s.Decision.Scope != "session" || s.Decision.SessionRemembered || s.ExitCode != 0 || asked() != 2 {
		t.Fatalf("the first run of the session: want the approver asked and the retry to pass (asked %d):\n%s", asked(), r)
	}
	os.Remove(target)
	s, _, r = runWithSummary(t, sess(id), args...)
	if s.Decision == nil || !s.Decision.Approved || !s.Decision.SessionRemembered || s.ExitCode != 0 || asked() != 2 {
		t.Errorf("the second run of the session: want it approved from the session without asking (asked %d):\n%s", asked(), r)
	}
	os.Remove(target)
	s, _, r = runWithSummary(t, sess("another-session-77aa01"), args...)
	if s.Decision == nil || s.Decision.SessionRemembered || asked() != 3 {
		t.Errorf("control: another session was not asked (asked %d):\n%s", asked(), r)
	}
	for _, keep := range [][]string{nil, {"--keep-env", "WRUN_SESSION"}} {
		r = wrun(t, sess(id), append(keep, "--", "sh", "-c", "echo session=${WRUN_SESSION:-none}")...)
		if !strings.Contains(r.stdout, "session=none") || strings.Contains(r.stdout+r.stderr, id) {
			t.Errorf("the command saw the session id (%q):\n%s", keep, r)
		}
	}
	// A malformed id is refused before anything runs.
	if r = wrun(t, sess("short"), "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "WRUN_SESSION") {
		t.Errorf("a malformed session id: want 125 naming WRUN_SESSION:\n%s", r)
	}
}
