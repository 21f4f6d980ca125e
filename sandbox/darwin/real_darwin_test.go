//go:build darwin

package darwin

// Tests that need a Mac: real sandbox-exec, real programs, real denials.
// The macOS workflow (.github/workflows/macos.yml) runs them; on Linux
// they are only compiled (GOOS=darwin go vet).

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
)

// helperEnv makes the test binary, run under a profile, perform one
// operation and report it (see TestMain).
const helperEnv = "WRUN_DARWIN_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "procargs2":
		// Another process's arguments and environment: wrun's own test
		// process, the parent of sandbox-exec's exec.
		_, err := unix.SysctlRaw("kern.procargs2", os.Getppid())
		helperReport(err)
	case "osversion":
		_, err := unix.Sysctl("kern.osversion")
		helperReport(err)
	}
}

// helperReport prints "ok" or the error and exits.
func helperReport(err error) {
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("ok\n")
	os.Exit(0)
}

// requireMac skips unless sandbox-exec can apply a profile here.
func requireMac(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(SandboxExec); err != nil {
		t.Skip("no sandbox-exec")
	}
	if nested, err := InSandbox(); err != nil || nested {
		t.Skipf("inside a Seatbelt sandbox (%v): no profile can be applied", err)
	}
}

// realHost is host() with the test's root resolved, as the Mac matches it.
func realHost(t *testing.T) (policy.Host, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return host(t, root), root
}

// under runs argv under prof in dir with env, and returns its output and
// whether it succeeded.
func under(t *testing.T, prof Profile, dir string, env []string, argv ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(SandboxExec, prof.Argv(argv)[1:]...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %v: %v", argv, err)
	}
	if ee != nil && ee.ExitCode() == exitSandboxApply && strings.Contains(out.String(), "sandbox") {
		t.Fatalf("sandbox-exec refused the profile: %s", out.String())
	}
	return out.String(), err == nil
}

// Every grant's profile compiles on this macOS: every operation, filter
// and symbol it names (sysctl-name-prefix, ioctl-command TIOCSTI,
// extension, socket-domain, control-name, ...) is known here.
func TestRealProfilesCompile(t *testing.T) {
	requireMac(t)
	h, _ := realHost(t)
	for _, spec := range specs {
		p := Adapt(compute(t, spec, h), UserCacheDir(os.Getenv("TMPDIR")))
		prof, err := Generate(Input{Policy: p, RunID: "T", Canon: ResolveExisting})
		if err != nil {
			t.Fatal(err)
		}
		if out, ok := under(t, prof, "/", nil, "/usr/bin/true"); !ok {
			t.Errorf("%s: sandbox-exec rejected the profile: %s", spec, out)
		}
	}
}

// The protections hold on this Mac under write, whatever its precedence
// reading is: git's config and hooks, a hidden file, a hard link of a
// hidden file into the workspace, moving config away. The controls: the
// same shapes of write succeed in the workspace.
func TestRealProtections(t *testing.T) {
	requireMac(t)
	h, _ := realHost(t)
	p := compute(t, "write", h)
	prof, err := Generate(Input{Policy: p, RunID: "T", Canon: ResolveExisting})
	if err != nil {
		t.Fatal(err)
	}
	ws, home := h.Workdir, h.Home
	config := ws + "/.git/config"
	before, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, script string
		ok           bool
		mustNotExist string
	}{
		{"write a workspace file (control)", "echo x > src/new.txt", true, ""},
		{"hard-link a workspace file (control)", "ln src/main.go src/linked.go", true, ""},
		{"plant a git hook", "echo x > .git/hooks/pre-commit", false, ws + "/.git/hooks/pre-commit"},
		{"append to git config", "echo '[core] fsmonitor = x' >> .git/config", false, ""},
		{"move git config away", "mv .git/config src/config", false, ws + "/src/config"},
		{"remove the hooks directory", "rm -rf .git/hooks", false, ""},
		{"write wrun's config", "echo 'grant = \"full\"' > .wrun.toml", false, ws + "/.wrun.toml"},
		{"read a hidden key", "cat " + home + "/.ssh/id_ed", false, ""},
		{"hard-link a hidden key into the workspace", "ln " + home + "/.ssh/id_ed src/stolen", false, ws + "/src/stolen"},
		{"write a home dot file", "echo x >> " + home + "/.bashrc", false, ""},
	} {
		out, ok := under(t, prof, ws, p.Env, "/bin/sh", "-c", c.script)
		if ok != c.ok {
			t.Errorf("%s: succeeded=%v, want %v: %s", c.name, ok, c.ok, out)
		}
		if c.mustNotExist != "" {
			if _, err := os.Lstat(c.mustNotExist); err == nil {
				t.Errorf("%s: %s exists", c.name, c.mustNotExist)
			}
		}
	}
	if after, err := os.ReadFile(config); err != nil || !bytes.Equal(after, before) {
		t.Errorf("git config changed: %q (%v)", after, err)
	}
	if _, err := os.Stat(ws + "/.git/hooks"); err != nil {
		t.Errorf("the hooks directory is gone: %v", err)
	}
}

// kern.procargs2 of another process is refused; the control: a sysctl of
// the allowlist is read.
func TestRealProcargs2(t *testing.T) {
	requireMac(t)
	h, _ := realHost(t)
	p := compute(t, "verify", h)
	prof, err := Generate(Input{Policy: p, RunID: "T", Canon: ResolveExisting})
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := under(t, prof, "/", []string{helperEnv + "=osversion"}, self); !ok {
		t.Errorf("control: kern.osversion: %s", out)
	}
	if out, ok := under(t, prof, "/", []string{helperEnv + "=procargs2"}, self); ok {
		t.Errorf("kern.procargs2 of the parent was read: %s", out)
	}
}

// What this Mac does with a specific operation's allow followed by a
// wildcard deny of the same path: recorded, not required (the profile
// holds either way; TestRealProtections shows it).
func TestRealPrecedenceReading(t *testing.T) {
	requireMac(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	prof := Profile{Text: `(version 1)(allow default)
(allow file-write-data (subpath (param "D")))
(deny file-write* (subpath (param "D")))`, Params: []Param{{"D", dir}}}
	_, ok := under(t, prof, "/", nil, "/bin/sh", "-c", "echo x >> "+f)
	reading := "last match wins"
	if ok {
		reading = "a specific operation's allow outranks a later wildcard deny"
	}
	t.Logf("this Mac's Seatbelt: %s", reading)
}

// A whole run through Prepare and Run: the command's status, a session of
// its own when it holds no terminal (/dev/tty fails), and the denial of a
// protected write read from the system log, when the log can be read.
func TestRealRun(t *testing.T) {
	requireMac(t)
	h, _ := realHost(t)
	p := compute(t, "write", h)
	pl, err := Prepare(p, sandbox.Options{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := func(script string) (sandbox.Result, string) {
		t.Helper()
		out, err := os.CreateTemp(t.TempDir(), "out")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		res, err := pl.Run(sandbox.Command{Argv: []string{"/bin/sh", "-c", script}, Stdout: out, Stderr: out})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out.Name())
		return res, string(b)
	}
	if res, out := run("echo ok"); res.ExitCode != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("control: exit %d, %q", res.ExitCode, out)
	}
	if res, out := run("exec 3</dev/tty && echo opened"); res.ExitCode == 0 || strings.Contains(out, "opened") {
		t.Errorf("/dev/tty opened without a terminal: exit %d, %q", res.ExitCode, out)
	}
	res, out := run("echo x >> .git/config")
	if res.ExitCode == 0 {
		t.Errorf("protected write succeeded: %q", out)
	}
	if !res.Observed {
		t.Logf("denials not observed here (%v): the log is not readable", res.Warnings)
		return
	}
	found := false
	for _, d := range res.Denials {
		if strings.HasSuffix(d.Path, "/.git/config") && d.Right == policy.WriteFile.String() {
			found = true
		}
	}
	if !found {
		t.Errorf("the system log did not show the refused write: %+v (warnings %v)", res.Denials, res.Warnings)
	}
}
