//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withArg lists the processes that have arg as one of their arguments.
func withArg(arg string) []int {
	var out []int
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// reapArg kills, at the end of the test, whatever still runs with arg.
func reapArg(t *testing.T, arg string) {
	t.Cleanup(func() {
		for _, pid := range withArg(arg) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// goneWithin waits up to d for no process to have arg.
func goneWithin(arg string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := withArg(arg)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// approverScript writes an executable approver: it notes that it started
// in started, then runs body.
func approverScript(t *testing.T, started, body string) string {
	p := filepath.Join(workspace(t), "approver.sh")
	mustWrite(t, p, "#!/bin/sh\ncat >/dev/null\necho up > "+started+"\n"+body+"\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApproverTimeoutKillsItsGroup(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "x")
	started := filepath.Join(workspace(t), "started")
	const arg = "61.234"
	reapArg(t, arg)
	// The approver's child sleeps; the approver waits for it.
	approver := approverScript(t, started, "sleep "+arg+" &\nwait")
	start := time.Now()
	s, _, r := runJSON(t, runOpts{dir: ws}, "--on-denial=ask", "--approver-timeout", "1s", "--approver", approver, "--", "sh", "-c", "echo x > "+outside)
	took := time.Since(start)
	if !exists(started) {
		t.Fatalf("the approver never ran:\n%s", r)
	}
	if took > 15*time.Second {
		t.Errorf("wrun took %s with --approver-timeout 1s", took)
	}
	if s.Decision == nil || s.Decision.Approved || !strings.Contains(s.Decision.Reason, "no decision within 1s") {
		t.Errorf("want a denial naming the timeout:\n%s", r)
	}
	if left := goneWithin(arg, 2*time.Second); len(left) > 0 {
		t.Errorf("the approver's group outlived wrun: pids %v", left)
	}

	// Control: an approver that answers within the timeout is heard.
	approver = approverScript(t, started, `sleep 0.2; echo '{"decision": "approve"}'`)
	s, _, r = runJSON(t, runOpts{dir: ws}, "--on-denial=ask", "--approver-timeout", "10s", "--approver", approver, "--", "sh", "-c", "echo x > "+outside)
	if s.Decision == nil || !s.Decision.Approved {
		t.Errorf("control: an answer within the timeout was not taken:\n%s", r)
	}
}

func TestApproverBackgroundChildDoesNotHoldWrun(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "x")
	started := filepath.Join(workspace(t), "started")
	const arg = "62.345"
	reapArg(t, arg)
	// The child inherits the approver's stdout and keeps it open for a
	// minute; the approver answers and exits.
	approver := approverScript(t, started, "sleep "+arg+" &\necho '{\"decision\": \"approve\"}'")
	start := time.Now()
	s, _, r := runJSON(t, runOpts{dir: ws}, "--on-denial=ask", "--approver-timeout", "2m", "--approver", approver, "--", "sh", "-c", "echo x > "+outside)
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("wrun waited %s for the approver's background child", took)
	}
	if s.Decision == nil || !s.Decision.Approved {
		t.Errorf("the answer of an approver whose child holds stdout was lost:\n%s", r)
	}
	if left := goneWithin(arg, 2*time.Second); len(left) > 0 {
		t.Errorf("the approver's background child outlived wrun: pids %v", left)
	}
}

func TestSignalEndsTheWaitForTheApprover(t *testing.T) {
	requireABI(t, 3)
	for _, tc := range []struct {
		sig  syscall.Signal
		arg  string
		code int
	}{
		{syscall.SIGTERM, "63.456", 143},
		{syscall.SIGINT, "64.567", 130},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			ws := workspace(t)
			outside := filepath.Join(workspace(t), "x")
			started := filepath.Join(workspace(t), "started")
			reapArg(t, tc.arg)
			approver := approverScript(t, started, "exec sleep "+tc.arg)
			cmd := exec.Command(bins.wrun, "--json", "--on-denial=ask", "--approver-timeout", "2m", "--approver", approver, "--", "sh", "-c", "echo x > "+outside)
			cmd.Dir = ws
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					_ = cmd.Process.Kill()
					<-done
				}
			})
			// Control: wrun is waiting on the approver, which runs.
			deadline := time.Now().Add(30 * time.Second)
			for len(withArg(tc.arg)) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the approver did not start:\n%s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			select {
			case <-done:
				t.Fatalf("control: wrun did not wait for the approver:\n%s", stderr.String())
			default:
			}
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("wrun did not end within 10s of %s", tc.sig)
			}
			if took := time.Since(sent); took > 5*time.Second {
				t.Errorf("wrun took %s to end after %s", took, tc.sig)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Errorf("exit %d, want %d\n%s", got, tc.code, stderr.String())
			}
			if left := goneWithin(tc.arg, 2*time.Second); len(left) > 0 {
				t.Errorf("the approver outlived wrun: pids %v", left)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			var s summary
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.ExitCode != tc.code {
				t.Errorf("--json summary exit_code %d (%v), want %d\n%s", s.ExitCode, err, tc.code, stderr.String())
			}
		})
	}
}

// TestEmptyApprovalLeavesTheSharedCache: an approval naming no
// alternative does not open cargo's registry; naming the id does.
func TestEmptyApprovalLeavesTheSharedCache(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	home := workspace(t)
	reg := filepath.Join(home, ".cargo", "registry")
	if err := os.MkdirAll(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	o := runOpts{dir: ws, env: []string{"HOME=" + home, "CARGO_HOME=" + filepath.Join(home, ".cargo")}}
	target := filepath.Join(reg, "x")
	for _, answer := range []string{`{"decision": "approve"}`, `{"decision": "approve", "alternatives": []}`} {
		s, req, r := runJSON(t, o, "--grant", "verify", "--on-denial=retry", "--retry-safe", "--approver", "cat >/dev/null; echo '"+answer+"'", "--", "sh", "-c", "echo x > "+target)
		if req == nil || len(req.Denials) != 1 {
			t.Fatalf("%s: want one denial:\n%s", answer, r)
		}
		if s.Decision == nil || s.Decision.Approved || s.Retry != nil || exists(target) || r.code == 0 {
			t.Errorf("%s widened to the shared cache:\n%s", answer, r)
		}
	}
	// Control: named by id, the cache is approved and the retry writes it.
	s, _, r := runJSON(t, o, "--grant", "verify", "--on-denial=retry", "--retry-safe", "--approver",
		`cat >/dev/null; echo '{"decision": "approve", "alternatives": ["d1.allow-write-cache"]}'`, "--", "sh", "-c", "echo x > "+target)
	if s.Decision == nil || !s.Decision.Approved || s.Retry == nil || r.code != 0 || !exists(target) {
		t.Errorf("control: the named cache alternative was not approved and applied:\n%s", r)
	}
}

// TestApprovedRouteRunsOnRetry: under --on-denial=retry an approved route
// runs its commands; the top-level exit_code is the last attempt's, and
// every attempt is listed.
func TestApprovedRouteRunsOnRetry(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	bin := workspace(t)
	cargo := filepath.Join(bin, "cargo")
	// A stand-in for cargo: it builds into CARGO_TARGET_DIR when set, else
	// into the workspace.
	mustWrite(t, cargo, "#!/bin/sh\nif [ -n \"$CARGO_TARGET_DIR\" ]; then mkdir -p \"$CARGO_TARGET_DIR\" && echo ROUTE-RAN; exit 0; fi\nmkdir target\n")
	if err := os.Chmod(cargo, 0o755); err != nil {
		t.Fatal(err)
	}
	approve := func(id string) string {
		return `cat >/dev/null; echo '{"decision": "approve", "alternatives": ["` + id + `"]}'`
	}
	type withAttempts struct {
		summary
		Attempts []struct {
			Command  []string `json:"command"`
			Route    string   `json:"route"`
			ExitCode int      `json:"exit_code"`
		} `json:"attempts"`
	}
	var s withAttempts
	parse := func(r result) {
		s = withAttempts{}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
			t.Fatalf("%v\n%s", err, r)
		}
	}
	// Control: without approval the stand-in fails on the read-only
	// workspace.
	r := wrun(t, runOpts{dir: ws}, "--json", "--grant", "inspect", "--", cargo, "build")
	parse(r)
	if r.code == 0 || s.ExitCode != r.code || strings.Contains(r.stdout, "ROUTE-RAN") {
		t.Fatalf("control:\n%s", r)
	}
	r = wrun(t, runOpts{dir: ws}, "--json", "--grant", "inspect", "--on-denial=retry", "--retry-safe", "--approver", approve("d1.cargo-target-dir"), "--", cargo, "build")
	parse(r)
	if r.code != 0 || !strings.Contains(r.stdout, "ROUTE-RAN") || s.Decision == nil || !s.Decision.Retried {
		t.Fatalf("the approved route did not run:\n%s", r)
	}
	if s.ExitCode != 0 || s.Retry == nil || s.Retry.ExitCode != 0 {
		t.Errorf("exit_code %d, want wrun's own 0\n%s", s.ExitCode, r)
	}
	if len(s.Attempts) != 2 || s.Attempts[0].ExitCode == 0 || s.Attempts[1].Route != "d1.cargo-target-dir" || s.Attempts[1].ExitCode != 0 {
		t.Errorf("attempts %+v", s.Attempts)
	}
	// A route that names no command cannot be run: nothing reruns.
	r = wrun(t, runOpts{dir: ws}, "--json", "--grant", "inspect", "--on-denial=retry", "--retry-safe", "--approver", approve("d1.use-tmpdir"), "--", cargo, "build")
	parse(r)
	if r.code == 0 || s.Retry != nil || !strings.Contains(r.stderr, "cannot be run automatically") {
		t.Errorf("a route without commands:\n%s", r)
	}
}

// TestRetryExitCodeIsTheLastAttempts: after a retry wrun exits with the
// rerun's status, and --json's top-level exit_code says the same.
func TestRetryExitCodeIsTheLastAttempts(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	target := filepath.Join(workspace(t), "out")
	approver := `cat >/dev/null; echo '{"decision": "approve"}'`
	script := "echo ok > " + target + " || exit 1; exit 3"
	// Control: the first attempt alone is denied and exits 1.
	s, _, r := runJSON(t, runOpts{dir: ws}, "--", "sh", "-c", script)
	if r.code != 1 || s.ExitCode != 1 {
		t.Fatalf("control: %s", r)
	}
	s, _, r = runJSON(t, runOpts{dir: ws}, "--on-denial=retry", "--retry-safe", "--approver", approver, "--", "sh", "-c", script)
	if s.Retry == nil || s.Retry.ExitCode != 3 {
		t.Fatalf("want a retry that exits 3:\n%s", r)
	}
	if r.code != 3 || s.ExitCode != 3 {
		t.Errorf("wrun exited %d, exit_code %d; want the last attempt's 3\n%s", r.code, s.ExitCode, r)
	}
}
