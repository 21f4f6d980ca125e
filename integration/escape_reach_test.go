//go:build linux

package integration

import (
	"bytes"
	"github.com/wrun-dev/wrun/sandbox/linux"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Reaching wrun itself, and outliving it. The command shares wrun's PID
// namespace and is forked from a thread of wrun's that shares its
// Landlock domain: the seccomp filter refuses every call that names that
// thread or wrun's process by number, Landlock's signal scope (or, below
// it, the mediation) every signal to anything else outside, and the
// mediation every priority, scheduling or limit of a process outside.
// When wrun is killed with SIGKILL the command dies with it, and what the
// command started can outlive it but no longer change anything the
// checks after the run hold (its calls to the mediation fail with
// ENOSYS). Where a case needs the mediation (modeNoMed) it skips there,
// naming what is missing.

// withoutMediation: in a mode without the mediation the support matrix refuses
// protection key, which nothing holds there. It asserts that wrun refuses
// to run (exit 125, naming it), counts n attempts held by that refusal
// (n = 0: the caller's escapeAttempt counts itself) and reports true: the
// caller returns rather than run the act degraded. WRUN_KNOWN_ESCAPES=1
// runs the act with --best-effort instead (and it fails).
// refusedWithoutMediation is withoutMediation for an act that the matrix
// may hold without the mediation too (by Landlock's signal scope): where
// it does, the act runs.
func refusedWithoutMediation(t *testing.T, m escapeMode, key string) bool {
	t.Helper()
	if !m.bestEffort || os.Getenv("WRUN_KNOWN_ESCAPES") == "1" || !refusedByMatrix(t, m, key) {
		return false
	}
	recordEscape(t.Name(), "held", "")
	return true
}

// mediates reports whether wrun mediates calls in mode m.
func mediates(m escapeMode) bool {
	return linux.Mediates(matrixFeatures(runOpts{cred: m.cred, env: m.env}))
}

func withoutMediation(t *testing.T, m escapeMode, key string, n int) bool {
	t.Helper()
	if !m.bestEffort || os.Getenv("WRUN_KNOWN_ESCAPES") == "1" {
		return false
	}
	if !refusedByMatrix(t, m, key) {
		t.Fatalf("%s: the support matrix holds %s, so the act should run", m.name, key)
	}
	for i := 0; i < n; i++ {
		recordEscape(t.Name(), "held", "")
	}
	return true
}

// reachAct is an attempt on the process that plays wrun: $WRUN_PID is
// its host pid, the act's $PPID is what the act sees as its parent.
type reachAct struct {
	name, sh string
	// effect says what reached wrun ("" if nothing did); seen is what
	// the watcher saw while the run lasted.
	effect func(r result, seen []string) string
	// watch, if set, reads something of wrun's from the host, every 10
	// ms while it runs.
	watch func(pid int) string
	// carved is the key of the support matrix's refusal that holds the
	// act without the mediation (modeNoMed): the refusal is asserted
	// there instead of the act run degraded.
	carved string
}

// runWatching runs argv through a shell that exports its own pid as
// WRUN_PID and then execs argv, so that WRUN_PID is argv's pid; watch, if
// set, is called with it every 10 ms until argv ends.
func runWatching(t *testing.T, o runOpts, watch func(pid int) string, argv ...string) (result, []string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `WRUN_PID=$$; export WRUN_PID; exec "$@"`, "sh"}, argv...)...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), o.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if o.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var seen []string
	timeout := time.After(2 * time.Minute)
wait:
	for {
		if watch != nil {
			if s := watch(cmd.Process.Pid); s != "" {
				seen = append(seen, s)
			}
		}
		select {
		case <-done:
			break wait
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("%v did not finish in 2 minutes", argv)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}, seen
}

// killedBySignal: the process that plays wrun was ended by a signal.
func killedBySignal(r result, _ []string) string {
	if r.code == -1 {
		return "wrun was killed by a signal"
	}
	return ""
}

// niceOf reads the nice value of pid.
func niceOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 17 {
		return ""
	}
	return f[16] // field 19 of stat, counted from the state
}

// affinityOf says whether any thread of pid is pinned to one CPU (when
// the machine has more).
func affinityOf(pid int) string {
	if runtime.NumCPU() < 2 {
		return ""
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/status")
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) == "0" {
				return "pinned " + t.Name()
			}
		}
	}
	return ""
}

// openFilesLimit reads the open-files limits of pid.
func openFilesLimit(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			return strings.Join(strings.Fields(line)[3:5], " ")
		}
	}
	return ""
}

func TestEscapeReachWrun(t *testing.T) {
	requireABI(t, 6)
	realSh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("needs sh")
	}
	if realSh, err = filepath.EvalSymlinks(realSh); err != nil {
		t.Fatal(err)
	}
	acts := []reachAct{
		{name: "kill -KILL wrun's pid", sh: `kill -KILL $WRUN_PID; echo child-done`, effect: killedBySignal, carved: "shell.wrun"},
		{name: "kill -KILL $PPID", sh: `kill -KILL $PPID; echo child-done`, effect: killedBySignal, carved: "shell.wrun"},
		{name: "kill -KILL every thread of wrun", sh: `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$WRUN_PID/task/*; do kill -KILL ${t##*/}; done; echo child-done`,
			effect: killedBySignal, carved: "shell.wrun"},
		{name: "tkill every thread of wrun", sh: `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$WRUN_PID/task/*; do $PROBE tkill ${t##*/}; done; echo child-done`,
			effect: killedBySignal, carved: "shell.wrun"},
		{name: "rt_sigqueueinfo to every thread of wrun", sh: `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$WRUN_PID/task/*; do $PROBE sigqueue ${t##*/}; done; echo child-done`,
			effect: killedBySignal, carved: "shell.wrun"},
		{name: "pidfd_send_signal through /proc/$WRUN_PID", sh: `exec 7</proc/$WRUN_PID && $PROBE kill-pidfd 7; echo child-done`,
			effect: killedBySignal, carved: "shell.wrun"},
		{name: "pidfd_send_signal through /proc/TID of every thread", sh: `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$WRUN_PID/task/*; do exec 7</proc/${t##*/}; $PROBE kill-pidfd 7; done; echo child-done`,
			effect: killedBySignal, carved: "shell.wrun"},
		{name: "F_SETOWN_EX and SIGKILL as the I/O signal to every thread", sh: `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$WRUN_PID/task/*; do $PROBE setown-ex ${t##*/}; done; echo child-done`,
			effect: killedBySignal, carved: "shell.wrun"},
		{name: "setpriority of wrun", sh: `$PROBE setpriority process $WRUN_PID; sleep 0.3`,
			watch: niceOf,
			effect: func(_ result, seen []string) string {
				for _, s := range seen {
					if s == "19" {
						return "wrun's nice value became 19"
					}
				}
				return ""
			}},
		{name: "sched_setaffinity of every thread of wrun", sh: `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$WRUN_PID/task/*; do $PROBE affinity ${t##*/}; done; sleep 0.3`,
			watch: affinityOf,
			effect: func(_ result, seen []string) string {
				for _, s := range seen {
					if strings.Contains(s, "pinned") {
						return "a thread of wrun was pinned to one CPU: " + s
					}
				}
				return ""
			}},
		{name: "prlimit lowers wrun's open-files limit", sh: `$PROBE prlimit $WRUN_PID; sleep 0.3`,
			watch: openFilesLimit,
			effect: func(r result, seen []string) string {
				for _, s := range seen {
					if strings.HasPrefix(s, "7 ") {
						return "wrun's open-files limit became " + s
					}
				}
				return ""
			}},
		{name: "read wrun's executable, environment and descriptors through /proc",
			sh: `readlink /proc/$WRUN_PID/exe; cat /proc/$WRUN_PID/environ; ls /proc/$WRUN_PID/fd; for t in /proc/$WRUN_PID/task/*; do cat $t/environ; readlink $t/exe; done 2>/dev/null`},
	}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			// A process outside the sandbox, of the mode's user, with a
			// command line nothing else has.
			marker := []string{"sleep", uniqueArg()}
			outsider := exec.Command(marker[0], marker[1:]...)
			outsider.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
			if err := outsider.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { outsider.Process.Kill(); outsider.Wait() })
			for _, a := range acts {
				t.Run(a.name, func(t *testing.T) {
					escapeAttempt(t)
					if a.carved != "" && refusedWithoutMediation(t, m, a.carved) {
						return
					}
					effect := a.effect
					if effect == nil {
						// The /proc act: what the command printed names
						// wrun's (the control's parent shell's)
						// executable, or its environment.
						effect = func(r result, _ []string) string {
							for _, l := range strings.Split(r.stdout, "\n") {
								if l == bins.wrun || l == realSh {
									return "the command saw wrun's executable through /proc: " + l
								}
							}
							if strings.Contains(r.stdout, "WRUN_REACH_MARK=") {
								return "the command read wrun's environment"
							}
							return ""
						}
					}
					ws := modeDir(t, m)
					o := modeOpts(m, ws, "PROBE="+bins.probe, "ESCAPE_SH="+a.sh, "WRUN_REACH_MARK=1")
					r, seen := runWatching(t, o, a.watch, "sh", "-c", `sh -c "$ESCAPE_SH"; echo parent-survived`)
					if e := effect(r, seen); e == "" {
						t.Fatalf("control: without wrun the act had no effect, so this case proves nothing\nact: %s\n%s", a.sh, r)
					}
					r, seen = runWatching(t, o, a.watch, append([]string{bins.wrun}, wrunArgs(t, o, "--grant", "full", "--", "sh", "-c", a.sh)...)...)
					if e := effect(r, seen); e != "" {
						t.Errorf("ESCAPE (%s): %s\nact: %s\n%s", m.name, e, a.sh, r)
					}
					if r.code == 125 {
						t.Errorf("wrun refused to run, so the act was not tried:\n%s", r)
					}
				})
			}
		})
	}
}

// TestEscapeSurviveAKilledWrun: a command starts a process that leaves
// its process group and session and is reparented (setsid, double fork),
// then wrun is killed with SIGKILL, so it can end nothing itself and runs
// none of its checks. Without a PID namespace such a process outlives
// it; what it must not do is change what those checks hold: once the
// listener is gone every call the mediation received fails with ENOSYS,
// so it cannot create (in the workspace root, nor where Landlock alone
// would allow it), remove, rename, chmod or plant git's commondir. The
// command itself dies with wrun (PR_SET_PDEATHSIG). Control: without
// wrun the same process does all of it after its parent is killed.
func TestEscapeSurviveAKilledWrun(t *testing.T) {
	requireTool(t, "setsid")
	requireABI(t, 3)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			escapeAttempt(t)
			// Without the mediation nothing depends on wrun: what survives
			// it keeps its Landlock domain, which allows the grant's writes
			// (src/) and keeps what carving holds (the root, .git); chmod
			// is not held there at all (files.metadata, degraded).
			held := []string{"after", "src/d2", "src/f2", "src/b", ".git/commondir", "src/c mode 777"}
			if !mediates(m) {
				held = []string{"after", ".git/commondir"}
			}
			for _, under := range []string{"control", "wrun"} {
				ws := modeDir(t, m)
				newRepo(t, ws)
				mustWrite(t, filepath.Join(ws, "src", "a"), "a\n")
				mustWrite(t, filepath.Join(ws, "src", "c"), "c\n")
				if m.cred != nil {
					chownTree(t, ws, int(m.cred.Uid), int(m.cred.Gid))
				}
				bg, fg := []string{"sleep", uniqueArg()}, []string{"sleep", uniqueArg()}
				killOnCleanup(t, bg...)
				killOnCleanup(t, fg...)
				// The survivor waits for its parent to be gone, then acts.
				later := "while kill -0 $P 2>/dev/null; do sleep 0.05; done; sleep 0.3; " +
					"echo x > after; mkdir src/d2; echo x > src/f2; chmod 777 src/c; mv src/a src/b; echo ../evil > .git/commondir; " +
					"exec " + strings.Join(bg, " ")
				sh := "P=$$; export P; (setsid sh -c '" + later + "' </dev/null >/dev/null 2>&1 &); " +
					"sleep 0.2; echo started; exec " + strings.Join(fg, " ")
				argv := []string{"sh", "-c", `sh -c "$ESCAPE_SH"`}
				if under == "wrun" {
					argv = append([]string{bins.wrun}, wrunArgs(t, modeOpts(m, ws), "--grant", "write", "--", "sh", "-c", sh)...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), modeOpts(m, ws, "ESCAPE_SH="+sh).env...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill() })
				line := make([]byte, 8)
				if n, _ := out.Read(line); string(line[:n]) != "started\n" {
					t.Fatalf("%s: the command did not start: %q", under, line[:n])
				}
				if !waitRunning(fg...) {
					t.Fatalf("%s: %v is not running", under, fg)
				}
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				if under == "wrun" {
					if left := waitGone(fg...); len(left) > 0 {
						t.Errorf("ESCAPE (%s): the command %v (pid %v) outlived wrun killed with SIGKILL", m.name, fg, left)
					}
				} else {
					// Bare, nothing ends the command with its parent:
					// end it as wrun's death does.
					for _, p := range hostPids(fg...) {
						syscall.Kill(p, syscall.SIGKILL)
					}
				}
				// The survivor acts once the shell that started it is gone.
				deadline := time.Now().Add(5 * time.Second)
				for time.Now().Before(deadline) && len(hostPids(bg...)) == 0 {
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond)
				var changed []string
				for _, p := range []string{"after", "src/d2", "src/f2", "src/b", ".git/commondir"} {
					if exists(filepath.Join(ws, p)) {
						changed = append(changed, p)
					}
				}
				if fi, err := os.Stat(filepath.Join(ws, "src", "c")); err == nil && fi.Mode().Perm() == 0o777 {
					changed = append(changed, "src/c mode 777")
				}
				if under == "control" {
					if len(changed) < 6 {
						t.Fatalf("control: the survivor changed only %q, so this case proves less than it says", changed)
					}
					continue
				}
				for _, c := range changed {
					if slices.Contains(held, c) {
						t.Errorf("ESCAPE (%s): after wrun was killed, what survived it changed %s (all it changed: %q)", m.name, c, changed)
					}
				}
			}
		})
	}
}

// TestEscapeCrashWrunFromInside: a Go program ends on a SIGSEGV or
// SIGABRT sent with kill (the control); wrun, whose launch thread shares
// the command's Landlock domain, must not: every thread of it is sent
// each such signal by number, and the run must still end with the
// command's status.
func TestEscapeCrashWrunFromInside(t *testing.T) {
	// The signals the Go runtime ends a program on when they come from
	// kill (SIGALRM and the like it ignores).
	sigs := []string{"SEGV", "ABRT", "BUS", "SYS", "TRAP", "FPE", "ILL"}
	for _, m := range []escapeMode{modeRoot, modeUser} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			ws := modeDir(t, m)
			for _, sig := range sigs {
				t.Run(sig, func(t *testing.T) {
					escapeAttempt(t)
					// Control: a Go program signalled so, from a shell, ends.
					o := modeOpts(m, ws, "PROBE="+bins.probe)
					r := run(t, o, "sh", "-c", `$PROBE block & p=$!; sleep 0.2; kill -`+sig+` $p; sleep 0.3; if kill -0 $p 2>/dev/null; then echo survived; kill -KILL $p; fi`)
					if r.stdout != "" {
						t.Fatalf("control: a Go program survived SIG%s: %s", sig, r)
					}
					r = wrun(t, o, "--", "sh", "-c", `q=${TMPDIR:-/tmp}/wrun-p.$$; touch $q; chmod 600 $q; rm -f $q; for t in /proc/$PPID/task/*; do kill -`+sig+` ${t##*/} 2>/dev/null; done; sleep 0.2; echo child-done; exit 3`)
					if r.code != 3 || !strings.Contains(r.stdout, "child-done") {
						t.Errorf("ESCAPE (%s): SIG%s from the command ended wrun: %s", m.name, sig, r)
					}
				})
			}
		})
	}
}

// TestExplainSaysWhatIsNotHeld: explain says, before the run, what the
// machine leaves open: without the mediation, each protection nothing
// holds; everywhere, that /proc lists the processes outside and that
// what the command starts can outlive a wrun killed with SIGKILL (but
// changes nothing then).
func TestExplainSaysWhatIsNotHeld(t *testing.T) {
	everywhere := []string{
		"/proc lists the processes outside the sandbox",
		"processes can outlive a wrun killed with SIGKILL, but every call the mediation receives then fails with ENOSYS",
	}
	refused := []string{
		"no chmod, chown, utimes or xattr change outside the write scope: NOT HELD",
		"nothing is mediated: what outlives wrun keeps its Landlock domain and seccomp filter",
	}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			r := wrun(t, modeOpts(m, modeDir(t, m)), "explain", "--grant", "inspect")
			want := everywhere
			if m.env != nil {
				want = append(refused, everywhere[0])
			}
			for _, s := range want {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("explain does not say %q:\n%s", s, r.stdout)
				}
			}
			if m.env == nil && strings.Contains(r.stdout, "NOT HELD") {
				t.Errorf("explain says something is not held where everything is:\n%s", r.stdout)
			}
		})
	}
}
