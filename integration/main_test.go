//go:build linux

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/sandbox/linux"
)

// bins holds the binaries TestMain builds: wrun itself and the probe.
var bins struct {
	dir, wrun, probe string
	features         linux.Features
}

func TestMain(m *testing.M) {
	touchSources()
	dir, err := os.MkdirTemp("", "wrun-itest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Readable and executable by the unprivileged user some tests run as.
	_ = os.Chmod(dir, 0o755)
	bins.dir = dir
	bins.wrun = filepath.Join(dir, "wrun")
	bins.probe = filepath.Join(dir, "probe")
	for out, pkg := range map[string]string{bins.wrun: "../cmd/wrun", bins.probe: "./testdata/probe"} {
		// wrun_testhosts: the proxy of network=hosts resolves the names
		// WRUN_TEST_HOSTS maps (servers on 127.0.0.1 standing for remote
		// hosts); a release build has no such variable.
		cmd := exec.Command("go", "build", "-tags", "wrun_testhosts", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg, err)
			os.Exit(1)
		}
	}
	// The tests' programs are on PATH, as the programs a command runs are:
	// the sandbox reads the directories on PATH and nothing else outside
	// the system's directories and the workspace (the probe lies in /tmp).
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	bins.features = linux.Probe()
	code := m.Run()
	printTally(os.Stdout)
	os.RemoveAll(dir)
	os.Exit(code)
}

// touchSources opens every source file of the module, so that go test's
// result cache (which tracks the files a test opens) is invalidated when
// the code of the wrun binary these tests build changes.
func touchSources() {
	_ = filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			if f, err := os.Open(p); err == nil {
				f.Close()
			}
		}
		return nil
	})
}

// requireABI skips the test unless the kernel has Landlock ABI n.
func requireABI(t *testing.T, n int) {
	t.Helper()
	if bins.features.LandlockABI < n {
		t.Skipf("needs Landlock ABI %d; this kernel has %d (%s)", n, bins.features.LandlockABI, bins.features.LandlockError)
	}
}

// requireRefer skips a test of a tool that renames files across
// directories (cargo, git) where the Landlock ABI wrun uses, capped by
// WRUN_LANDLOCK_ABI, lacks REFER (ABI 2): there Landlock refuses every such
// rename, even inside writable trees, which the support matrix names as a
// limit of ABI 1, not a protection.
func requireRefer(t *testing.T) {
	t.Helper()
	if abi := matrixFeatures(runOpts{}).LandlockABI; abi < 2 {
		t.Skipf("renames across directories need Landlock ABI 2 (REFER); wrun uses ABI %d here (WRUN_LANDLOCK_ABI caps it)", abi)
	}
}

// result is how a command ended.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// runOpts changes how a command is run.
type runOpts struct {
	dir   string
	env   []string // added to the test's environment
	files []*os.File
	stdin string
	cred  *syscall.Credential
	// ambient capabilities for the started process (needs root).
	ambient []uintptr
	// bestEffort: where the support matrix refuses the run, wrun (the
	// helper) asserts the refusal once, then runs it with --best-effort,
	// degraded, to test what the degraded mode still holds.
	bestEffort bool
}

func run(t *testing.T, o runOpts, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), o.env...)
	cmd.ExtraFiles = o.files
	cmd.Stdin = strings.NewReader(o.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if o.cred != nil || o.ambient != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred, AmbientCaps: o.ambient}
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("%v did not finish in 2 minutes", argv)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// wrun runs wrun with args in dir. Where the support matrix refuses the
// run (the grant in this environment: the simulated Landlock ABI and
// features, the user), it asserts that wrun refuses with exit 125 naming
// each protection nothing holds, and then either skips the test ("refused
// by the matrix: ...") or, with o.bestEffort, runs it with --best-effort.
func wrun(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	return run(t, o, append([]string{bins.wrun}, wrunArgs(t, o, args...)...)...)
}

// wrunArgs is what wrun does before it runs: for tests that start wrun
// themselves, the arguments to start it with (--best-effort added, or
// the test skipped, where the matrix refuses the run).
func wrunArgs(t *testing.T, o runOpts, args ...string) []string {
	t.Helper()
	if env, refused, keys := matrixRefusals(o, args); len(refused) > 0 {
		if !o.bestEffort || !degradable(keys) {
			r := run(t, o, append([]string{bins.wrun}, args...)...)
			checkRefused(t, r, env, refused)
			t.Skipf("refused by the matrix (%s): %s", env, strings.Join(refused, "; "))
		}
		key := env + "\x00" + grantOf(args)
		if _, done := refusalChecked.LoadOrStore(key, true); !done {
			r := run(t, o, bins.wrun, "--grant", grantOf(args), "--", "true")
			checkRefused(t, r, env, refused)
		}
		args = append([]string{"--best-effort"}, args...)
	}
	return args
}

// refusalChecked remembers the environments and grants whose refusal a
// bestEffort run has asserted already.
var refusalChecked sync.Map

// checkRefused fails the test unless r is wrun's refusal of the
// protections the matrix names.
func checkRefused(t *testing.T, r result, env string, refused []string) {
	t.Helper()
	if r.code != 125 || !strings.Contains(r.stderr, "nothing holds it here: "+env) {
		t.Fatalf("the support matrix refuses this run (%s: %s), but wrun did not refuse it with 125 naming the environment:\n%s", env, strings.Join(refused, "; "), r)
	}
	for _, what := range refused {
		if !strings.Contains(r.stderr, what) {
			t.Errorf("wrun's refusal does not name %q:\n%s", what, r)
		}
	}
}

// grantOf is the grant a command line of wrun asks for.
func grantOf(args []string) string {
	g := grant.DefaultPreset
	for i, a := range args {
		switch {
		case a == "--":
			return g
		case (a == "--grant" || a == "-g") && i+1 < len(args):
			g = args[i+1]
		case strings.HasPrefix(a, "--grant="):
			g = strings.TrimPrefix(a, "--grant=")
		}
	}
	return g
}

// matrixFeatures is what wrun, started with o, finds on this machine: the
// test process's probe, as another user for o.cred, with what
// WRUN_LANDLOCK_ABI and WRUN_SIMULATE take away (o's variables override
// the test's own).
func matrixFeatures(o runOpts) linux.Features {
	f := bins.features
	if o.cred != nil && o.cred.Uid != 0 {
		f = f.AsUser()
	}
	get := func(name string) string {
		v := os.Getenv(name)
		for _, kv := range o.env {
			if val, ok := strings.CutPrefix(kv, name+"="); ok {
				v = val
			}
		}
		return v
	}
	if s, err := linux.Simulate(f, get("WRUN_LANDLOCK_ABI"), get("WRUN_SIMULATE")); err == nil {
		f = s
	}
	return f
}

// matrixRefusals names this environment's row and what the support matrix
// refuses of the run args asks for, with the protections' keys (nothing
// for --best-effort runs and for subcommands: explain, doctor).
func matrixRefusals(o runOpts, args []string) (env string, refused, keys []string) {
	run := false
	for _, a := range args {
		if a == "--best-effort" {
			return "", nil, nil
		}
		if a == "--" {
			run = true
			break
		}
	}
	if !run || len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return "", nil, nil
	}
	g, err := grant.Parse(grantOf(args))
	if err != nil {
		return "", nil, nil
	}
	f := matrixFeatures(o)
	for _, r := range linux.Refusals(f, g, linux.Need{}) {
		refused = append(refused, r.What)
		keys = append(keys, r.Key)
	}
	return f.Name(), refused, keys
}

// degradable reports whether a run refused for keys may be tested
// degraded (--best-effort): only where what is refused is what the
// mediation holds (a machine without it), and which the acts that attempt
// it assert as refusals (withoutMediation). Where more is refused (no
// Landlock), the degraded run would let acts through that the matrix
// already says nothing holds: the refusal is all there is to test.
func degradable(keys []string) bool {
	for _, k := range keys {
		switch k {
		case "files.metadata", "shell.wrun", "files.create", "shell.signals", "files.truncate":
		default:
			return false
		}
	}
	return true
}

// refusedByMatrix asserts that the support matrix refuses protection key
// in mode m, and that wrun, run in m without --best-effort, refuses with
// exit 125 naming it; it reports whether it did (the caller then returns:
// the refusal is what holds the act).
func refusedByMatrix(t *testing.T, m escapeMode, key string) bool {
	t.Helper()
	o := modeOpts(m, modeDir(t, m))
	o.bestEffort = false
	f := matrixFeatures(o)
	for _, r := range linux.Refusals(f, grant.Grant{}, linux.Need{CreateBeside: true}) {
		if r.Key != key {
			continue
		}
		res := run(t, o, bins.wrun, "--grant", "inspect", "--", "true")
		checkRefused(t, res, f.Name(), []string{r.What})
		t.Logf("refused by the matrix (%s): %s: %s", f.Name(), r.What, r.Refused)
		return true
	}
	return false
}

// probe runs the probe under wrun with the given grant in dir and returns
// its one-line verdict ("ok" or "err ERRNO: ...").
func probe(t *testing.T, o runOpts, grantSpec string, args ...string) string {
	t.Helper()
	r := wrun(t, o, append([]string{"--grant", grantSpec, "--", bins.probe}, args...)...)
	// A --best-effort run (a degraded cell of the matrix) says so on
	// stderr; that is wrun's, not the probe's answer.
	var keep []string
	for _, l := range strings.SplitAfter(r.stderr, "\n") {
		if !strings.HasPrefix(l, "wrun: DEGRADED") {
			keep = append(keep, l)
		}
	}
	return strings.TrimSpace(r.stdout + strings.Join(keep, ""))
}

// bare runs the probe without wrun: the control.
func bare(t *testing.T, o runOpts, args ...string) string {
	t.Helper()
	r := run(t, o, append([]string{bins.probe}, args...)...)
	return strings.TrimSpace(r.stdout + r.stderr)
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// workspace makes a fresh directory whose symlinks are resolved (so paths
// compare equal to what wrun reports).
func workspace(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	// The test's own git, outside the sandbox, on directories it may
	// have handed to nobody.
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// holder is a way wrun holds the grant on this machine, with the errno a
// write outside the write scope gets under it, and the errno of a signal
// to a process outside the sandbox: Landlock refuses the write (EACCES),
// and its signal scope, or below it the mediation, the signal (EPERM).
type holder struct {
	m                   escapeMode
	writeErr, signalErr string
}

var holders = []holder{
	{modeRoot, "EACCES", "EPERM"},
	{modeUser, "EACCES", "EPERM"},
}

// modeDir makes a fresh directory owned by the mode's user.
func modeDir(t *testing.T, m escapeMode) string {
	t.Helper()
	if m.cred == nil {
		return workspace(t)
	}
	d, err := filepath.EvalSymlinks(sharedWorkspace(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, int(m.cred.Uid), int(m.cred.Gid)); err != nil {
		t.Fatal(err)
	}
	return d
}

// modeOpts runs in dir as the mode's user, with the mode's environment.
func modeOpts(m escapeMode, dir string, env ...string) runOpts {
	o := runOpts{dir: dir, cred: m.cred, bestEffort: m.bestEffort}
	if m.cred != nil {
		o.env = append(o.env, "HOME=/nonexistent")
	}
	o.env = append(append(o.env, m.env...), env...)
	return o
}

// uniqueArg is a number no other process of the machine has on its
// command line (for sleep: seconds), to find the processes a sandboxed
// command starts by.
func uniqueArg() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%d.%09d", 600+int(b[0])%100, binary.BigEndian.Uint32(b[:])%1000000000)
}

// hostPids lists the live processes of the host whose command line is
// exactly argv.
func hostPids(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(b) == want && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// killOnCleanup ends, when the test ends (failed or not), every host
// process whose command line is argv.
func killOnCleanup(t *testing.T, argv ...string) {
	t.Cleanup(func() {
		for _, p := range hostPids(argv...) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
}

// waitGone waits up to five seconds for every host process whose command
// line is argv to end, and returns those still alive.
func waitGone(argv ...string) []int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := hostPids(argv...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parentOf is the parent pid of a host process (0 if it is gone).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// commOf is the name of a host process (its comm).
func commOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// waitRunning waits up to two seconds for a host process whose command
// line is argv (a process just exec'd, say), and reports whether one runs.
func waitRunning(argv ...string) bool {
	for i := 0; i < 200; i++ {
		if len(hostPids(argv...)) == 1 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// userNSWorks reports whether a process run with cred (nil: the test's
// own) can make a user namespace: the control of an act that tries one.
func userNSWorks(cred *syscall.Credential) bool {
	cmd := exec.Command("unshare", "--user", "true")
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd.Run() == nil
}
