//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/escalate"
)

// TestApprovedAllowUnix: a connect to a UNIX socket an outside process
// bound is refused under verify, and the request offers --allow-unix
// with that socket as the narrow alternative: beyond the default ceiling
// (desktop=off), approvable within one that has desktop=on, and then the
// retry connects. The control connects bare.
func TestApprovedAllowUnix(t *testing.T) {
	if !viaStage() || bins.features.LandlockABI >= 9 {
		t.Skip("the hands mediate UNIX sockets (and name the refused one) through the stage below Landlock ABI 9")
	}
	ws := workspace(t)
	sock := filepath.Join(workspace(t), "outside.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if got := bare(t, runOpts{dir: ws}, "unix", sock); got != "ok" {
		t.Fatalf("control: connecting to %s bare: %s", sock, got)
	}
	// The default ceiling has desktop=off: the alternative is shown,
	// beyond it.
	_, req, r := runJSON(t, runOpts{dir: ws}, "--grant", "verify", "--", bins.probe, "unix", sock)
	if r.code == 0 || req == nil {
		t.Fatalf("connecting to the outside socket under verify was not refused:\n%s", r)
	}
	alt := findAlt(req, "allow-unix")
	if alt == nil || alt.Kind != escalate.KindBeyondCeiling || len(alt.Args) != 2 || alt.Args[1] != sock {
		t.Fatalf("want a beyond-ceiling --allow-unix %s under the default ceiling; request:\n%+v", sock, req.Denials)
	}
	// Within a ceiling with desktop=on it is offered and approvable.
	ceiling := []string{"--ceiling", "files=write,shell=full,network=on,desktop=on"}
	_, req, r = runJSON(t, runOpts{dir: ws}, append(ceiling, "--grant", "verify", "--", bins.probe, "unix", sock)...)
	alt = findAlt(req, "allow-unix")
	if alt == nil || alt.Kind != escalate.KindAllowUnix || !alt.WithinCeiling || strings.Join(alt.Args, " ") != "--allow-unix "+sock {
		t.Fatalf("want --allow-unix %s offered within the ceiling; got %+v\n%s", sock, alt, r)
	}
	approver := `cat >/dev/null; echo '{"decision": "approve", "alternatives": ["` + alt.ID + `"]}'`
	r = wrun(t, runOpts{dir: ws}, append(ceiling, "--grant", "verify", "--on-denial=retry", "--retry-safe", "--approver", approver, "--", bins.probe, "unix", sock)...)
	if r.code != 0 || !strings.Contains(r.stdout, "ok") {
		t.Errorf("the approved --allow-unix retry did not connect:\n%s", r)
	}
	// An approval naming no alternative never picks a socket: that one
	// must be named (what it gives cannot be told from its path).
	r = wrun(t, runOpts{dir: ws}, append(ceiling, "--grant", "verify", "--on-denial=retry", "--retry-safe", "--approver", `cat >/dev/null; echo '{"decision": "approve"}'`, "--", bins.probe, "unix", sock)...)
	if strings.Contains(r.stderr, "approved ("+alt.ID) || strings.Contains(r.stderr, "retrying with --grant verify --allow-unix") {
		t.Errorf("an approval naming nothing approved --allow-unix:\n%s", r)
	}
}

// findAlt is the first alternative of req's denials whose id ends in
// "."+id.
func findAlt(req *escalate.Request, id string) *escalate.Alternative {
	if req == nil {
		return nil
	}
	for _, d := range req.Denials {
		for i := range d.Alternatives {
			if strings.HasSuffix(d.Alternatives[i].ID, "."+id) {
				return &d.Alternatives[i]
			}
		}
	}
	return nil
}

// TestHandsDeathIsReported: the hands starts at the first mediated call in
// a Landlock domain beside the command's (below the abstract-socket
// scope), or before the command with the command in a layer nested in its
// domain; from ABI 6 the signal scope keeps the command from killing the
// hands, below ABI 6 it can (same user). Either way a hands that is gone fails every mediated call with
// EPERM, and wrun says so after the run rather than leaving the failures
// silent: here the test kills the hands from outside while the command
// waits. The control binds and connects with the hands alive, and no
// warning is printed.
func TestHandsDeathIsReported(t *testing.T) {
	if !viaStage() || bins.features.LandlockABI >= 9 || !bins.features.UserNotif {
		t.Skip("the hands exist where UNIX sockets are mediated: through the stage, below Landlock ABI 9, with seccomp user notification")
	}
	ws := workspace(t)
	const warning = "the hands process"
	self := bins.probe + ` unix-self "$TMPDIR"`
	// The first call starts the hands (in a directory of its own: the
	// call binds a fixed name).
	first := `mkdir "$TMPDIR/first" && ` + bins.probe + ` unix-self "$TMPDIR/first"`
	kill := `for p in /proc/[0-9]*; do if tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^wrun:stage2 hands'; then echo found; kill -9 ${p#/proc/} 2>/dev/null && echo killed; fi; done; sleep 0.2; `
	r := wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", first+"; "+kill+self)
	if !strings.Contains(r.stdout, "found") {
		t.Fatalf("the child found no hands process:\n%s", r)
	}
	// The ABI wrun runs at (the matrix lowers it with WRUN_LANDLOCK_ABI).
	if abi := matrixFeatures(runOpts{}).LandlockABI; abi >= 6 {
		// The signal scope: the kill is refused, and the call still works.
		if strings.Contains(r.stdout, "killed") || r.code != 0 || strings.Contains(r.stderr, warning) {
			t.Fatalf("at Landlock ABI %d the command killed the hands, or its call failed:\n%s", abi, r)
		}
	} else if !strings.Contains(r.stdout, "killed") || !strings.Contains(r.stdout, "EPERM") || !strings.Contains(r.stderr, warning) {
		t.Fatalf("below ABI 6 the command kills the hands: want the call refused and a warning naming the hands:\n%s", r)
	}

	// The hands killed from outside while the command waits on its
	// stdin: it first starts the hands with a call, then prints its PID
	// namespace, which names its hands.
	wait := first + ` >/dev/null; readlink /proc/self/ns/pid; read x; `
	cmd := exec.Command(bins.wrun, "--grant", "verify", "--", "sh", "-c", wait+self)
	cmd.Dir = ws
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	out := bufio.NewReader(stdout)
	ns, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("the command printed no PID namespace: %v\n%s", err, errb.String())
	}
	ns = strings.TrimSpace(ns)
	// The hands may still be starting (the call was queued for it while
	// it started): look for it a while.
	killed := 0
	for try := 0; killed == 0 && try < 200; try++ {
		if try > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			cmdline, _ := os.ReadFile(p + "/cmdline")
			if !strings.HasPrefix(string(cmdline), "wrun:stage2\x00hands\x00") {
				continue
			}
			if l, err := os.Readlink(p + "/ns/pid"); err != nil || l != ns {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(p))
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			}
		}
	}
	stdin.Close()
	rest, _ := io.ReadAll(out)
	werr := cmd.Wait()
	r = result{stdout: ns + "\n" + string(rest), stderr: errb.String()}
	if werr != nil {
		r.code = cmd.ProcessState.ExitCode()
	}
	if killed != 1 {
		t.Fatalf("found %d hands processes of the run (namespace %s) to kill, want 1:\n%s", killed, ns, r)
	}
	if !strings.Contains(r.stdout, "EPERM") || !strings.Contains(r.stderr, warning) || !strings.Contains(r.stderr, "failed with EPERM") {
		t.Errorf("after the hands died, want the call refused and a warning naming the hands:\n%s", r)
	}

	// The control: the same call with the hands alive.
	r = wrun(t, runOpts{dir: ws}, "--grant", "verify", "--", "sh", "-c", self)
	if r.code != 0 || strings.Contains(r.stderr, warning) {
		t.Fatalf("control: a UNIX socket of the sandbox's own with the hands alive:\n%s", r)
	}
}

// TestSCMCredentialsUnderMediation: SCM_CREDENTIALS cannot pass through
// the mediation (the hands sends for the caller, and the kernel accepts
// only the sender's own pid): the send fails, and the refusal is a denial
// of its own (send_credentials) offering desktop=on, under which nothing
// is mediated and the credentials arrive as sent. The control sends them
// bare.
func TestSCMCredentialsUnderMediation(t *testing.T) {
	if !viaStage() || bins.features.LandlockABI >= 9 || !bins.features.UserNotif {
		t.Skip("UNIX sockets are mediated through the stage, below Landlock ABI 9, with seccomp user notification")
	}
	ws := workspace(t)
	if got := bare(t, runOpts{dir: ws}, "scm-creds"); got != "ok" {
		t.Fatalf("control: SCM_CREDENTIALS bare: %s", got)
	}
	_, req, r := runJSON(t, runOpts{dir: ws}, "--grant", "verify", "--", bins.probe, "scm-creds")
	if !strings.HasPrefix(strings.TrimSpace(r.stdout), "err EPERM") || req == nil {
		t.Fatalf("SCM_CREDENTIALS under verify: want EPERM and a request:\n%s", r)
	}
	var found bool
	for _, d := range req.Denials {
		if d.Right == "send_credentials" && d.WithheldBy.Rule == "unix-credentials-mediated" {
			found = findAlt(&escalate.Request{Denials: []escalate.DeniedAct{d}}, "desktop-on") != nil
		}
	}
	if !found {
		t.Errorf("no send_credentials denial offering desktop=on:\n%s", r)
	}
	if got := probe(t, runOpts{dir: ws}, "verify,desktop=on", "scm-creds"); got != "ok" {
		t.Errorf("SCM_CREDENTIALS under verify,desktop=on: %s, want ok", got)
	}
}
