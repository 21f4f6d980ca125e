//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
	runpkg "github.com/wrun-dev/wrun/run"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// A live run: wrun with --events-fd 3, --json-fd 4 and, under hold,
// --control-fd 5, the test playing the harness over those descriptors.

// liveRun is one such run's outcome.
type liveRun struct {
	result
	events  [][]byte // the event lines, each validated
	summary []byte   // what --json-fd wrote
	// control are wrun's control lines, each validated.
	control []runpkg.ControlMessage
	took    time.Duration
}

// approverFunc answers an ask: the line to send (seq filled in by the
// driver unless raw), or nil to send nothing; close ends the channel.
type approverFunc func(ask runpkg.ControlMessage) (reply *runpkg.ControlMessage, close bool)

// runLive runs wrun args with the events stream and the summary on their
// own descriptors and, when approve is not nil, --on-denial=hold with the
// test answering on the control channel.
func runLive(t *testing.T, dir string, approve approverFunc, args ...string) liveRun {
	t.Helper()
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer evR.Close()
	sumF, err := os.CreateTemp(t.TempDir(), "summary")
	if err != nil {
		t.Fatal(err)
	}
	defer sumF.Close()
	files := []*os.File{evW, sumF}
	flags := []string{"--events-fd", "3", "--json-fd", "4"}
	var ours *os.File
	if approve != nil {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ours = os.NewFile(uintptr(fds[0]), "control")
		theirs := os.NewFile(uintptr(fds[1]), "control-wrun")
		defer theirs.Close()
		defer ours.Close()
		files = append(files, theirs)
		flags = append(flags, "--on-denial=hold", "--control-fd", "5")
	}
	argv := append([]string{bins.wrun}, wrunArgs(t, runOpts{dir: dir}, append(flags, args...)...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.ExtraFiles = files
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Cleanup on failure: wrun and everything it started is killed.
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	for _, f := range files {
		if f != sumF {
			f.Close() // wrun's copies now; ours would keep the channels open
		}
	}
	var out liveRun
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		sc := bufio.NewScanner(evR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			out.events = append(out.events, append([]byte(nil), sc.Bytes()...))
		}
	}()
	ctlDone := make(chan struct{})
	if ours != nil {
		go func() {
			defer close(ctlDone)
			var seq uint64
			sc := bufio.NewScanner(ours)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if err := validate(runpkg.ControlSchema(), sc.Bytes()); err != nil {
					t.Errorf("wrun's control line is not valid: %v\n%s", err, sc.Bytes())
				}
				var m runpkg.ControlMessage
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Errorf("wrun's control line: %v", err)
					continue
				}
				out.control = append(out.control, m)
				if m.Type != runpkg.ControlAsk {
					continue
				}
				reply, closeIt := approve(m)
				if closeIt {
					ours.Close()
					return
				}
				if reply == nil {
					continue
				}
				if reply.Schema == "" {
					seq++
					reply.Schema, reply.Version, reply.RunID, reply.Seq = runpkg.ControlSchemaID, runpkg.ControlVersion, m.RunID, seq
				}
				b, _ := json.Marshal(reply)
				if _, err := ours.Write(append(b, '\n')); err != nil {
					return
				}
			}
		}()
	} else {
		close(ctlDone)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v did not finish in 2 minutes", argv)
	}
	out.took = time.Since(start)
	<-evDone
	if ours != nil {
		ours.Close()
	}
	<-ctlDone
	out.result = result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	b, err := os.ReadFile(sumF.Name())
	if err != nil {
		t.Fatal(err)
	}
	out.summary = bytes.TrimSpace(b)
	if err := validateSummary(out.summary); err != nil {
		t.Errorf("--json-fd's summary not valid: %v\n%s", err, out.summary)
	}
	for _, ev := range out.events {
		if err := validate(runpkg.EventsSchema(), ev); err != nil {
			t.Errorf("event line not valid against events.v1.json: %v\n%s", err, ev)
		}
	}
	return out
}

// kinds are the events of the stream, in order.
func (r liveRun) kinds() []string {
	var out []string
	for _, ev := range r.events {
		var e struct{ Event string }
		_ = json.Unmarshal(ev, &e)
		out = append(out, e.Event)
	}
	return out
}

// event is the first event of kind k.
func (r liveRun) event(k string) map[string]json.RawMessage {
	for _, ev := range r.events {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(ev, &m)
		if string(m["event"]) == `"`+k+`"` {
			return m
		}
	}
	return nil
}

// decided is wrun's decided line for question q.
func (r liveRun) decided(q string) *runpkg.ControlMessage {
	for i := range r.control {
		if r.control[i].Type == runpkg.ControlDecided && r.control[i].ID == q {
			return &r.control[i]
		}
	}
	return nil
}

// approveKind approves the ask's first alternative of kind.
func approveKind(kind string) approverFunc {
	return func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		for _, alt := range ask.Request.Denials[0].Alternatives {
			if alt.Kind == kind {
				return &runpkg.ControlMessage{Type: runpkg.ControlApprove, ID: ask.ID, Alternative: alt.ID}, false
			}
		}
		return &runpkg.ControlMessage{Type: runpkg.ControlDeny, ID: ask.ID}, false
	}
}

// requireSupervisor skips a test of the live channels where wrun does not see
// the command's calls (a cell of the matrix without the mediation), which
// refuses hold (TestHoldRefusedWithoutMediation) and has no denials to
// send as they happen.
func requireSupervisor(t *testing.T) {
	t.Helper()
	requireABI(t, 1)
	if !linux.Mediates(matrixFeatures(runOpts{})) {
		t.Skip("no mediation here: --on-denial=hold is refused")
	}
}

// writesOutside is the command of the live tests: a line, a write
// beyond the grant, a line.
func writesOutside(target string) []string {
	return []string{"sh", "-c", `echo first; if echo data > "$1"; then echo wrote; else echo refused; fi; echo second`, "sh", target}
}

func TestEventsStream(t *testing.T) {
	requireSupervisor(t)
	ws, out := workspace(t), workspace(t)
	target := filepath.Join(out, "f.txt")
	r := runLive(t, ws, nil, append([]string{"--grant", "write", "--"}, writesOutside(target)...)...)
	if r.code != 0 || r.stdout != "first\nrefused\nsecond\n" {
		t.Fatalf("want the write refused and both lines:\n%s", r.result)
	}
	if got := strings.Join(r.kinds(), " "); got != "started denial exited" {
		t.Fatalf("events %q, want started denial exited:\n%s", got, bytes.Join(r.events, []byte("\n")))
	}
	var started struct {
		Grant, Sandbox string
		Degraded       *bool
		Seq            int
		RunID          string `json:"run_id"`
	}
	_ = json.Unmarshal(r.events[0], &started)
	if started.Grant == "" || started.Sandbox != "landlock" || started.Degraded == nil || started.Seq != 1 {
		t.Errorf("started: %s", r.events[0])
	}
	var den escalate.DeniedAct
	_ = json.Unmarshal(r.event("denial")["denial"], &den)
	if den.Op != "create" || den.Path != target || den.ID != "d1" || len(den.Alternatives) == 0 {
		t.Errorf("denial event: %+v", den)
	}
	// exited carries the summary itself: the same object --json-fd wrote.
	var fromEvent, fromFD any
	if err := json.Unmarshal(r.event("exited")["summary"], &fromEvent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(r.summary, &fromFD); err != nil {
		t.Fatalf("--json-fd: %v\n%s", err, r.summary)
	}
	a, _ := json.Marshal(fromEvent)
	b, _ := json.Marshal(fromFD)
	if !bytes.Equal(a, b) {
		t.Errorf("exited's summary differs from --json-fd's:\n%s\n%s", a, b)
	}
	var ids struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(r.summary, &ids)
	if ids.RunID != started.RunID || ids.RunID == "" {
		t.Errorf("run ids: events %q, summary %q", started.RunID, ids.RunID)
	}
}

func TestLiveChannelsNotInherited(t *testing.T) {
	requireSupervisor(t)
	ws := workspace(t)
	// The command looks for descriptors 3, 4 and 5 and tries to write
	// to them.
	probe := `for f in 3 4 5; do if [ -e /proc/self/fd/$f ]; then echo open $f; fi; (echo forged >&$f) 2>/dev/null && echo wrote $f; done; echo done`
	// Control: the same command given the descriptors directly sees them.
	sock, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(sock[0]), "a"), os.NewFile(uintptr(sock[1]), "b")
	defer a.Close()
	defer b.Close()
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	defer pw.Close()
	bare := run(t, runOpts{dir: ws, files: []*os.File{pw, pw, b}}, "sh", "-c", probe)
	if !strings.Contains(bare.stdout, "open 3") || !strings.Contains(bare.stdout, "wrote 5") {
		t.Fatalf("control: a command given descriptors 3-5 should see them:\n%s", bare)
	}
	r := runLive(t, ws, approveKind("allow-write"), "--grant", "write", "--", "sh", "-c", probe)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("the command saw or wrote wrun's channels:\n%s", r.result)
	}
	for _, ev := range r.events {
		if bytes.Contains(ev, []byte("forged")) {
			t.Errorf("the command's text reached the events stream: %s", ev)
		}
	}
	if bytes.Contains(r.summary, []byte("forged")) {
		t.Errorf("the command's text reached the summary")
	}
}

func TestBadEventsFD(t *testing.T) {
	ws := workspace(t)
	o := runOpts{dir: ws, bestEffort: true}
	for _, args := range [][]string{
		{"--events-fd", "9"},
		{"--events-fd", "2"},
		{"--control-fd", "9", "--on-denial=hold"},
		{"--on-denial=hold"},
	} {
		r := wrun(t, o, append(append(args, "--grant", "write"), "--", "echo", "ran")...)
		if r.code != 125 || !strings.Contains(r.stderr, "wrun:") {
			t.Errorf("%v: want a refusal with 125:\n%s", args, r)
		}
		if strings.Contains(r.stdout, "ran") {
			t.Fatalf("%v: the command ran", args)
		}
	}
	// Control: without the bad flag the command runs.
	if r := wrun(t, o, "--grant", "write", "--", "echo", "ran"); r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("control: %s", r)
	}
}

func TestHoldApprovedLive(t *testing.T) {
	requireSupervisor(t)
	ws, out := workspace(t), workspace(t)
	target := filepath.Join(out, "f.txt")
	r := runLive(t, ws, approveKind("allow-write"), append([]string{"--grant", "write", "--"}, writesOutside(target)...)...)
	// Written on approval, without a rerun: the first line appears once.
	if r.code != 0 || r.stdout != "first\nwrote\nsecond\n" {
		t.Fatalf("want the write approved live:\n%s", r.result)
	}
	if got := mustRead(t, target); got != "data\n" {
		t.Fatalf("%s holds %q", target, got)
	}
	d := r.decided("q1")
	if d == nil || d.Approved == nil || !*d.Approved || d.Alternative != "d1.allow-write" {
		t.Fatalf("decided: %+v\ncontrol: %+v", d, r.control)
	}
	var ask runpkg.ControlMessage
	for _, m := range r.control {
		if m.Type == runpkg.ControlAsk {
			ask = m
		}
	}
	if ask.Request == nil || len(ask.Request.Denials) != 1 || ask.Request.Denials[0].Path != target || ask.Request.Ceiling == "" {
		t.Fatalf("ask: %+v", ask)
	}
	// Performed as the command: its umask, its owner.
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("%s: owner %d mode %v, want the command's (uid %d, umask 022)", target, st.Uid, fi.Mode(), os.Getuid())
	}
	if got := strings.Join(r.kinds(), " "); got != "started held answer exited" {
		t.Errorf("events %q, want started held answer exited", got)
	}
	var sum struct {
		Request  *escalate.Request       `json:"request"`
		Attempts []any                   `json:"attempts"`
		Decision *runpkg.DecisionSummary `json:"decision"`
	}
	_ = json.Unmarshal(r.summary, &sum)
	if sum.Request != nil || sum.Attempts != nil {
		t.Errorf("an approved live write left a request or a rerun: %s", r.summary)
	}
	// The summary (and so the receipt) says what was approved live.
	if d := sum.Decision; d == nil || !d.Approved || d.Retried || strings.Join(d.Args, " ") != "--allow-write "+out ||
		strings.Join(d.IDs, " ") != "d1.allow-write" {
		t.Errorf("decision: %+v", sum.Decision)
	}
}

func TestHoldLaterCallsUnderTheWidening(t *testing.T) {
	requireSupervisor(t)
	ws, out := workspace(t), workspace(t)
	asks := 0
	approve := func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		asks++
		return approveKind("allow-write")(ask)
	}
	// An atomic write (a temp file renamed over the target), a hard link,
	// a move, each within one directory (a move across directories needs
	// Landlock's refer, ABI 2, and mv's fallback a read, which is the
	// command's own): all beneath the one approval.
	script := `set -e; echo a > "$1/one"; mkdir "$1/sub"; echo b > "$1/sub/two"; ln -s one "$1/link"; ` +
		`echo c > "$1/sub/.tmp"; mv "$1/sub/.tmp" "$1/sub/two"; ln "$1/sub/two" "$1/sub/hard"; mv "$1/one" "$1/moved"; rm "$1/moved"; ` +
		`echo x >> "$1/log"; echo y >> "$1/log"; chmod 600 "$1/log"; touch -d 2001-01-01 "$1/log"; ` +
		`echo long > "$1/short"; probe truncate "$1/short" >/dev/null; echo ok`
	r := runLive(t, ws, approve, "--grant", "write", "--", "sh", "-c", script, "sh", out)
	if r.code != 0 || r.stdout != "ok\n" {
		t.Fatalf("want every call under the approved directory performed:\n%s", r.result)
	}
	if asks != 1 {
		t.Errorf("asked %d times, want once", asks)
	}
	if mustRead(t, filepath.Join(out, "sub", "two")) != "c\n" || mustRead(t, filepath.Join(out, "sub", "hard")) != "c\n" ||
		exists(filepath.Join(out, "one")) || exists(filepath.Join(out, "moved")) || exists(filepath.Join(out, "sub", ".tmp")) {
		t.Errorf("the directory does not hold what the command made")
	}
	// Opened with the command's flags: O_APPEND appends.
	if got := mustRead(t, filepath.Join(out, "log")); got != "x\ny\n" {
		t.Errorf("log holds %q, want two appended lines", got)
	}
	// Metadata and truncate(2) beneath the approved directory too.
	if fi, err := os.Stat(filepath.Join(out, "log")); err != nil || fi.Mode().Perm() != 0o600 || fi.ModTime().Year() != 2001 {
		t.Errorf("log: %v %v", fi.Mode(), fi.ModTime())
	}
	if got := mustRead(t, filepath.Join(out, "short")); got != "" {
		t.Errorf("short holds %q, want it truncated", got)
	}
	if l, err := os.Readlink(filepath.Join(out, "link")); err != nil || l != "one" {
		t.Errorf("link: %q %v", l, err)
	}
}

func TestHoldRefused(t *testing.T) {
	requireSupervisor(t)
	deny := func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		return &runpkg.ControlMessage{Type: runpkg.ControlDeny, ID: ask.ID}, false
	}
	silent := func(runpkg.ControlMessage) (*runpkg.ControlMessage, bool) { return nil, false }
	closes := func(runpkg.ControlMessage) (*runpkg.ControlMessage, bool) { return nil, true }
	wrongRun := func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		return &runpkg.ControlMessage{Schema: runpkg.ControlSchemaID, Version: 1, RunID: "20260101T000000Z-00000000", Seq: 1,
			Type: runpkg.ControlApprove, ID: ask.ID, Alternative: ask.ID}, false
	}
	replayed := func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		return &runpkg.ControlMessage{Schema: runpkg.ControlSchemaID, Version: 1, RunID: ask.RunID, Seq: 7,
			Type: runpkg.ControlApprove, ID: ask.ID, Alternative: "d1.allow-write"}, false
	}
	namesAlt := func(id string) approverFunc {
		return func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
			return &runpkg.ControlMessage{Type: runpkg.ControlApprove, ID: ask.ID, Alternative: id}, false
		}
	}
	unknownAlt := func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		return &runpkg.ControlMessage{Type: runpkg.ControlApprove, ID: ask.ID, Alternative: "d1.allow-everything"}, false
	}
	for _, tc := range []struct {
		name    string
		approve approverFunc
		args    []string
		reason  string // in wrun's decided line, when it sends one
		minTook time.Duration
	}{
		{name: "deny", approve: deny, reason: "denied"},
		{name: "timeout", approve: silent, args: []string{"--hold-timeout", "1s"}, reason: "no answer within 1s", minTook: time.Second},
		{name: "closed", approve: closes},
		{name: "wrong-run", approve: wrongRun},
		{name: "replayed-seq", approve: replayed},
		{name: "unknown-alternative", approve: unknownAlt, reason: "no alternative"},
		// The ceiling bounds live approvals as it bounds reruns: the
		// approver names the widening, wrun refuses it.
		{name: "beyond-ceiling", approve: namesAlt("d1.allow-write"), args: []string{"--ceiling", "write,allow-write=/nonexistent-dir"}, reason: "ceiling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, out := workspace(t), workspace(t)
			target := filepath.Join(out, "f.txt")
			args := append(append(tc.args, "--grant", "write", "--"), writesOutside(target)...)
			r := runLive(t, ws, tc.approve, args...)
			if r.code != 0 || r.stdout != "first\nrefused\nsecond\n" {
				t.Fatalf("want the write refused as the kernel refuses it:\n%s", r.result)
			}
			if exists(target) {
				t.Fatalf("%s was written", target)
			}
			if r.took < tc.minTook {
				t.Errorf("took %s, want at least %s", r.took, tc.minTook)
			}
			if tc.reason != "" {
				d := r.decided("q1")
				if d == nil || d.Approved == nil || *d.Approved || !strings.Contains(d.Reason, tc.reason) {
					t.Errorf("decided: %+v, want refused with %q", d, tc.reason)
				}
			}
			// Reported as before: a denial event, and in the summary.
			if r.event("denial") == nil {
				t.Errorf("no denial event: %s", bytes.Join(r.events, []byte("\n")))
			}
			if !bytes.Contains(r.summary, []byte(target)) {
				t.Errorf("the summary does not report the denial: %s", r.summary)
			}
		})
	}
}

func TestHoldBounded(t *testing.T) {
	requireSupervisor(t)
	ws, out := workspace(t), workspace(t)
	// 200 writes of distinct files at once, the approver silent: at
	// most 16 calls are held at once (the rest fail at once, reported),
	// so at most 16 questions are open at any time.
	var mu sync.Mutex
	asks := 0
	approve := func(ask runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
		mu.Lock()
		asks++
		mu.Unlock()
		return nil, false
	}
	script := `i=0; while [ $i -lt 200 ]; do (echo x > "$1/f$i" 2>/dev/null) & i=$((i+1)); done; wait; echo done`
	r := runLive(t, ws, approve, "--hold-timeout", "2s", "--grant", "write", "--", "sh", "-c", script, "sh", out)
	if r.code != 0 || r.stdout != "done\n" {
		t.Fatalf("%s", r.result)
	}
	open, most := 0, 0
	for _, m := range r.control {
		switch m.Type {
		case runpkg.ControlAsk:
			open++
		case runpkg.ControlDecided:
			open--
		}
		most = max(most, open)
	}
	t.Logf("%d asks, at most %d open at once", asks, most)
	if most > 16 || most == 0 {
		t.Errorf("at most %d questions open at once, want 1 to 16", most)
	}
	if asks >= 200 {
		t.Errorf("asked %d times: the held calls are not bounded", asks)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("%d files written without an approval", len(entries))
	}
}

func TestHoldRefusedWithoutMediation(t *testing.T) {
	requireABI(t, 1)
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	sock, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(sock[0]), "a"), os.NewFile(uintptr(sock[1]), "b")
	defer a.Close()
	defer b.Close()
	// --observe off: wrun sees no call before the kernel decides it.
	r := run(t, runOpts{dir: ws, files: []*os.File{b}}, bins.wrun, "--best-effort", "--observe", "off", "--on-denial=hold", "--control-fd", "3",
		"--grant", "write", "--", "touch", marker)
	if r.code != 125 || !strings.Contains(r.stderr, "--on-denial=hold needs wrun to see") || exists(marker) {
		t.Fatalf("want hold refused before the command runs:\n%s", r)
	}
}

func TestHoldUnixConnectApprovedLive(t *testing.T) {
	requireSupervisor(t)
	if !mediated(modeRoot) {
		t.Skip("wrun performs UNIX connects (and so can hold one) below Landlock ABI 9, with seccomp user notification")
	}
	ws := workspace(t)
	sock := filepath.Join(workspace(t), "outside.sock")
	accepted := unixListener(t, sock)
	ceiling := []string{"--ceiling", "files=write,shell=full,network=on,desktop=on"}
	script := `echo first; probe unix "$1"; probe unix "$1"; echo second`
	for _, tc := range []struct {
		name    string
		approve approverFunc
		want    string
		conns   int
	}{
		{"approved", approveKind("allow-unix"), "first\nok\nok\nsecond\n", 2},
		// Control: denied, both connects are refused (the second is not
		// asked again).
		{"denied", approveKind("none"), "first\nsecond\n", 0},
		// The default ceiling has desktop=off: the approver names the
		// socket's alternative, wrun refuses it.
		{"beyond-ceiling", func(m runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
			return &runpkg.ControlMessage{Type: runpkg.ControlApprove, ID: m.ID, Alternative: "d1.allow-unix"}, false
		}, "first\nsecond\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asks := 0
			approve := func(m runpkg.ControlMessage) (*runpkg.ControlMessage, bool) {
				asks++
				return tc.approve(m)
			}
			args := append(ceiling, "--grant", "verify", "--", "sh", "-c", script, "sh", sock)
			if tc.name == "beyond-ceiling" {
				args = args[2:]
			}
			r := runLive(t, ws, approve, args...)
			lines := ""
			for _, l := range strings.SplitAfter(r.stdout, "\n") {
				if l == "first\n" || l == "second\n" || l == "ok\n" {
					lines += l
				}
			}
			if lines != tc.want {
				t.Fatalf("want %q:\n%s", tc.want, r.result)
			}
			got := 0
			for arrived(accepted, 200*time.Millisecond) {
				got++
			}
			if got != tc.conns {
				t.Errorf("%d connections reached the socket, want %d", got, tc.conns)
			}
			if asks != 1 {
				t.Errorf("asked %d times, want once", asks)
			}
			if d := r.decided("q1"); tc.name == "beyond-ceiling" && (d == nil || !strings.Contains(d.Reason, "ceiling")) {
				t.Errorf("decided: %+v, want refused for the ceiling", d)
			}
		})
	}
}

func TestHoldAskingTheApproverCommand(t *testing.T) {
	requireSupervisor(t)
	for _, tc := range []struct {
		name, decision, want string
		written              bool
	}{
		{"named", `{"decision": "approve", "alternatives": ["d1.allow-write"]}`, "first\nwrote\nsecond\n", true},
		// No ids: the narrowest safe widening, as for a rerun.
		{"narrowest", `{"decision": "approve"}`, "first\nwrote\nsecond\n", true},
		// Control: denied, the write fails as the kernel fails it.
		{"denied", `{"decision": "deny"}`, "first\nrefused\nsecond\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, out := workspace(t), workspace(t)
			target := filepath.Join(out, "f.txt")
			seen := filepath.Join(workspace(t), "request.json")
			approver := "cat > " + seen + "; echo '" + tc.decision + "'"
			r := runLive(t, ws, nil, append([]string{"--on-denial=hold", "--approver", approver, "--grant", "write", "--"}, writesOutside(target)...)...)
			if r.code != 0 || r.stdout != tc.want {
				t.Fatalf("want %q:\n%s", tc.want, r.result)
			}
			if exists(target) != tc.written {
				t.Fatalf("%s written: %v, want %v", target, exists(target), tc.written)
			}
			// The approver saw the request of the one denial.
			b, err := os.ReadFile(seen)
			if err != nil {
				t.Fatal(err)
			}
			if err := validateRequest(b); err != nil {
				t.Errorf("the approver's request: %v", err)
			}
			var req escalate.Request
			if err := json.Unmarshal(b, &req); err != nil || len(req.Denials) != 1 || req.Denials[0].Path != target {
				t.Errorf("the approver's request: %v %s", err, b)
			}
			if got := strings.Join(r.kinds(), " "); !strings.HasPrefix(got, "started held answer") {
				t.Errorf("events %q", got)
			}
			var sum struct {
				Decision *runpkg.DecisionSummary `json:"decision"`
			}
			_ = json.Unmarshal(r.summary, &sum)
			if d := sum.Decision; d == nil || d.Approved != tc.written || tc.written && strings.Join(d.IDs, " ") != "d1.allow-write" {
				t.Errorf("decision: %+v", sum.Decision)
			}
		})
	}
}

func TestHoldRefusesARepositoryLive(t *testing.T) {
	requireSupervisor(t)
	ws, out := workspace(t), workspace(t)
	// The directory outside is a repository: a rerun with --allow-write
	// would keep its config and hooks protected; the live widening carves
	// nothing, so wrun refuses it whatever the harness says.
	gitCmd(t, out, "init", "-q")
	target := filepath.Join(out, "f.txt")
	hook := filepath.Join(out, ".git", "hooks", "pre-commit")
	script := `echo first; if echo data > "$1"; then echo wrote; else echo refused; fi; echo evil > "$2" 2>/dev/null; echo second`
	r := runLive(t, ws, approveKind("allow-write"), "--grant", "write", "--", "sh", "-c", script, "sh", target, hook)
	if r.code != 0 || r.stdout != "first\nrefused\nsecond\n" || exists(target) || exists(hook) {
		t.Fatalf("want the repository refused live:\n%s", r.result)
	}
	if d := r.decided("q1"); d == nil || *d.Approved || !strings.Contains(d.Reason, ".git") {
		t.Errorf("decided: %+v, want refused naming what a rerun protects", d)
	}
}
