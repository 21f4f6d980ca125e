//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteOutsideGrantIsDenied(t *testing.T) {
	requireABI(t, 3)
	for _, h := range holders {
		t.Run(h.m.name, func(t *testing.T) {
			h.m.usable(t)
			ws := modeDir(t, h.m)
			outside := filepath.Join(modeDir(t, h.m), "outside.txt")
			inside := filepath.Join(ws, "inside.txt")
			o := modeOpts(h.m, ws)

			// Control: without wrun both writes succeed.
			if got := bare(t, o, "write", outside); got != "ok" {
				t.Fatalf("control write outside: %s", got)
			}
			if got := bare(t, o, "write", inside); got != "ok" {
				t.Fatalf("control write inside: %s", got)
			}
			os.Remove(outside)
			os.Remove(inside)

			for _, g := range []string{"inspect", "verify", "write", "full"} {
				if got := probe(t, o, g, "write", outside); !strings.HasPrefix(got, "err "+h.writeErr) {
					t.Errorf("%s: write outside the grant: %s, want %s", g, got, h.writeErr)
				}
				if exists(outside) {
					t.Fatalf("%s: %s appeared", g, outside)
				}
			}
			for _, g := range []string{"inspect", "verify"} {
				if got := probe(t, o, g, "write", inside); !strings.HasPrefix(got, "err "+h.writeErr) {
					t.Errorf("%s: write in the read-only workspace: %s, want %s", g, got, h.writeErr)
				}
				if exists(inside) {
					t.Fatalf("%s: %s appeared", g, inside)
				}
			}
			for _, g := range []string{"write", "full"} {
				if got := probe(t, o, g, "write", inside); got != "ok" {
					t.Errorf("%s: write in the writable workspace: %s", g, got)
				}
				os.Remove(inside)
			}
		})
	}
}

func TestReadOnlyGrantsCannotTruncateOrRemove(t *testing.T) {
	requireABI(t, 3)
	for _, h := range holders {
		t.Run(h.m.name, func(t *testing.T) {
			h.m.usable(t)
			ws := modeDir(t, h.m)
			o := modeOpts(h.m, ws)
			f := filepath.Join(ws, "data.txt")
			mustWrite(t, f, "precious\n")
			if h.m.cred != nil {
				os.Chown(f, int(h.m.cred.Uid), int(h.m.cred.Gid))
			}
			ops := [][]string{{"truncate", f}, {"remove", f}, {"append", f}, {"rename", f, f + ".moved"}, {"mkdir", filepath.Join(ws, "d")}}
			for _, op := range ops {
				if got := probe(t, o, "inspect", op...); !strings.HasPrefix(got, "err "+h.writeErr) {
					t.Errorf("%v under inspect: %s, want %s", op, got, h.writeErr)
				}
			}
			if mustRead(t, f) != "precious\n" || exists(f+".moved") || exists(filepath.Join(ws, "d")) {
				t.Fatal("the workspace changed")
			}
			// Control: each operation without wrun works.
			for _, op := range ops {
				mustWrite(t, f, "precious\n")
				if h.m.cred != nil {
					os.Chown(f, int(h.m.cred.Uid), int(h.m.cred.Gid))
				}
				if got := bare(t, o, op...); got != "ok" {
					t.Fatalf("control %v: %s", op, got)
				}
			}
		})
	}
}

func TestInspectReadsWorkspace(t *testing.T) {
	ws := workspace(t)
	mustWrite(t, filepath.Join(ws, "src", "main.c"), "int main(){}\n")
	r := wrun(t, runOpts{dir: ws}, "--", "sh", "-c", "cat src/main.c && ls src && echo tmp=$TMPDIR && touch \"$TMPDIR/scratch\" && echo scratch-ok")
	if r.code != 0 || !strings.Contains(r.stdout, "int main(){}") || !strings.Contains(r.stdout, "main.c") || !strings.Contains(r.stdout, "scratch-ok") {
		t.Fatalf("inspect could not read the workspace or use TMPDIR:\n%s", r)
	}
	// The private temp dir is emptied afterwards (its directory stays
	// for the workspace's next run).
	var tmp string
	for _, l := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "tmp="); ok {
			tmp = v
		}
	}
	if tmp == "" || exists(filepath.Join(tmp, "scratch")) {
		t.Fatalf("private TMPDIR %q was not emptied", tmp)
	}
}

func TestCredentialStoresAreHidden(t *testing.T) {
	requireABI(t, 1)
	ws := workspace(t)
	home := workspace(t)
	key := filepath.Join(home, ".ssh", "id_ed25519")
	aws := filepath.Join(home, ".aws", "credentials")
	netrc := filepath.Join(home, ".netrc")
	rc := filepath.Join(home, ".bashrc")
	for _, f := range []string{key, aws, netrc, rc} {
		mustWrite(t, f, "secret\n")
	}
	env := runOpts{dir: ws, env: []string{"HOME=" + home}}
	for _, f := range []string{key, aws, netrc} {
		if got := bare(t, env, "read", f); got != "ok" {
			t.Fatalf("control read %s: %s", f, got)
		}
		if got := probe(t, env, "inspect", "read", f); !strings.HasPrefix(got, "err EACCES") {
			t.Errorf("read %s under inspect: %s", f, got)
		}
		if got := probe(t, env, "full", "read", f); !strings.HasPrefix(got, "err EACCES") {
			t.Errorf("read %s under full: %s", f, got)
		}
	}
	// The rest of the home is hidden too (shell start-up files often
	// export tokens), but for what toolchains read.
	if got := probe(t, env, "inspect", "read", rc); !strings.HasPrefix(got, "err EACCES") {
		t.Errorf("read %s: %s", rc, got)
	}
	gitconfig := filepath.Join(home, ".gitconfig")
	mustWrite(t, gitconfig, "[user]\n\tname = x\n")
	if got := probe(t, env, "inspect", "read", gitconfig); got != "ok" {
		t.Errorf("read %s: %s", gitconfig, got)
	}
	// An explicit grant of exactly the store opens it.
	r := wrun(t, env, "--allow-read", filepath.Join(home, ".ssh"), "--", bins.probe, "read", key)
	if strings.TrimSpace(r.stdout) != "ok" {
		t.Errorf("--allow-read ~/.ssh: %s", r)
	}
}

func TestCredentialStoreBehindSymlinkIsHidden(t *testing.T) {
	requireABI(t, 1)
	ws := workspace(t)
	home := workspace(t)
	real := filepath.Join(workspace(t), "real-ssh")
	mustWrite(t, filepath.Join(real, "id_rsa"), "secret\n")
	if err := os.Symlink(real, filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	env := runOpts{dir: ws, env: []string{"HOME=" + home}}
	for _, p := range []string{filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(real, "id_rsa")} {
		if got := bare(t, env, "read", p); got != "ok" {
			t.Fatalf("control: %s", got)
		}
		if got := probe(t, env, "inspect", "read", p); !strings.HasPrefix(got, "err EACCES") {
			t.Errorf("read %s through a symlinked ~/.ssh: %s", p, got)
		}
	}
}

func listen(t *testing.T) (addr string, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	return ln.Addr().String(), accepted
}

func TestNetworkOffDeniesTCP(t *testing.T) {
	requireABI(t, 1)
	ws := workspace(t)
	addr, accepted := listen(t)
	if got := bare(t, runOpts{dir: ws}, "tcp", addr); got != "ok" {
		t.Fatalf("control connect: %s", got)
	}
	<-accepted
	if got := probe(t, runOpts{dir: ws}, "inspect", "tcp", addr); !strings.HasPrefix(got, "err EPERM") && !strings.HasPrefix(got, "err EACCES") {
		t.Errorf("connect with network=off: %s", got)
	}
	if got := probe(t, runOpts{dir: ws}, "verify,network=off", "socket", "inet6"); !strings.HasPrefix(got, "err EPERM") {
		t.Errorf("AF_INET6 socket with network=off: %s", got)
	}
	if got := probe(t, runOpts{dir: ws}, "inspect", "socket-highbits"); !strings.HasPrefix(got, "err EPERM") {
		t.Errorf("AF_INET socket with high bits set, network=off: %s", got)
	}
	select {
	case <-accepted:
		t.Fatal("the listener accepted a connection from the sandbox")
	case <-time.After(100 * time.Millisecond):
	}
	if got := probe(t, runOpts{dir: ws}, "inspect,network=on", "tcp", addr); got != "ok" {
		t.Errorf("connect with network=on: %s", got)
	}
	if got := probe(t, runOpts{dir: ws}, "verify,network=on", "tcp", addr); got != "ok" {
		t.Errorf("connect under verify,network=on: %s", got)
	}
}

func TestUnixSocketsOutsideAreUnreachable(t *testing.T) {
	requireABI(t, 1)
	ws := workspace(t)
	sock := filepath.Join(workspace(t), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if got := bare(t, runOpts{dir: ws}, "unix", sock); got != "ok" {
		t.Fatalf("control: %s", got)
	}
	for _, g := range []string{"inspect", "verify", "full"} {
		if got := probe(t, runOpts{dir: ws}, g, "unix", sock); !strings.HasPrefix(got, "err EPERM") && !strings.HasPrefix(got, "err EACCES") {
			t.Errorf("%s: connect to a UNIX socket outside: %s", g, got)
		}
	}
	if got := probe(t, runOpts{dir: ws}, "inspect", "socketpair"); got != "ok" {
		t.Errorf("socketpair: %s", got)
	}
	if got := probe(t, runOpts{dir: ws}, "inspect,desktop=on", "unix", sock); got != "ok" {
		t.Errorf("desktop=on: %s", got)
	}
}

func TestInheritedFileDescriptorIsClosed(t *testing.T) {
	ws := workspace(t)
	leak := filepath.Join(workspace(t), "leak.txt")
	f, err := os.Create(leak)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Control: a child of a plain launcher can write to the inherited fd 3.
	if got := strings.TrimSpace(run(t, runOpts{dir: ws, files: []*os.File{f}}, bins.probe, "writefd", "3").stdout); got != "ok" {
		t.Fatalf("control: %s", got)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	r := wrun(t, runOpts{dir: ws, files: []*os.File{f}}, "--", bins.probe, "writefd", "3")
	if !strings.HasPrefix(strings.TrimSpace(r.stdout), "err EBADF") {
		t.Errorf("fd 3 reached the child: %s", r)
	}
	if s := mustRead(t, leak); s != "" {
		t.Errorf("the child wrote %q through an inherited fd", s)
	}
}

func TestExitStatus(t *testing.T) {
	ws := workspace(t)
	notExec := filepath.Join(ws, "script.sh")
	mustWrite(t, notExec, "#!/bin/sh\necho hi\n")
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"child status", []string{"--", "sh", "-c", "exit 3"}, 3, ""},
		{"success", []string{"--", "true"}, 0, ""},
		{"killed by SIGTERM", []string{"--", "sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"killed by SIGKILL", []string{"--", "sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"not found", []string{"--", "no-such-command-xyz"}, 127, "not found"},
		{"not found by path", []string{"--", "./nope"}, 127, "no such file"},
		{"not executable", []string{"--", notExec}, 126, "permission denied"},
		{"unknown preset", []string{"--grant", "bogus", "--", "true"}, 125, `unknown preset "bogus"`},
		{"bad field value", []string{"--grant", "verify,files=maybe", "--", "true"}, 125, "files is one of none, read, write"},
		{"unknown field", []string{"--grant", "color=red", "--", "true"}, 125, `unknown field "color"`},
		{"missing workdir", []string{"--workdir", "/no/such/dir", "--", "true"}, 125, "--workdir /no/such/dir"},
		{"missing allow-write", []string{"--allow-write", "/no/such/path", "--", "true"}, 125, "--allow-write /no/such/path: no such file or directory"},
		{"no command", []string{"--grant", "verify"}, 125, "no command"},
		{"no dashes", []string{"ls", "-la"}, 125, "after --"},
		{"unknown flag", []string{"--frobnicate", "--", "true"}, 125, "unknown flag"},
		{"shell=none", []string{"--grant", "shell=none", "--", "true"}, 125, "shell=none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wrun(t, runOpts{dir: ws}, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r)
			}
			if tc.msg != "" && !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("stderr lacks %q:\n%s", tc.msg, r.stderr)
			}
			if tc.code == 125 && strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
				t.Errorf("want a short error, got:\n%s", r.stderr)
			}
		})
	}
}

func TestSignalIsForwarded(t *testing.T) {
	ws := workspace(t)
	cmd := exec.Command(bins.wrun, "--", "sh", "-c", "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done")
	cmd.Dir = ws
	out := &strings.Builder{}
	pr, pw, _ := os.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	buf := make([]byte, 64)
	n, _ := pr.Read(buf) // "ready"
	out.Write(buf[:n])
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("wrun did not end after SIGTERM")
	}
	rest := make([]byte, 256)
	n, _ = pr.Read(rest)
	out.Write(rest[:n])
	if cmd.ProcessState.ExitCode() != 7 || !strings.Contains(out.String(), "got-term") {
		t.Fatalf("exit %d, output %q: the child did not get SIGTERM", cmd.ProcessState.ExitCode(), out)
	}
}

// TestIgnoredSignalsStayIgnored: a caller that ignores SIGHUP (nohup) or
// SIGINT (a shell's background job) passes that on to what it starts;
// wrun must too, for every grant. The control
// is the same check bare.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	ws := workspace(t)
	// SigIgn's bits: SIGHUP is 1, SIGINT is 2.
	script := filepath.Join(ws, "sigign.sh")
	if err := os.WriteFile(script, []byte(`m=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status); echo $(( 0x$m & 3 ))`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := "sh " + script
	for _, sig := range []struct {
		name string
		bit  string
	}{{"HUP", "1"}, {"INT", "2"}} {
		caller := "trap '' " + sig.name + "; exec "
		r := run(t, runOpts{dir: ws}, "sh", "-c", caller+check)
		if strings.TrimSpace(r.stdout) != sig.bit {
			t.Fatalf("control: SIG%s ignored bare: %s", sig.name, r)
		}
		for _, g := range []string{"inspect", "verify"} {
			r = run(t, runOpts{dir: ws}, "sh", "-c", caller+bins.wrun+" --grant "+g+" -- "+check)
			if got := strings.TrimSpace(r.stdout); got != sig.bit {
				t.Errorf("--grant %s: the command's ignored SIGHUP/SIGINT bits are %q, want %s (SIG%s ignored by the caller):\n%s", g, got, sig.bit, sig.name, r)
			}
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is dead for our purposes.
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

func TestBackgroundProcessesDieWithTheRun(t *testing.T) {
	ws := workspace(t)
	// Control: without wrun, a setsid'd background process outlives its shell.
	ctl := []string{"sleep", uniqueArg()}
	killOnCleanup(t, ctl...)
	r := run(t, runOpts{dir: ws}, "sh", "-c", "setsid "+strings.Join(ctl, " ")+" </dev/null >/dev/null 2>&1 &")
	time.Sleep(50 * time.Millisecond)
	if len(hostPids(ctl...)) != 1 {
		t.Fatalf("control: the background process died on its own: %s", r)
	}

	// Two background processes, found on the host by their unique
	// arguments: a setsid'd one (not a group leader, so setsid(1) does not
	// fork) and a plain one. The command shows that each was running by
	// reading its command line in its own /proc.
	setsid, plain := []string{"sleep", uniqueArg()}, []string{"sleep", uniqueArg()}
	killOnCleanup(t, setsid...)
	killOnCleanup(t, plain...)
	sh := "setsid " + strings.Join(setsid, " ") + " </dev/null >/dev/null 2>&1 & a=$!; " +
		strings.Join(plain, " ") + " </dev/null >/dev/null 2>&1 & b=$!; " +
		"sleep 0.2; tr '\\0' ' ' < /proc/$a/cmdline; echo; tr '\\0' ' ' < /proc/$b/cmdline; echo"
	r = wrun(t, runOpts{dir: ws}, "--", "sh", "-c", sh)
	if !strings.Contains(r.stdout, strings.Join(setsid, " ")) || !strings.Contains(r.stdout, strings.Join(plain, " ")) {
		t.Fatalf("the background processes did not run: %s", r)
	}
	for _, p := range [][]string{setsid, plain} {
		if left := waitGone(p...); len(left) > 0 {
			t.Errorf("background process %v (%v) outlived wrun", left, p)
		}
	}

	// --keep-background: they outlive wrun.
	kept := []string{"sleep", uniqueArg()}
	killOnCleanup(t, kept...)
	r = wrun(t, runOpts{dir: ws}, "--keep-background", "--", "sh", "-c", strings.Join(kept, " ")+" </dev/null >/dev/null 2>&1 & sleep 0.2")
	pids := hostPids(kept...)
	if r.code != 0 || len(pids) != 1 {
		t.Fatalf("--keep-background: want the background process alive, found %v: %s", pids, r)
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

func TestSeccompDenials(t *testing.T) {
	ws := workspace(t)
	// A process to trace that is not the test itself.
	target := exec.Command("sleep", "30")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer target.Process.Kill()
	tests := []struct {
		op      []string
		control string // what the same call gives without wrun
	}{
		{[]string{"ptrace", strconv.Itoa(target.Process.Pid)}, "ok"},
		{[]string{"bpf"}, "err errno22"}, // EINVAL: the call reached the kernel
		{[]string{"io_uring"}, "ok"},
	}
	for _, tc := range tests {
		if got := bare(t, runOpts{dir: ws}, tc.op...); !strings.HasPrefix(got, tc.control) {
			t.Fatalf("control %v without wrun: %s, want %s", tc.op, got, tc.control)
		}
		if got := probe(t, runOpts{dir: ws}, "full", tc.op...); !strings.HasPrefix(got, "err EPERM") {
			t.Errorf("%v under wrun: %s, want EPERM", tc.op, got)
		}
	}
	// mount has no harmless control as root; the sandbox refuses it.
	if got := probe(t, runOpts{dir: ws}, "full", "mount", ws); !strings.HasPrefix(got, "err EPERM") {
		t.Errorf("mount under wrun: %s, want EPERM", got)
	}
	// TIOCSTI needs a terminal on stdin: script(1) gives one.
	requireTool(t, "script") // the TIOCSTI part
	if r := run(t, runOpts{dir: ws}, "script", "-qec", bins.probe+" tiocsti", "/dev/null"); !strings.Contains(r.stdout, "ok") {
		t.Fatalf("control TIOCSTI without wrun: %s", r)
	}
	if r := run(t, runOpts{dir: ws}, "script", "-qec", bins.wrun+" -- "+bins.probe+" tiocsti", "/dev/null"); !strings.Contains(r.stdout, "err EPERM") {
		t.Errorf("TIOCSTI under wrun: %s", r)
	}
}

func TestSignalsStayInsideTheSandbox(t *testing.T) {
	requireABI(t, 6)
	for _, h := range holders {
		t.Run(h.m.name, func(t *testing.T) {
			h.m.usable(t)
			ws := modeDir(t, h.m)
			// A process outside the sandbox, of the same user (so that only
			// the sandbox can stand between them).
			outsider := exec.Command("sleep", "30")
			outsider.SysProcAttr = &syscall.SysProcAttr{Credential: h.m.cred}
			if err := outsider.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { outsider.Process.Kill(); outsider.Wait() })
			pid := strconv.Itoa(outsider.Process.Pid)
			o := modeOpts(h.m, ws)
			if got := bare(t, o, "kill0", pid); got != "ok" {
				t.Fatalf("control: %s", got)
			}
			// Landlock's signal scope, or the mediation below it, refuses
			// it.
			if got := probe(t, o, "full", "kill0", pid); !strings.HasPrefix(got, "err "+h.signalErr) {
				t.Errorf("signal to a process outside the sandbox: %s, want %s", got, h.signalErr)
			}
		})
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	ws := workspace(t)
	env := runOpts{dir: ws, env: []string{"DISPLAY=:0", "SSH_AUTH_SOCK=/tmp/agent", "GITHUB_TOKEN=t0ken", "MY_API_KEY=k", "TMUX=/tmp/tmux-0/default,1,0", "HARMLESS=yes", "LC_TIME=C"}}
	r := wrun(t, env, "--", "env")
	// HARMLESS is not on the allowlist: what is not named is not passed.
	for _, bad := range []string{"DISPLAY=", "SSH_AUTH_SOCK=", "GITHUB_TOKEN=", "MY_API_KEY=", "TMUX=", "HARMLESS="} {
		if strings.Contains(r.stdout, "\n"+bad) || strings.HasPrefix(r.stdout, bad) {
			t.Errorf("%s reached the child", bad)
		}
	}
	for _, good := range []string{"LC_TIME=C", "WRUN_GRANT=files=read,shell=inspect,network=off,desktop=off", "WRUN_SANDBOX=landlock", "TMPDIR="} {
		if !strings.Contains(r.stdout, good) {
			t.Errorf("%s missing from the child's environment", good)
		}
	}
	r = wrun(t, env, "--keep-env", "GITHUB_TOKEN", "--keep-env", "HARMLESS", "--grant", "inspect,desktop=on", "--", "env")
	for _, want := range []string{"GITHUB_TOKEN=t0ken", "HARMLESS=yes", "DISPLAY=:0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("%s should pass with --keep-env / desktop=on", want)
		}
	}
}

// envSecrets are credentials under names no secret-looking pattern
// catches, and git config injected through the environment; each value
// holds a marker no other variable has.
var envSecrets = []string{
	"PGPASSWORD=pgpw-MARKER1",
	"DATABASE_URL=postgres://app:dbpw-MARKER2@db.internal:5432/app",
	"CI_JOB_TOKEN=job-MARKER3",
	"MYSQL_PWD=mypw-MARKER4",
	"GIT_CONFIG_COUNT=1",
	"GIT_CONFIG_KEY_0=http.extraHeader",
	"GIT_CONFIG_VALUE_0=Authorization: Bearer hdr-MARKER5",
	"MY_SERVICE_CREDENTIAL_X=cred-MARKER6",
	"ACTIONS_ID_TOKEN_REQUEST_TOKEN=oidc-MARKER7",
}

func TestEnvironmentIsAnAllowlist(t *testing.T) {
	requireTool(t, "git")
	ws := workspace(t)
	gitCmd(t, ws, "init", "-q")
	o := runOpts{dir: ws, env: envSecrets}
	markers := []string{"MARKER1", "MARKER2", "MARKER3", "MARKER4", "MARKER5", "MARKER6", "MARKER7"}

	// Control: without wrun the child sees every one.
	ctl := run(t, o, "env")
	for _, m := range markers {
		if !strings.Contains(ctl.stdout, m) {
			t.Fatalf("control: %s is not in the environment without wrun, so this test proves nothing\n%s", m, ctl)
		}
	}
	if got := run(t, o, "git", "config", "--get", "http.extraHeader"); !strings.Contains(got.stdout, "MARKER5") {
		t.Fatalf("control: git does not see the injected http.extraHeader without wrun: %s", got)
	}

	for _, g := range []string{"inspect", "verify", "write"} {
		r := wrun(t, o, "--grant", g, "--", "env")
		if r.code != 0 || !strings.Contains(r.stdout, "WRUN_GRANT=") {
			t.Fatalf("--grant %s: env did not run: %s", g, r)
		}
		for _, m := range markers {
			if strings.Contains(r.stdout+r.stderr, m) {
				t.Errorf("--grant %s: the child's environment holds %s:\n%s", g, m, r.stdout)
			}
		}
		// git inside the sandbox does not see the parent's injected
		// config (under verify wrun sets its own GIT_CONFIG_*).
		r = wrun(t, o, "--grant", g, "--", "git", "config", "--get", "http.extraHeader")
		if strings.Contains(r.stdout+r.stderr, "MARKER5") || r.code != 1 {
			t.Errorf("--grant %s: git config --get http.extraHeader: %s", g, r)
		}
	}

	// --keep-env passes exactly the one named.
	r := wrun(t, o, "--keep-env", "PGPASSWORD", "--", "env")
	if !strings.Contains(r.stdout, "\nPGPASSWORD=pgpw-MARKER1\n") && !strings.HasPrefix(r.stdout, "PGPASSWORD=pgpw-MARKER1\n") {
		t.Errorf("--keep-env PGPASSWORD: not passed:\n%s", r.stdout)
	}
	for _, m := range markers[1:] {
		if strings.Contains(r.stdout, m) {
			t.Errorf("--keep-env PGPASSWORD: %s passed too:\n%s", m, r.stdout)
		}
	}

	// --json lists the dropped names, never their values.
	r = wrun(t, o, "--json", "--", "true")
	var sum struct {
		EnvDropped []string `json:"env_dropped"`
	}
	line := strings.TrimSpace(r.stderr)
	if i := strings.LastIndex(line, "\n"); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal([]byte(line), &sum); err != nil {
		t.Fatalf("--json: %v\n%s", err, r)
	}
	for _, kv := range envSecrets {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(sum.EnvDropped, name) {
			t.Errorf("env_dropped %q lacks %s", sum.EnvDropped, name)
		}
	}
	for _, m := range markers {
		if strings.Contains(r.stderr, m) {
			t.Errorf("--json output holds the value %s", m)
		}
	}

	// -v names them (names only); the default output does not.
	if r := wrun(t, o, "--", "true"); strings.Contains(r.stderr, "PGPASSWORD") {
		t.Errorf("default output names dropped variables: %s", r.stderr)
	}
	r = wrun(t, o, "-v", "--", "true")
	if !strings.Contains(r.stderr, "PGPASSWORD") || !strings.Contains(r.stderr, "GIT_CONFIG_VALUE_0") {
		t.Errorf("-v does not name the dropped variables: %s", r.stderr)
	}
	for _, m := range markers {
		if strings.Contains(r.stderr, m) {
			t.Errorf("-v prints the value %s", m)
		}
	}

	// explain states the rule and what this environment would lose.
	r = wrun(t, o, "explain")
	for _, want := range []string{"allowlist", "PGPASSWORD", "DATABASE_URL", "GIT_CONFIG_VALUE_0", "PATH"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, m := range markers {
		if strings.Contains(r.stdout, m) {
			t.Errorf("explain prints the value %s", m)
		}
	}
}

func TestStdoutRedirectedToAFileStaysUsable(t *testing.T) {
	ws := workspace(t)
	out := filepath.Join(workspace(t), "out.log")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bins.wrun, "--", "sh", "-c", "echo direct; echo reopened > /dev/stdout")
	cmd.Dir = ws
	cmd.Stdout = f
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v", err)
	}
	if got := mustRead(t, out); !strings.Contains(got, "reopened") {
		t.Fatalf("reopening /dev/stdout failed; log: %q", got)
	}
}

func TestBestEffortSaysDegraded(t *testing.T) {
	requireABI(t, 6)
	ws := workspace(t)
	// Below ABI 6 wrun holds the signal scope by making the command's
	// signals itself: the grant runs in full where it can mediate.
	if matrixFeatures(runOpts{}).UserNotif {
		r := wrun(t, runOpts{dir: ws, env: []string{"WRUN_LANDLOCK_ABI=5"}}, "--", "true")
		if r.code != 0 || strings.Contains(r.stderr, "DEGRADED") {
			t.Fatalf("ABI 5 with the mediation should run in full:\n%s", r)
		}
	}
	// Without it nothing holds the signal scope: refused, or DEGRADED.
	r := wrun(t, runOpts{dir: ws, env: []string{"WRUN_LANDLOCK_ABI=5", "WRUN_SIMULATE=no-user-notif"}}, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "--best-effort") {
		t.Fatalf("ABI 5 without the mediation should refuse the grant:\n%s", r)
	}
	// Without Landlock nothing hides the hidden paths: the run is refused.
	old := runOpts{dir: ws, env: []string{"WRUN_LANDLOCK_ABI=0"}}
	r = run(t, old, bins.wrun, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "no read of hidden paths") || !strings.Contains(r.stderr, "needs Landlock ABI 1 (Linux 5.13)") || !strings.Contains(r.stderr, "--best-effort") {
		t.Fatalf("a kernel without Landlock or namespaces should refuse the grant:\n%s", r)
	}
	r = wrun(t, old, "--best-effort", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "DEGRADED") {
		t.Fatalf("--best-effort should run and say DEGRADED:\n%s", r)
	}
	r = wrun(t, old, "--best-effort", "--json", "--", "true")
	var sum struct {
		Degraded    bool     `json:"degraded"`
		NotEnforced []string `json:"not_enforced"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &sum); err != nil || !sum.Degraded || len(sum.NotEnforced) == 0 {
		t.Fatalf("--json should say degraded: %v\n%s", err, r)
	}
	r = wrun(t, old, "explain", "--best-effort")
	if !strings.Contains(r.stdout, "DEGRADED") {
		t.Fatalf("explain should say DEGRADED:\n%s", r.stdout)
	}
	// Degraded still enforces what the kernel can, whichever way wrun
	// holds the write scope.
	for _, h := range holders {
		t.Run(h.m.name, func(t *testing.T) {
			h.m.usable(t)
			outside := filepath.Join(modeDir(t, h.m), "x")
			o := modeOpts(h.m, modeDir(t, h.m), "WRUN_LANDLOCK_ABI=5")
			if got := bare(t, o, "write", outside); got != "ok" {
				t.Fatalf("control: %s", got)
			}
			os.Remove(outside)
			r := wrun(t, o, "--best-effort", "--", bins.probe, "write", outside)
			if r.code != 1 || !strings.Contains(r.stdout, "err "+h.writeErr) || exists(outside) {
				t.Fatalf("a degraded run wrote outside the grant (want %s):\n%s", h.writeErr, r)
			}
		})
	}
}

func TestNestedWrunCannotWiden(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	target := filepath.Join(ws, "made-by-nested")
	r := wrun(t, runOpts{dir: ws}, "--grant", "inspect", "--", bins.wrun, "--grant", "full", "--", bins.probe, "write", target)
	if exists(target) {
		t.Fatal("a nested wrun widened its parent's grant")
	}
	if !strings.Contains(r.stderr, "narrowed") {
		t.Errorf("the nested wrun should say it narrowed the grant:\n%s", r)
	}
}

func TestExplainAndDoctor(t *testing.T) {
	ws := workspace(t)
	r := wrun(t, runOpts{dir: ws}, "explain", "--grant", "verify")
	for _, want := range []string{"grant:      verify", "Writable:", "Hidden (not readable):", "Protected", "Network and IPC:", "Environment:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q", want)
		}
	}
	r = wrun(t, runOpts{dir: ws}, "explain", "--grant", "write", "--json")
	var ex struct {
		Policy struct {
			Grant string `json:"grant"`
			Rules []struct {
				Path   string   `json:"path"`
				Access []string `json:"access"`
			} `json:"rules"`
		} `json:"policy"`
		Enforcement struct {
			Platform string `json:"platform"`
		} `json:"enforcement"`
		WouldRun bool `json:"would_run"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ex); err != nil {
		t.Fatalf("explain --json: %v\n%s", err, r.stdout)
	}
	if ex.Policy.Grant != "files=write,shell=verify,network=off,desktop=off" || ex.Enforcement.Platform != "landlock" {
		t.Errorf("explain --json: %+v", ex)
	}
	found := false
	for _, rule := range ex.Policy.Rules {
		if rule.Path == ws && strings.Contains(strings.Join(rule.Access, ","), "make_reg") {
			found = true
		}
	}
	if !found {
		t.Errorf("explain --json: the workspace is not writable under write: %+v", ex.Policy.Rules)
	}
	r = wrun(t, runOpts{dir: ws}, "doctor", "--json")
	var doc struct {
		Features []struct {
			Name      string `json:"name"`
			Available bool   `json:"available"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Features) < 5 {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
}

func TestCapabilitiesDoNotReachTheChild(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to hand wrun an ambient capability")
	}
	ws := sharedWorkspace(t)
	const capNetRaw = 13
	o := runOpts{dir: ws, cred: nobody, ambient: []uintptr{capNetRaw}, env: []string{"HOME=/nonexistent"}}
	capAmb := func(status string) string {
		for _, l := range strings.Split(status, "\n") {
			if v, ok := strings.CutPrefix(l, "CapAmb:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return "?"
	}
	// Control: without wrun the ambient capability reaches the program.
	if got := capAmb(run(t, o, "cat", "/proc/self/status").stdout); got != "0000000000002000" {
		t.Fatalf("control: CapAmb %s", got)
	}
	if got := capAmb(wrun(t, o, "--", "cat", "/proc/self/status").stdout); got != "0000000000000000" {
		t.Errorf("under wrun the child has ambient capabilities %s", got)
	}
	// As root the child keeps uid 0 but no capability at all.
	r := wrun(t, runOpts{dir: ws}, "--", "grep", "-E", "^Cap(Prm|Eff|Bnd|Amb)", "/proc/self/status")
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasSuffix(l, "0000000000000000") {
			t.Errorf("root's child keeps a capability: %q", l)
		}
	}
}

// TestProcessesAreBounded (issue 24, class 10): as a user, the command
// starts with RLIMIT_NPROC at the user's tasks plus 4096, where that
// is lower than the limit it would have, so a fork bomb stops there (the
// kernel counts every process of the user and exempts root's). Control:
// bare, the limit is the user's own.
func TestProcessesAreBounded(t *testing.T) {
	modeUser.usable(t)
	ws := modeDir(t, modeUser)
	o := modeOpts(modeUser, ws)
	limit := func(r result) string {
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "Max processes") {
				return strings.Fields(l)[2]
			}
		}
		return ""
	}
	bare := run(t, o, "cat", "/proc/self/limits")
	r := wrun(t, o, "--", "cat", "/proc/self/limits")
	got, was := limit(r), limit(bare)
	n, err := strconv.Atoi(got)
	if err != nil || got == was {
		t.Fatalf("the command's RLIMIT_NPROC is %q, bare %q: want a bound of its own\n%s", got, was, r)
	}
	if n < 4096 || n > 4096+65536 {
		t.Errorf("the command's RLIMIT_NPROC is %d, want the user's processes plus 4096", n)
	}
}

// TestManyThreadsStillFork: RLIMIT_NPROC counts the user's tasks, threads
// included, so the bound must too. A user whose other program runs more
// threads than the 4096 the command may add (a JVM, a browser) got a bound
// below what it already had, and every fork of the command failed with
// EAGAIN (exit 126 before the command even started). Control: the
// program's threads exist (the user's task count exceeds 4096 while the
// command runs), so the old count, processes alone, was short.
func TestManyThreadsStillFork(t *testing.T) {
	modeUser.usable(t)
	ws := modeDir(t, modeUser)
	o := modeOpts(modeUser, ws)
	const threads = 4300
	py := exec.Command("/usr/bin/python3", "-c", fmt.Sprintf(`import threading, time, sys
threading.stack_size(64*1024)
for _ in range(%d):
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
print("ready", flush=True)
sys.stdin.read()`, threads))
	py.SysProcAttr = &syscall.SysProcAttr{Credential: modeUser.cred}
	stdin, err := py.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := py.Start(); err != nil {
		t.Skipf("python3 is needed to start %d threads: %v", threads, err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = py.Process.Kill()
		_ = py.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the threads did not start: %q %v", line, err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", py.Process.Pid))
	if err != nil || len(tasks) <= threads {
		t.Fatalf("the program runs %d tasks (%v), want more than %d", len(tasks), err, threads)
	}
	r := wrun(t, o, "--", "sh", "-c", "true & wait; echo forked")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "forked" {
		t.Fatalf("with %d threads of the user elsewhere, the command cannot fork:\n%s", threads, r)
	}
}
