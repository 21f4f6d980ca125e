//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Reaching wrun itself, and outliving it. Through the stage, wrun is in
// another PID namespace than the command: the command can neither see
// nor signal nor prlimit it, /proc shows only the sandbox, and when wrun
// is killed with SIGKILL the stage dies with it and the kernel ends every
// process of the sandbox. Without namespaces (modeCarved) the command
// shares wrun's PID namespace: these cases skip there, naming the
// mechanism that is missing.

// noNamespaces: in a mode without namespaces the support matrix refuses
// protection key, which nothing holds there. It asserts that wrun refuses
// to run (exit 125, naming it), counts n attempts held by that refusal
// (n = 0: the caller's escapeAttempt counts itself) and reports true: the
// caller returns rather than run the act degraded. WRUN_KNOWN_ESCAPES=1
// runs the act with --best-effort instead (and it fails).
func noNamespaces(t *testing.T, m escapeMode, key string, n int) bool {
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
	// act without namespaces (modeCarved): the refusal is asserted there
	// instead of the act run degraded.
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
		{name: "kill -KILL wrun's pid", sh: `kill -KILL $WRUN_PID; echo child-done`, effect: killedBySignal},
		{name: "kill -KILL $PPID", sh: `kill -KILL $PPID; echo child-done`, effect: killedBySignal},
		{name: "kill -KILL every thread of wrun", sh: `for t in /proc/$WRUN_PID/task/*; do kill -KILL ${t##*/}; done; echo child-done`,
			effect: killedBySignal,
			// The command is forked from wrun's launch thread and shares
			// its Landlock domain, so it may signal that thread.
			carved: "shell.wrun"},
		{name: "pidfd_send_signal through /proc/$WRUN_PID", sh: `exec 7</proc/$WRUN_PID && $PROBE kill-pidfd 7; echo child-done`,
			effect: killedBySignal},
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
		{name: "see wrun and the processes outside in /proc",
			sh: `readlink /proc/$WRUN_PID/exe; for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; done 2>/dev/null`,
			// The command shares wrun's PID namespace (what the matrix
			// refuses as shell.wrun), and /proc shows every process.
			carved: "shell.wrun"},
	}
	for _, m := range []escapeMode{modeRoot, modeUserNS, modeCarved} {
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
					if a.carved != "" && noNamespaces(t, m, a.carved, 0) {
						return
					}
					effect := a.effect
					if effect == nil {
						// The listing act: what the command printed names
						// the outside process, or wrun's (the control's
						// parent shell's) executable.
						effect = func(r result, _ []string) string {
							if strings.Contains(r.stdout, strings.Join(marker, " ")) {
								return "the command saw the process outside: " + strings.Join(marker, " ")
							}
							for _, l := range strings.Split(r.stdout, "\n") {
								if l == bins.wrun || l == realSh {
									return "the command saw wrun's executable through /proc: " + l
								}
							}
							return ""
						}
					}
					ws := modeDir(t, m)
					o := modeOpts(m, ws, "PROBE="+bins.probe, "ESCAPE_SH="+a.sh)
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

// TestEscapeOutliveAKilledWrun: a command starts a process that leaves
// its process group and session and is reparented (setsid, double fork),
// then wrun is killed with SIGKILL, so it can end nothing itself. Without
// wrun, such a process outlives a killed parent; under wrun it must not
// outlive wrun.
func TestEscapeOutliveAKilledWrun(t *testing.T) {
	requireTool(t, "setsid")
	for _, m := range []escapeMode{modeRoot, modeUserNS, modeCarved} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			escapeAttempt(t)
			if noNamespaces(t, m, "shell.wrun", 0) {
				return
			}
			for _, under := range []string{"control", "wrun"} {
				bg, fg := []string{"sleep", uniqueArg()}, []string{"sleep", uniqueArg()}
				killOnCleanup(t, bg...)
				killOnCleanup(t, fg...)
				sh := "(setsid " + strings.Join(bg, " ") + " </dev/null >/dev/null 2>&1 &); " +
					"sleep 0.2; echo started; exec " + strings.Join(fg, " ")
				argv := []string{"sh", "-c", `sh -c "$ESCAPE_SH"`}
				if under == "wrun" {
					argv = append([]string{bins.wrun}, wrunArgs(t, modeOpts(m, ""), "--grant", "full", "--", "sh", "-c", sh)...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = modeDir(t, m)
				cmd.Env = append(os.Environ(), modeOpts(m, "", "ESCAPE_SH="+sh).env...)
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
				// "started" comes just before the exec of the foreground
				// sleep: give both a moment to appear.
				for _, p := range [][]string{bg, fg} {
					if !waitRunning(p...) {
						t.Fatalf("%s: %v is not running", under, p)
					}
				}
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				left := waitGone(bg...)
				if under == "control" {
					if len(left) == 0 {
						t.Fatal("control: the setsid'd, double-forked process did not outlive its killed parent, so this case proves nothing")
					}
					continue
				}
				if len(left) > 0 {
					t.Errorf("ESCAPE (%s): %v (pid %v) outlived wrun killed with SIGKILL", m.name, bg, left)
				}
				if left := waitGone(fg...); len(left) > 0 {
					t.Errorf("ESCAPE (%s): the command %v (pid %v) outlived wrun killed with SIGKILL", m.name, fg, left)
				}
			}
		})
	}
}

// TestEscapeEndTheStageFromInside: the stage's launch thread is in the
// command's Landlock domain, so the command may signal it, and the kernel
// delivers to the init of a PID namespace any signal it has a handler for.
// A Go program ends on a SIGSEGV or SIGABRT sent with kill (the control);
// the stage must not: it would end the sandbox and lose the command's
// status. (The signals the stage forwards, SIGTERM and the like, reach the
// command's process group, as from wrun.)
func TestEscapeEndTheStageFromInside(t *testing.T) {
	// The signals the Go runtime ends a program on when they come from
	// kill (SIGALRM and the like it ignores).
	sigs := []string{"SEGV", "ABRT", "BUS", "SYS", "TRAP", "FPE", "ILL"}
	for _, m := range []escapeMode{modeRoot, modeUserNS} {
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
					r = wrun(t, o, "--", "sh", "-c", `for t in /proc/1/task/*; do kill -`+sig+` ${t##*/} 2>/dev/null; done; sleep 0.2; echo child-done; exit 3`)
					if r.code != 3 || !strings.Contains(r.stdout, "child-done") || strings.Contains(r.stderr, "stage") {
						t.Errorf("ESCAPE (%s): SIG%s from the command ended the stage: %s", m.name, sig, r)
					}
				})
			}
		})
	}
}

// TestExplainSaysWhatNoNamespacesLeaveOpen: what the cases above skip
// without namespaces, explain says before the run; where the stage holds
// them it says nothing of the kind.
func TestExplainSaysWhatNoNamespacesLeaveOpen(t *testing.T) {
	open := []string{
		"metadata outside the write scope is not restricted",
		"sees every process in /proc",
		"may signal the thread of wrun it was started from",
		"may survive a wrun killed with SIGKILL",
	}
	for _, m := range []escapeMode{modeRoot, modeUserNS, modeCarved} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			r := wrun(t, modeOpts(m, modeDir(t, m)), "explain", "--grant", "inspect")
			for _, s := range open {
				if said := strings.Contains(r.stdout, s); said != (m.env != nil) {
					t.Errorf("explain says %q: %v, want %v\n%s", s, said, m.env != nil, r.stdout)
				}
			}
		})
	}
}

// TestEscapeReachTheHands: the hands makes the command's UNIX socket
// calls outside its seccomp filter, so its memory and its socket to wrun
// must stay out of the command's reach, also while it starts (dumpable,
// between its exec and its PR_SET_DUMPABLE). Below the abstract-socket
// scope it starts at the first mediated call, after the command, in a
// Landlock domain beside the command's; with the scope, before the
// command, whose domain is nested in its own; without Landlock, before
// the command, waited for until undumpable. In each, at this kernel's ABI
// and lowered (WRUN_LANDLOCK_ABI), as root and as an unprivileged user,
// the command races the hands' start (memory and pidfd_getfd of every new
// process) and then opens its memory, its descriptor 3 and environment
// through /proc and takes descriptor 3 with pidfd_getfd. Control: the
// same acts against a dumpable child of the command's own succeed.
func TestEscapeReachTheHands(t *testing.T) {
	if !viaStage() || bins.features.LandlockABI >= 9 || !bins.features.UserNotif {
		t.Skip("the hands exist where UNIX sockets are mediated: through the stage, below Landlock ABI 9, with seccomp user notification")
	}
	script := `mkdir "$TMPDIR/first" && ` + bins.probe + ` reach-hands "$TMPDIR/first" hands && ` + bins.probe + ` reach-hands "$TMPDIR" own`
	for _, m := range []escapeMode{modeRoot, modeUserNS} {
		for _, abi := range []int{bins.features.LandlockABI, 5, 1, 0} {
			if abi > bins.features.LandlockABI {
				continue
			}
			for _, g := range []string{"verify", "write"} {
				t.Run(m.name+"/ABI "+strconv.Itoa(abi)+"/"+g, func(t *testing.T) {
					m.usable(t)
					escapeAttempt(t)
					o := modeOpts(m, modeDir(t, m), "WRUN_LANDLOCK_ABI="+strconv.Itoa(abi))
					r := wrun(t, o, "--grant", g, "--", "sh", "-c", script)
					lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
					if r.code != 0 || len(lines) != 4 {
						t.Fatalf("the probe did not run to its end:\n%s", r)
					}
					if want := "reached=[mem fd environ getfd] refused=[]"; lines[2] != want {
						t.Fatalf("control: against a child of the command's own: %q, want %q\n%s", lines[2], want, r)
					}
					if !strings.HasPrefix(lines[0], "reached=[] ") {
						t.Errorf("ESCAPE: the command reached the hands: %s\n%s", lines[0], r)
					}
				})
			}
		}
	}
}
