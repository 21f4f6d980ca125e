//go:build linux

package integration

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wrun-dev/wrun/escalate"
)

// TestApprovedAllowUnix: a connect to a UNIX socket an outside process
// bound is refused under verify, and the request offers --allow-unix
// with that socket as the narrow alternative: beyond the default ceiling
// (desktop=off), approvable within one that has desktop=on, and then the
// retry connects. The control connects bare.
func TestApprovedAllowUnix(t *testing.T) {
	if !mediated(modeRoot) {
		t.Skip("wrun names the refused socket where it mediates UNIX sockets: below Landlock ABI 9, with seccomp user notification")
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

// TestSCMCredentialsUnderMediation: SCM_CREDENTIALS cannot pass through
// the mediation (wrun sends for the caller, and the kernel accepts
// only the sender's own pid): the send fails, and the refusal is a denial
// of its own (send_credentials) offering desktop=on, under which nothing
// is mediated and the credentials arrive as sent. The control sends them
// bare.
func TestSCMCredentialsUnderMediation(t *testing.T) {
	if !mediated(modeRoot) {
		t.Skip("UNIX sockets are mediated below Landlock ABI 9, with seccomp user notification")
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
	// network=on: under verify's default network=hosts SCM_CREDENTIALS
	// is refused (EPERM) even with desktop=on; this checks desktop=on.
	if got := probe(t, runOpts{dir: ws}, "verify,desktop=on,network=on", "scm-creds"); got != "ok" {
		t.Errorf("SCM_CREDENTIALS under verify,desktop=on,network=on: %s, want ok", got)
	}
}
