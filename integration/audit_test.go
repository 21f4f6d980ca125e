//go:build linux

package integration

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/escalate"
)

// auditControl sends AUDIT_GET (enabled < 0) or AUDIT_SET of the enabled
// flag and returns the flag the kernel reports (for AUDIT_GET).
func auditControl(enabled int) (uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	typ, flags := uint16(1000), uint16(unix.NLM_F_REQUEST) // AUDIT_GET
	payload := []byte{}
	if enabled >= 0 {
		typ, flags = 1001, unix.NLM_F_REQUEST|unix.NLM_F_ACK // AUDIT_SET
		payload = make([]byte, 40)                           // struct audit_status
		binary.NativeEndian.PutUint32(payload[0:], 1)        // AUDIT_STATUS_ENABLED
		binary.NativeEndian.PutUint32(payload[4:], uint32(enabled))
	}
	msg := make([]byte, 16+len(payload))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], flags)
	copy(msg[16:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, err
	}
	if n < 24 {
		return 0, errors.New("short audit reply")
	}
	if binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if e := int32(binary.NativeEndian.Uint32(buf[16:])); e != 0 {
			return 0, unix.Errno(-e)
		}
		return 0, nil
	}
	return binary.NativeEndian.Uint32(buf[20:]), nil
}

// lockAudit serialises the tests that depend on the machine-wide audit
// switch across test processes (two runs of this suite at once).
func lockAudit(t *testing.T) {
	t.Helper()
	// One lock per user: a lock file another user made cannot be opened.
	f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("wrun-audit-test-%d.lock", os.Geteuid())), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}

// withAudit switches kernel auditing on for the rest of the test and back
// to what it was afterwards, or skips.
func withAudit(t *testing.T) {
	t.Helper()
	requireABI(t, 7)
	lockAudit(t)
	was, err := auditControl(-1)
	if err != nil {
		t.Skipf("reading the audit status needs CAP_AUDIT_CONTROL in the initial namespaces: %v", err)
	}
	if was == 2 {
		t.Skip("auditing is locked (enabled=2): the test cannot switch it")
	}
	if was == 0 {
		if _, err := auditControl(1); err != nil {
			t.Skipf("switching auditing on: %v", err)
		}
		t.Cleanup(func() {
			if _, err := auditControl(0); err != nil {
				t.Errorf("switching auditing back off: %v", err)
			}
		})
	}
}

// deniedAt finds the denial of right on path (or address).
func deniedAt(req *escalate.Request, right, where string) (escalate.DeniedAct, bool) {
	if req != nil {
		for _, d := range req.Denials {
			if d.Right == right && (d.Path == where || d.Addr == where) {
				return d, true
			}
		}
	}
	return escalate.DeniedAct{}, false
}

// Landlock's own denials are confirmed by its records: the write outside
// the scope (which the mediation let continue, predicting its denial),
// the symbolic link verify keeps out of git's refs, the read of a hidden
// path (which nothing but the records reports exactly) and the signal to
// a process outside the sandbox. As root, and as a user given
// CAP_AUDIT_CONTROL and CAP_AUDIT_READ to read the audit status and
// records.
func TestAuditRecordsConfirmDenials(t *testing.T) {
	withAudit(t)
	requireTool(t, "git")
	requireABI(t, 6)
	const capAuditControl, capAuditRead = 30, 37
	for _, m := range []escapeMode{modeRoot, modeUser} {
		t.Run(m.name, func(t *testing.T) {
			ws := modeDir(t, m)
			newRepo(t, ws)
			home := modeDir(t, m)
			key := filepath.Join(home, ".ssh", "id_test")
			mustWrite(t, key, "secret\n")
			tags := filepath.Join(ws, ".git", "refs", "tags")
			if err := os.MkdirAll(tags, 0o755); err != nil {
				t.Fatal(err)
			}
			if m.cred != nil {
				chownTree(t, home, int(m.cred.Uid), int(m.cred.Gid))
				chownTree(t, ws, int(m.cred.Uid), int(m.cred.Gid))
			}
			link := filepath.Join(tags, "planted")
			outside := filepath.Join(modeDir(t, m), "out.txt")
			// A process outside the sandbox, of the same user.
			target := exec.Command("sleep", "30")
			target.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { target.Process.Kill(); target.Wait() })
			pid := strconv.Itoa(target.Process.Pid)
			// It fails (exit 3), so that its denials are asked for: a run
			// that succeeded asks for nothing.
			script := fmt.Sprintf("cat %s; ln -s x %s; echo x > %s; kill -0 %s && echo signalled; exit 3", key, link, outside, pid)
			o := modeOpts(m, ws, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
			if m.cred != nil {
				o.ambient = []uintptr{capAuditControl, capAuditRead}
			}
			if r := run(t, o, "sh", "-c", script); r.code != 3 || r.stdout != "secret\nsignalled\n" || !exists(outside) || !exists(link) {
				t.Fatalf("control without wrun: %s", r)
			}
			os.Remove(outside)
			os.Remove(link)

			_, req, r := runJSON(t, o, "--grant", "verify", "--", "sh", "-c", script)
			if req == nil {
				t.Fatalf("no request: %s", r)
			}
			if r.stdout != "" || exists(outside) || exists(link) {
				t.Fatalf("an act went through: %s", r)
			}
			if d, _ := deniedAt(req, "make_sym", link); d.Evidence != escalate.EvidenceExact || !d.Confirmed {
				t.Errorf("symlink denial %+v: want exact and confirmed on %s", d, link)
			}
			if d, _ := deniedAt(req, "make_reg", outside); d.Evidence != escalate.EvidenceExact || !d.Confirmed {
				t.Errorf("create denial %+v: want exact and confirmed on %s", d, outside)
			}
			if d, _ := deniedAt(req, "read_file", key); d.Evidence != escalate.EvidenceExact || !d.Confirmed || d.Program != "cat" || d.WithheldBy.Field != escalate.FieldHidden {
				t.Errorf("read denial %+v: want exact, confirmed, by cat, on %s, hidden", d, key)
			}
			if d, _ := deniedAt(req, "signal", "pid "+pid+" (sleep)"); d.WithheldBy.Field != escalate.FieldBoundary || !d.Confirmed {
				t.Errorf("signal denial %+v: want pid %s (sleep), boundary, confirmed", d, pid)
			}

			// With the record off, the kernel still refuses, and nothing is
			// confirmed: wrun only reads records.
			_, req, _ = runJSON(t, o, "--observe=off", "--grant", "verify", "--", "sh", "-c", script)
			if exists(outside) || exists(link) {
				t.Fatal("with --observe=off a write went through")
			}
			if req != nil {
				for _, d := range req.Denials {
					if d.Confirmed || d.Evidence == escalate.EvidenceExact {
						t.Errorf("--observe=off reported %+v as exact or confirmed", d)
					}
				}
			}
		})
	}
}

// With auditing off (the default on most machines) the denials are the
// observer's alone and none is marked confirmed.
func TestNoAuditRecordsWhenAuditingIsOff(t *testing.T) {
	requireABI(t, 7)
	lockAudit(t)
	was, err := auditControl(-1)
	if err != nil || was != 0 {
		t.Skipf("needs auditing off and readable status (status %d, %v)", was, err)
	}
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "out.txt")
	_, req, r := runJSON(t, runOpts{dir: ws}, "--", "sh", "-c", "echo x > "+outside+"; exit 3")
	if req == nil {
		t.Fatalf("no request: %s", r)
	}
	for _, d := range req.Denials {
		if d.Confirmed {
			t.Errorf("confirmed with auditing off: %+v", d)
		}
	}
}
