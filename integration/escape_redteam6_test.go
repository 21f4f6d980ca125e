package integration

import (
	"os"
	"path/filepath"
	"strings"
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
