//go:build linux

package integration

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Reaching processes and IPC objects outside the sandbox where Landlock's
// scopes do not look, and making what outlives the run (a setuid file, a
// user namespace of the child's own). Each case runs first without wrun
// (the control: the effect must appear), then under wrun, and the effect
// is checked from outside: the victim's limits in /proc, the kernel's
// lists of SysV objects, a queue opened by an unsandboxed process, the
// mode of the file on disk.

// hostileCase is one attempt.
type hostileCase struct {
	name string
	// sh runs with $PROBE, $VICTIM (a process outside, when victim is
	// set), $KEY (a fresh SysV key), $MQ (a fresh queue name) and $W (a
	// directory the grant makes writable).
	sh     string
	victim bool
	// effect says what happened outside ("" if nothing did).
	effect func(t *testing.T, c *hostileRun) string
	// grants to try; the default is inspect, verify and write.
	grants []string
}

// hostileRun is one run's fresh names and its victim.
type hostileRun struct {
	key    int
	mq     string
	victim *exec.Cmd
	w      string
	m      escapeMode
}

func newHostileRun(t *testing.T, m escapeMode, w string, victim bool) *hostileRun {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	h := &hostileRun{key: int(binary.BigEndian.Uint32(b[:4])&0x3fffffff) + 1, mq: "wrun-test-" + hex.EncodeToString(b[4:]), w: w, m: m}
	t.Cleanup(func() {
		// Remove what a run may have made, as root (a no-op if nothing).
		run(t, runOpts{}, bins.probe, "shmrm", strconv.Itoa(h.key))
		run(t, runOpts{}, bins.probe, "msgrm", strconv.Itoa(h.key))
		run(t, runOpts{}, bins.probe, "mqunlink", h.mq)
	})
	if victim {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: m.cred}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait()
		t.Cleanup(func() { c.Process.Kill() })
		h.victim = c
	}
	return h
}

// script is sh with the run's names written in: the child's environment
// is an allowlist, so variables of the test would not reach it, and an
// act that lost them would miss its target and pass.
func (h *hostileRun) script(sh string) string {
	for _, kv := range h.env() {
		k, v, _ := strings.Cut(kv, "=")
		sh = strings.ReplaceAll(sh, "$"+k, v)
	}
	return sh
}

func (h *hostileRun) env() []string {
	env := []string{"PROBE=" + bins.probe, "KEY=" + strconv.Itoa(h.key), "MQ=" + h.mq, "W=" + h.w}
	if h.victim != nil {
		env = append(env, "VICTIM="+strconv.Itoa(h.victim.Process.Pid))
	}
	return env
}

// sysvListed: the kernel lists a SysV object with the run's key.
func sysvListed(kind string) func(t *testing.T, h *hostileRun) string {
	return func(t *testing.T, h *hostileRun) string {
		b, err := os.ReadFile("/proc/sysvipc/" + kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.Itoa(h.key) {
				return "a SysV " + kind + " object with key " + f[0] + " exists outside the sandbox"
			}
		}
		return ""
	}
}

func TestEscapeProcessesAndIPC(t *testing.T) {
	requireABI(t, 3)
	cases := []hostileCase{
		{name: "prlimit lowers the limits of a process outside", victim: true,
			sh: `$PROBE prlimit $VICTIM`,
			effect: func(t *testing.T, h *hostileRun) string {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(h.victim.Process.Pid) + "/limits")
				for _, line := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(line, "Max open files") && strings.Fields(line)[3] == "7" {
						return "the victim's open-files limit is 7"
					}
				}
				return ""
			}},
		{name: "prlimit with a hard CPU limit through the prlimit tool", victim: true,
			sh: `prlimit --pid $VICTIM --cpu=1:1`,
			effect: func(t *testing.T, h *hostileRun) string {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(h.victim.Process.Pid) + "/limits")
				for _, line := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(line, "Max cpu time") && strings.Fields(line)[3] == "1" {
						return "the victim's CPU limit is 1 s: the kernel will kill it"
					}
				}
				return ""
			}},
		{name: "SysV shared memory segment created world-writable", sh: `$PROBE shmget $KEY`, effect: sysvListed("shm")},
		{name: "SysV message queue created", sh: `$PROBE msgget $KEY`, effect: sysvListed("msg")},
		{name: "POSIX message queue created", sh: `$PROBE mqcreate $MQ`,
			effect: func(t *testing.T, h *hostileRun) string {
				if r := run(t, runOpts{}, bins.probe, "mqopen", h.mq); strings.TrimSpace(r.stdout) == "ok" {
					return "the queue " + h.mq + " exists outside the sandbox"
				}
				return ""
			}},
		{name: "a user namespace of the child's own (unshare)", sh: `$PROBE userns`,
			effect: func(t *testing.T, h *hostileRun) string { return "" }}, // checked by output below
		{name: "a user namespace of the child's own (unshare -U)", sh: `unshare -U true && echo made-userns`,
			effect: func(t *testing.T, h *hostileRun) string { return "" }},
		{name: "chmod 4755 a file in a writable tree", grants: []string{"write"},
			sh: `cp /bin/true $W/suid && chmod 4755 $W/suid`,
			effect: func(t *testing.T, h *hostileRun) string {
				if fi, err := os.Stat(filepath.Join(h.w, "suid")); err == nil && fi.Mode()&os.ModeSetuid != 0 {
					return "suid has mode " + fi.Mode().String()
				}
				return ""
			}},
		{name: "create a file setuid and setgid in one call", grants: []string{"write"},
			sh: `$PROBE creat-setid $W/made`,
			effect: func(t *testing.T, h *hostileRun) string {
				if fi, err := os.Stat(filepath.Join(h.w, "made")); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					return "made has mode " + fi.Mode().String()
				}
				return ""
			}},
	}
	// The user-namespace cases report through the child's output.
	printedOK := func(r result) bool {
		return strings.Contains(r.stdout, "made-userns") || strings.TrimSpace(r.stdout) == "ok"
	}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					escapeAttempt(t)
					userns := strings.Contains(c.name, "user namespace")
					if userns && !userNSWorks(m.cred) {
						t.Skip("control needs unprivileged user namespaces")
					}
					ws := sharedWorkspace(t)
					if m.cred != nil {
						os.Chown(ws, int(m.cred.Uid), int(m.cred.Gid))
					}
					h := newHostileRun(t, m, ws, c.victim)
					r := run(t, runOpts{dir: ws, cred: m.cred, env: h.env()}, "sh", "-c", h.script(c.sh))
					if e := c.effect(t, h); e == "" && !(userns && printedOK(r)) {
						t.Fatalf("control: without wrun the act had no effect, so this case proves nothing\nact: %s\n%s", c.sh, r)
					}
					grants := c.grants
					if grants == nil {
						grants = []string{"inspect", "verify", "write"}
					}
					for _, g := range grants {
						ws := sharedWorkspace(t)
						if m.cred != nil {
							os.Chown(ws, int(m.cred.Uid), int(m.cred.Gid))
						}
						h := newHostileRun(t, m, ws, c.victim)
						env := append(h.env(), m.env...)
						r := wrun(t, runOpts{dir: ws, cred: m.cred, env: env, bestEffort: m.bestEffort}, "--grant", g, "--", "sh", "-c", h.script(c.sh))
						time.Sleep(10 * time.Millisecond)
						if e := c.effect(t, h); e != "" || userns && printedOK(r) {
							t.Errorf("ESCAPE under --grant %s (%s): %s\nact: %s\n%s", g, m.name, e, c.sh, r)
						}
						if r.code == 125 {
							t.Errorf("wrun refused to run, so the act was not tried:\n%s", r)
						}
					}
				})
			}
		})
	}
}

// The observer reads registers and memory the child chose. A length of -1
// as a 64-bit register once made it size a buffer negatively and panic,
// which ended wrun and everything it does after the run. Now the run goes
// on: a later denial is still observed exactly, and wrun reports the
// child's own status.
func TestEscapeCrashTheObserver(t *testing.T) {
	requireABI(t, 3)
	escapeAttempt(t)
	if !bins.features.UserNotif {
		t.Skip("needs seccomp user notification (the observer)")
	}
	ws := workspace(t)
	outside := filepath.Join(workspace(t), "outside")
	sh := bins.probe + ` connect-badlen; ` + bins.probe + ` write ` + outside + `; exit 3`
	// Control: the bad connect reaches the kernel, which refuses it.
	if r := run(t, runOpts{dir: ws, env: []string{"PROBE=" + bins.probe}}, "sh", "-c", `$PROBE connect-badlen`); !strings.Contains(r.stdout, "errno22") {
		t.Fatalf("control: want EINVAL from the kernel: %s", r)
	}
	os.Remove(outside)
	s, req, r := runJSON(t, runOpts{dir: ws, env: []string{"PROBE=" + bins.probe}}, "--grant", "inspect,network=on", "--", "sh", "-c", sh)
	if r.code != 3 || s.ExitCode != 3 {
		t.Fatalf("wrun did not survive to report the child's status 3:\n%s", r)
	}
	found := false
	if req != nil {
		for _, d := range req.Denials {
			found = found || d.Path == outside && d.Evidence == "exact"
		}
	}
	if !found {
		t.Errorf("the write after the hostile call was not observed exactly:\n%s", r)
	}
	if exists(outside) {
		t.Fatal("the write outside succeeded")
	}
}

// TestEscapeAbstractScopeKeepsOwn: under desktop=off the command's own
// abstract sockets work and outside ones stay out of reach. Where wrun
// mediates UNIX sockets (Landlock ABI below 9, seccomp user notification
// and pidfd_getfd) it makes the command's connects and addressed sends,
// reaching only names the sandbox's sockets hold: an autobound listener
// (the kernel picks the name) is reachable, and binding a chosen name is
// refused, since outside clients look for well-known names (X11, D-Bus)
// and would reach the sandbox's; desktop=on binds it. Where the kernel
// holds it alone (the abstract scope), a chosen name binds. Either way a
// listener outside stays unreachable. Control: the same probes without
// wrun.
func TestEscapeAbstractScopeKeepsOwn(t *testing.T) {
	if !bins.features.Seccomp {
		t.Skip("needs seccomp")
	}
	med := mediated(modeRoot)
	if !med && matrixFeatures(runOpts{}).LandlockABI < 9 {
		t.Skip("without the mediation, and below Landlock ABI 9, desktop=off creates no UNIX socket (TestEscapeUnixSocketsOutside)")
	}
	ws := workspace(t)
	name := "/wrun-test-own-abstract-" + strconv.Itoa(os.Getpid())
	if got := bare(t, runOpts{dir: ws}, "abstract-self", name+"-bare"); got != "ok" {
		t.Fatalf("control without wrun: %s", got)
	}
	if got := bare(t, runOpts{dir: ws}, "abstract-auto"); got != "ok" {
		t.Fatalf("control without wrun: autobind: %s", got)
	}
	outside := "/wrun-test-outside-abstract-" + strconv.Itoa(os.Getpid())
	accepted := unixListener(t, "@"+outside)
	for i, g := range []string{"verify", "write", "verify,network=off"} {
		t.Run(g+"/autobind", func(t *testing.T) {
			if got := probe(t, runOpts{dir: ws}, g, "abstract-auto"); got != "ok" {
				t.Errorf("--grant %s: the command's own autobound abstract socket: %s, want ok", g, got)
			}
		})
		t.Run(g+"/chosen", func(t *testing.T) {
			got := probe(t, runOpts{dir: ws}, g, "abstract-self", name+"-"+strconv.Itoa(i))
			if med && !strings.HasPrefix(got, "err EACCES") {
				t.Errorf("--grant %s: binding a chosen abstract name: %s, want EACCES", g, got)
			}
			if !med && got != "ok" {
				t.Errorf("--grant %s: the command's own abstract socket under the kernel's scope: %s, want ok", g, got)
			}
			if got := probe(t, runOpts{dir: ws}, g+",desktop=on", "abstract-self", name+"-on-"+strconv.Itoa(i)); got != "ok" {
				t.Errorf("--grant %s,desktop=on: a chosen abstract name: %s, want ok", g, got)
			}
		})
		t.Run(g+"/outside", func(t *testing.T) {
			escapeAttempt(t)
			got := probe(t, runOpts{dir: ws}, g, "abstract", outside)
			if arrived(accepted, 200*time.Millisecond) {
				t.Fatalf("ESCAPE under --grant %s: a connection to an abstract socket outside arrived (%s)", g, got)
			}
			if !strings.HasPrefix(got, "err ") {
				t.Errorf("--grant %s: the abstract socket outside: %s, want a refusal", g, got)
			}
		})
	}
}
