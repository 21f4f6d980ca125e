package integration

import (
	"context"
	"time"

	"encoding/json"
	"fmt"
	wrunrun "github.com/wrun-dev/wrun/run"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRedteam6ConductorSessionMemory: the conductor's rule (an approver
// command never approves a write inside a git repository for it) holds
// for what a session remembered too. Another role's run in the same
// workspace and session approves that write with scope "session" (the
// control: it passes, and is remembered); the conductor's run of the same
// write is then not approved from the session's memory, nor by its
// approver. The other control: a conductor run with no session is refused
// the same way.
func TestRedteam6ConductorSessionMemory(t *testing.T) {
	requireABI(t, 3)
	rec := newRecords(t)
	ws := workspace(t)
	repo := workspace(t)
	gitCmd(t, repo, "init", "-q")
	inRepo := filepath.Join(repo, "notes")
	calls := filepath.Join(t.TempDir(), "calls")
	approver := filepath.Join(t.TempDir(), "approver.sh")
	mustWrite(t, approver, "#!/bin/sh\ncat >/dev/null\necho asked >> "+calls+"\necho '{\"decision\": \"approve\", \"scope\": \"session\"}'\n")
	if err := os.Chmod(approver, 0o755); err != nil {
		t.Fatal(err)
	}
	asked := func() int { b, _ := os.ReadFile(calls); return strings.Count(string(b), "asked") }
	sess := runOpts{dir: ws, env: append(rec.env(), "WRUN_SESSION=redteam6-session-0123456789")}
	write := []string{"--on-denial", "retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", "echo x > " + inRepo}

	r := wrun(t, runOpts{dir: ws, env: rec.env()}, append([]string{"--role", "conductor"}, write...)...)
	if r.code == 0 || exists(inRepo) || !strings.Contains(r.stderr, "never approved automatically") {
		t.Fatalf("control: the conductor's write into a git repository, no session, was approved:\n%s", r)
	}
	r = wrun(t, sess, append([]string{"--role", "worker"}, write...)...)
	if r.code != 0 || !exists(inRepo) {
		t.Fatalf("control: the worker's approved write (scope session) failed:\n%s", r)
	}
	if err := os.Remove(inRepo); err != nil {
		t.Fatal(err)
	}
	before := asked()
	r = wrun(t, sess, append([]string{"--role", "conductor"}, write...)...)
	if r.code == 0 || exists(inRepo) || !strings.Contains(r.stderr, "never approved automatically") || asked() != before+1 {
		t.Errorf("the conductor's write into a git repository was approved from the session's memory (approver asked %d times):\n%s", asked()-before, r)
	}
}

// harnessRuns is the command line a harness runs after the hook answered
// input (JSON, as the harness reads it: exact keys): tool_input.command
// when the hook had no opinion, the updated command when it allowed one,
// "" when it denied or blocked (exit 2).
func harnessRuns(t *testing.T, input string, args ...string) string {
	t.Helper()
	var in struct {
		ToolInput struct {
			Command string `json:"command"`
		} `json:"tool_input"`
	}
	var exact map[string]json.RawMessage
	if err := json.Unmarshal([]byte(input), &exact); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(exact["tool_input"], &in.ToolInput); err != nil {
		t.Fatal(err)
	}
	r := run(t, runOpts{stdin: input}, append([]string{bins.wrun, "hook"}, args...)...)
	switch {
	case r.code == 2:
		return ""
	case r.code != 0:
		t.Fatalf("wrun hook %v exited %d, which both harnesses take for a failed hook (the command runs): %s", args, r.code, r)
	case strings.TrimSpace(r.stdout) == "":
		return in.ToolInput.Command
	}
	line, decision := hookCommand(t, input, args...)
	if strings.HasPrefix(decision, "deny") {
		return ""
	}
	return line
}

// TestRedteam6HookExactKeys: the hook reads the input's keys as the
// harness does, exactly. A case-variant key after the real one
// ("TOOL_NAME": "Read", "TOOL_INPUT" holding the wrapped command) made
// wrun see another tool, or a command already under wrun, while the
// harness ran tool_input.command bare: here the line the harness would run
// is run with bash, and must not write outside the workspace. Controls:
// the same command line run bare does write there, and a Read call gets
// no answer.
func TestRedteam6HookExactKeys(t *testing.T) {
	requireABI(t, 1)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is needed: the hook's command line runs the command with it")
	}
	ws, outside := workspace(t), workspace(t)
	target := filepath.Join(outside, "written")
	command := "echo x > '" + target + "'"
	wrapped := bins.wrun + " --grant inspect -- bash -c 'true'"
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, tc := range []struct {
		name, input string
		args        []string
	}{
		{"TOOL_NAME", `{"hook_event_name":"PreToolUse","tool_name":"Bash","TOOL_NAME":"Read","tool_input":{"command":` + q(command) + `}}`,
			[]string{"claude-code", "--grant", "inspect"}},
		{"TOOL_INPUT deny-instead", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":` + q(command) + `},"TOOL_INPUT":{"command":` + q(wrapped) + `}}`,
			[]string{"codex", "--grant", "inspect", "--deny-instead"}},
		{"Hook_Event_Name", `{"hook_event_name":"PreToolUse","Hook_Event_Name":"PostToolUse","tool_name":"Bash","tool_input":{"command":` + q(command) + `}}`,
			[]string{"claude-code", "--grant", "inspect"}},
	} {
		line := harnessRuns(t, tc.input, tc.args...)
		if line == "" {
			continue
		}
		r := run(t, runOpts{dir: ws}, bash, "-c", line)
		if exists(target) {
			t.Errorf("%s: the harness ran %q outside the sandbox: %s", tc.name, line, r)
			os.Remove(target)
		}
	}
	if r := run(t, runOpts{dir: ws}, bash, "-c", command); r.code != 0 || !exists(target) {
		t.Fatalf("control: the command bare wrote nothing: %s", r)
	}
	read := `{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/etc/hostname"}}`
	if r := run(t, runOpts{stdin: read}, bins.wrun, "hook", "claude-code"); r.code != 0 || strings.TrimSpace(r.stdout) != "" {
		t.Errorf("control: a Read call: want no answer: %s", r)
	}
}

// TestRedteam6NprocRaise: the bound on the command's tasks (RLIMIT_NPROC
// at the user's tasks plus 4096) was its soft limit only, and a process
// may raise its soft limit to the hard one: `ulimit -Su $(ulimit -Hu)`
// undid the bound before a fork bomb. No process of the command may set
// that limit now, through prlimit64 (glibc's setrlimit, bash's ulimit) or
// the setrlimit call itself (python's ctypes). The control: the same
// raise, run bare under a lowered soft limit, passes. As a user only: the
// kernel exempts root from the limit, and wrun then sets none.
func TestRedteam6NprocRaise(t *testing.T) {
	requireABI(t, 1)
	if os.Getuid() == 0 {
		t.Skip("as root the kernel counts no tasks: run it with scripts/test-as-user")
	}
	ws := workspace(t)
	raise := `ulimit -Su $(ulimit -Hu) && echo raised`
	if r := run(t, runOpts{dir: ws}, "bash", "-c", "ulimit -Su 4000 && "+raise); !strings.Contains(r.stdout, "raised") {
		t.Fatalf("control: bare, the soft limit cannot be raised: %s", r)
	}
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "bash", "-c", `echo soft=$(ulimit -Su) hard=$(ulimit -Hu); `+raise+`; echo now=$(ulimit -Su)`)
	if strings.Contains(r.stdout, "raised") {
		t.Errorf("the command raised its RLIMIT_NPROC to the hard limit: %s", r)
	}
	if !strings.Contains(r.stdout, "soft=") || strings.Contains(r.stdout, "soft=unlimited") {
		t.Errorf("no bound to test: %s", r)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		return
	}
	// setrlimit(2) itself: 160 on x86-64, 164 on arm64 (what Go's
	// syscall package numbers it).
	py := fmt.Sprintf(`import ctypes, resource
s, h = resource.getrlimit(resource.RLIMIT_NPROC)
lim = (ctypes.c_ulong * 2)(h, h)
rc = ctypes.CDLL(None, use_errno=True).syscall(%d, resource.RLIMIT_NPROC, lim)
print("raised" if rc == 0 and resource.getrlimit(resource.RLIMIT_NPROC)[0] == h else "refused")`, syscall.SYS_SETRLIMIT)
	if r := run(t, runOpts{dir: ws}, "bash", "-c", "ulimit -Su 4000 && python3 -c '"+py+"'"); !strings.Contains(r.stdout, "raised") {
		t.Fatalf("control: bare, setrlimit does not raise the soft limit: %s", r)
	}
	if r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "python3", "-c", py); !strings.Contains(r.stdout, "refused") {
		t.Errorf("setrlimit raised the command's RLIMIT_NPROC: %s", r)
	}
}

// TestRedteam6ConductorOverARepository: the conductor's rule refused an
// automatic approval of a write inside a git repository, but not of one
// over it: --allow-write of a directory holding a repository, or
// files=write of a workspace holding one, let the retry write in it. Both
// are refused now; the controls, the same approvals where no repository
// lies below, pass and write.
func TestRedteam6ConductorOverARepository(t *testing.T) {
	requireABI(t, 1)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed: the approver picks alternatives by kind")
	}
	rec := newRecords(t)
	approver := filepath.Join(t.TempDir(), "approver.py")
	mustWrite(t, approver, `#!/usr/bin/env python3
import json, sys
kind = sys.argv[1]
req = json.load(sys.stdin)
ids = [a["id"] for d in req["denials"] for a in d["alternatives"] if a["kind"] == kind]
print(json.dumps({"decision": "approve", "alternatives": ids}))
`)
	if err := os.Chmod(approver, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		repo bool
	}{{"allow-write", true}, {"allow-write", false}, {"grant", true}, {"grant", false}} {
		ws, area := workspace(t), workspace(t)
		if tc.kind == "grant" {
			area = ws
		}
		sub := filepath.Join(area, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if tc.repo {
			gitCmd(t, sub, "init", "-q")
		}
		target := filepath.Join(sub, "file")
		r := wrun(t, runOpts{dir: ws, env: rec.env()}, "--role", "conductor", "--on-denial", "retry", "--retry-safe",
			"--approver", approver+" "+tc.kind, "--", "sh", "-c", "echo x > "+filepath.Join(area, "f")+" && echo y > "+target)
		switch {
		case tc.repo && (exists(target) || !strings.Contains(r.stderr, "over a git repository")):
			t.Errorf("%s over a git repository: approved for the conductor:\n%s", tc.kind, r)
		case !tc.repo && (r.code != 0 || !exists(target)):
			t.Errorf("control: %s with no repository below: not approved:\n%s", tc.kind, r)
		}
	}
}

// TestRedteam6CancelLeavesNothing: cancelling run.Config.Context ends
// every process of the command, not only its group: a child that left
// the group (setsid) and ignores SIGTERM and SIGHUP, and a main process
// that ignores SIGTERM, write nothing after Run returns. The control: with
// KeepBackground the same setsid child outlives the run and writes.
func TestRedteam6CancelLeavesNothing(t *testing.T) {
	requireABI(t, 1)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	script := func(survivor string) string {
		return `setsid sh -c 'trap "" TERM HUP INT; sleep 1.5; echo survived > ` + survivor + `' </dev/null >/dev/null 2>&1 &
trap '' TERM; sleep 30`
	}
	// Control: bare, the setsid child outlives its parent's end and writes.
	ws := workspace(t)
	survivor := filepath.Join(ws, "survivor")
	bare := exec.Command("sh", "-c", script(survivor))
	bare.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bare.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	_ = syscall.Kill(-bare.Process.Pid, syscall.SIGKILL)
	_ = bare.Wait()
	time.Sleep(2500 * time.Millisecond)
	if !exists(survivor) {
		t.Fatal("control: bare, the setsid child did not outlive its parent")
	}

	ws = workspace(t)
	survivor = filepath.Join(ws, "survivor")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	sum, err := wrunrun.Run(wrunrun.Config{Spec: wrunrun.Spec{Grant: "write", Workdir: ws}, Argv: []string{"sh", "-c", script(survivor)},
		Stdin: devnull, Stdout: devnull, Stderr: devnull, Context: ctx, KillAfter: 300 * time.Millisecond})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if exists(survivor) {
		t.Errorf("a setsid child ignoring SIGTERM outlived the cancelled run and wrote (summary %+v)", sum)
	}
}

// TestRedteam6HelpersGainNothing: the command may start wrun's own binary
// (where its PATH or a path it may read names it) under the names and arguments
// ServeHelpers answers; it runs in the same sandbox and gains nothing: as
// the Go cache program it cannot make its cache outside the grant, and as
// git (with WRUN_GIT pointing at a shell) the shell it execs cannot write
// there either. The control: the same binary, run bare, makes the cache.
func TestRedteam6HelpersGainNothing(t *testing.T) {
	requireABI(t, 1)
	ws, outside := workspace(t), workspace(t)
	cache := filepath.Join(outside, "cache")
	put := `printf '{"ID":1,"Command":"close"}\n' | (exec -a wrun "$W" __gocacheprog --private ` + cache + `)`
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "bash", "-c",
		`W=`+bins.wrun+`; [ -x "$W" ] && echo shim=$W; `+put+`; WRUN_GIT=/bin/sh; export WRUN_GIT; (exec -a git "$W" -c 'echo x > `+filepath.Join(outside, "viagit")+`')`)
	if !strings.Contains(r.stdout, "shim=/") {
		t.Skipf("wrun's binary is not executable in the sandbox: %s", r)
	}
	if !strings.Contains(r.stderr, "wrun (as GOCACHEPROG)") || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("the helpers did not run, refused, in the sandbox: %s", r)
	}
	if exists(cache) || exists(filepath.Join(outside, "viagit")) {
		t.Errorf("wrun's binary as a helper wrote outside the grant: %s", r)
	}
	if r := run(t, runOpts{dir: ws}, "bash", "-c", "W="+bins.wrun+"; "+put); !exists(cache) {
		t.Errorf("control: bare, the Go cache program made no cache: %s", r)
	}
}
