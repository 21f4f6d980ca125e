//go:build linux

package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The third red team's classes that policy and verify decide (issue 24):
// git directories not named .git (class 3), code loaded at every start
// from directories the environment names (class 4), private files
// wherever the readable tree has them (class 6), and one run's temp dir
// read by another sandbox of the same user (class 7). Each attempt runs
// without wrun first (the control: the effect must appear), then under
// wrun, as root and as an unprivileged user, with and without the mediation.

// hostile3Modes are the modes every attempt here runs in.
var hostile3Modes = []escapeMode{modeRoot, modeUser, modeNoMed}

// hostile3Fixture is escapeFixture with a bare repository in the
// workspace (origin.git, a remote the user pushes to), a project's Python
// sources, a virtual environment whose python is the system's, and the
// directories the environment of the attempts names (libraries, git's
// exec path and templates, node's path, an npm prefix).
func hostile3Fixture(t *testing.T) string {
	t.Helper()
	base := escapeFixture(t)
	ws := filepath.Join(base, "ws")
	gitCmd(t, ws, "init", "-q", "--bare", "origin.git")
	for _, d := range []string{"pysrc", "so", "gitexec", "tmpl/hooks", "nodepath", "npmprefix/lib/node_modules", ".venv/bin"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(ws, "pysrc", "app.py"), "print('app')\n")
	if py := systemPython(); py != "" {
		out, err := exec.Command(py, "-c", "import sys; print('python%d.%d' % sys.version_info[:2])").Output()
		if err != nil {
			t.Fatal(err)
		}
		ver := strings.TrimSpace(string(out))
		mustWrite(t, filepath.Join(ws, ".venv", "pyvenv.cfg"), "home = "+filepath.Dir(py)+"\ninclude-system-site-packages = false\n")
		if err := os.Symlink(py, filepath.Join(ws, ".venv", "bin", "python3")); err != nil {
			t.Fatal(err)
		}
		// An editable install's .pth, as pip writes it.
		mustWrite(t, filepath.Join(ws, ".venv", "lib", ver, "site-packages", "__editable__.app.pth"), filepath.Join(ws, "pysrc")+"\n")
	}
	return base
}

// systemPython is the system's python3, which every user may run (not a
// version manager's shim in root's home), "" if there is none.
func systemPython() string {
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// pythonRan: a plain start of python (the venv's when venv is set) with
// the attempt's environment makes the planted code run: it creates
// $F/pwned-py.
func pythonRan(venv bool, env ...string) func(F string, r result) string {
	return func(F string, r result) string {
		py := "python3"
		if venv {
			py = filepath.Join(F, "ws", ".venv", "bin", "python3")
		}
		cmd := exec.Command(py, "-c", "pass")
		cmd.Dir = F
		cmd.Env = append(os.Environ(), "F="+F)
		for _, kv := range env {
			cmd.Env = append(cmd.Env, strings.ReplaceAll(kv, "$F", F))
		}
		cmd.Run()
		if exists(filepath.Join(F, "pwned-py")) {
			return "a plain " + py + " ran the planted code"
		}
		return ""
	}
}

// pushRanHook: a plain git push into origin.git runs a hook the child
// planted there (it creates $F/pwned-hook).
func pushRanHook(F string, r result) string {
	ws := filepath.Join(F, "ws")
	cmd := exec.Command("git", "push", "-q", filepath.Join(ws, "origin.git"), "main")
	cmd.Dir = ws
	// The repository belongs to the mode's user, the push is root's: git
	// is told the repository is safe, as its owner's own push would be
	// (in a global config: the receiving side drops the command line's).
	safe := filepath.Join(filepath.Dir(F), "safe.gitconfig")
	os.WriteFile(safe, []byte("[safe]\n\tdirectory = *\n"), 0o644)
	cmd.Env = append(os.Environ(), "F="+F, "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Join(F, "home"), "GIT_CONFIG_GLOBAL="+safe)
	cmd.Run()
	if exists(filepath.Join(F, "pwned-hook")) {
		return "a plain git push into origin.git ran the planted pre-receive hook"
	}
	if exists(filepath.Join(ws, "origin.git", "hooks", "pre-receive")) {
		return "origin.git/hooks/pre-receive was planted"
	}
	return ""
}

const plantHook = `printf '#!/bin/sh\ntouch "$F/pwned-hook"\n' > %s && chmod +x %s`

func hook(path string) string { return strings.ReplaceAll(plantHook, "%s", path) }

func TestEscapeGitDirsNotNamedDotGit(t *testing.T) {
	requireABI(t, 3)
	base := hostile3Fixture(t)
	for _, m := range hostile3Modes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, []escapeAct{
				{name: "a bare repository in the workspace: plant hooks/pre-receive", grant: "write",
					sh: hook("origin.git/hooks/pre-receive"), effect: pushRanHook},
				{name: "a bare repository in the workspace: swap its hooks directory", grant: "write",
					sh:     "mkdir h && " + hook("h/pre-receive") + " && rm -rf origin.git/hooks && mv h origin.git/hooks",
					effect: pushRanHook},
				{name: "a bare repository in the workspace: core.hooksPath in its config", grant: "write",
					sh:     "mkdir -p hk && " + hook("hk/pre-receive") + ` && printf '[core]\n\thooksPath = '"$PWD"'/hk\n' >> origin.git/config`,
					effect: pushRanHook},
				{name: "a bare repository in the workspace: rename it and put another in its place", grant: "write",
					sh:     "cp -r origin.git o2 && " + hook("o2/hooks/pre-receive") + " && mv origin.git o.old && mv o2 origin.git",
					effect: pushRanHook},
				{name: "GIT_DIR names a directory the child makes a repository", grant: "write",
					env:    func(F string) []string { return []string{"GIT_DIR=" + filepath.Join(F, "ws", "meta.d")} },
					keep:   []string{"GIT_DIR"},
					sh:     `mkdir -p "$GIT_DIR/objects" "$GIT_DIR/refs" "$GIT_DIR/hooks" && echo 'ref: refs/heads/main' > "$GIT_DIR/HEAD" && ` + hook(`"$GIT_DIR/hooks/post-checkout"`),
					effect: appeared("ws/meta.d/hooks/post-checkout")},
			})
		})
	}
}

func TestEscapeStartupCodeTheEnvironmentNames(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "python3")
	if systemPython() == "" {
		t.Skip("needs the system's python3 (/usr/bin/python3), which every user may run")
	}
	base := hostile3Fixture(t)
	pyPath := func(F string) []string { return []string{"PYTHONPATH=" + filepath.Join(F, "ws", "pysrc")} }
	venvPath := func(F string) []string {
		return []string{"PATH=" + filepath.Join(F, "ws", ".venv", "bin") + ":" + os.Getenv("PATH")}
	}
	const marker = `import os; open(os.environ["F"] + "/pwned-py", "w")`
	for _, m := range hostile3Modes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, []escapeAct{
				{name: "PYTHONPATH: plant sitecustomize.py", grant: "write", env: pyPath,
					sh: `echo '` + marker + `' > pysrc/sitecustomize.py`, effect: pythonRan(false, "PYTHONPATH=$F/ws/pysrc")},
				{name: "PYTHONPATH: plant a sitecustomize package", grant: "write", env: pyPath,
					sh: `mkdir pysrc/sitecustomize && echo '` + marker + `' > pysrc/sitecustomize/__init__.py`, effect: pythonRan(false, "PYTHONPATH=$F/ws/pysrc")},
				{name: "PYTHONPATH: plant usercustomize.py", grant: "write", env: pyPath,
					sh: `echo '` + marker + `' > pysrc/usercustomize.py`, effect: pythonRan(false, "PYTHONPATH=$F/ws/pysrc")},
				{name: "a venv on PATH: plant a .pth in its site-packages", grant: "write", env: venvPath,
					sh: `for d in .venv/lib/python3*/site-packages; do echo '` + marker + `' > $d/evil.pth; done`, effect: pythonRan(true)},
				{name: "a venv on PATH: an import line in an existing .pth", grant: "write", env: venvPath,
					sh: `for f in .venv/lib/python3*/site-packages/*.pth; do echo '` + marker + `' >> $f; done`, effect: pythonRan(true)},
				{name: "LD_LIBRARY_PATH: plant a library", grant: "write",
					env: func(F string) []string { return []string{"LD_LIBRARY_PATH=" + filepath.Join(F, "ws", "so")} },
					sh:  "cp /bin/true so/libc.so.6", effect: appeared("ws/so/libc.so.6")},
				{name: "GIT_EXEC_PATH: plant a git command", grant: "write",
					env: func(F string) []string { return []string{"GIT_EXEC_PATH=" + filepath.Join(F, "ws", "gitexec")} },
					sh:  hook("gitexec/git-remote-https"), effect: appeared("ws/gitexec/git-remote-https")},
				{name: "GIT_TEMPLATE_DIR: plant a hook every new clone gets", grant: "write",
					env: func(F string) []string { return []string{"GIT_TEMPLATE_DIR=" + filepath.Join(F, "ws", "tmpl")} },
					sh:  hook("tmpl/hooks/post-checkout"), effect: appeared("ws/tmpl/hooks/post-checkout")},
				{name: "NODE_PATH: plant a module", grant: "write",
					env: func(F string) []string { return []string{"NODE_PATH=" + filepath.Join(F, "ws", "nodepath")} },
					sh:  "mkdir nodepath/lodash && echo 'x' > nodepath/lodash/index.js", effect: appeared("ws/nodepath/lodash")},
				{name: "the npm prefix: plant a global module", grant: "write",
					env:    func(F string) []string { return []string{"npm_config_prefix=" + filepath.Join(F, "ws", "npmprefix")} },
					sh:     "mkdir npmprefix/lib/node_modules/npm && echo 'x' > npmprefix/lib/node_modules/npm/index.js",
					effect: appeared("ws/npmprefix/lib/node_modules/npm")},
			})
		})
	}
}

// TestStartupCodeInABuildOutputIsRefused: a directory on PATH that the
// grant also writes on purpose (cargo's target dir, under files=write)
// can be neither protected (the build would break) nor left writable (a
// planted program would run at the next command): wrun refuses, naming
// the conflict.
func TestStartupCodeInABuildOutputIsRefused(t *testing.T) {
	requireABI(t, 3)
	F := freshCopy(t, escapeFixture(t), modeRoot)
	target := filepath.Join(F, "ws", "target", "debug")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	o := escapeOpts(F, modeRoot, "PATH="+target+":"+os.Getenv("PATH"))
	r := run(t, o, bins.wrun, "--grant", "write", "--", "sh", "-c", "echo x > target/debug/planted")
	if r.code != 125 || !strings.Contains(r.stderr, target+" is on PATH") || !strings.Contains(r.stderr, "refusing to run") {
		t.Errorf("wrun ran with cargo's target dir on PATH, or did not name it:\n%s", r)
	}
	if exists(filepath.Join(target, "planted")) {
		t.Errorf("the command ran")
	}
	// The same environment under a grant that writes none of it runs.
	if r := run(t, o, bins.wrun, "--grant", "inspect", "--", "true"); r.code != 0 {
		t.Errorf("inspect: %s", r)
	}
}

// privateOutside makes, outside every grant, a file only the mode's user
// may read: directly in dir and one directory below it.
func privateOutside(t *testing.T, m escapeMode, dir string) (direct, below string) {
	t.Helper()
	d, err := os.MkdirTemp(dir, "wrun-h3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	below = filepath.Join(d, "secret")
	direct = d + "-direct"
	t.Cleanup(func() { os.Remove(direct) })
	for _, f := range []string{below, direct} {
		if err := os.WriteFile(f, []byte(escapeSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if m.cred != nil {
			os.Chown(f, int(m.cred.Uid), int(m.cred.Gid))
		}
	}
	return direct, below
}

func TestEscapePrivateFilesWhereverTheyLie(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	leak := printed(escapeSecret)
	for _, m := range hostile3Modes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			tmpDirect, tmpBelow := privateOutside(t, m, "/tmp")
			vtDirect, vtBelow := privateOutside(t, m, "/var/tmp")
			at := func(p string) func(string) []string {
				return func(string) []string { return []string{"H3_SECRET=" + p} }
			}
			acts := []escapeAct{
				{name: "a private file one directory below /tmp", grant: "inspect", env: at(tmpBelow), keep: []string{"H3_SECRET"},
					sh: `cat "$H3_SECRET"`, effect: leak},
				{name: "a private file directly in /tmp", grant: "inspect", env: at(tmpDirect), keep: []string{"H3_SECRET"},
					sh: `cat "$H3_SECRET"`, effect: leak},
				{name: "a private file one directory below /var/tmp", grant: "verify", env: at(vtBelow), keep: []string{"H3_SECRET"},
					sh: `cat "$H3_SECRET"`, effect: leak},
				{name: "a private file directly in /var/tmp", grant: "write", env: at(vtDirect), keep: []string{"H3_SECRET"},
					sh: `cat "$H3_SECRET"`, effect: leak},
				{name: "a private file below /tmp, found by listing", grant: "inspect", env: at(tmpBelow),
					sh: `for f in /tmp/wrun-h3-*/secret; do cat "$f"; done`, effect: leak},
			}
			if os.Geteuid() == 0 && m.cred == nil {
				// Root's own files in /etc: only root (the control) may
				// read them, so only root's child tries.
				deep := filepath.Join("/etc", "wrun-h3-"+strings.ReplaceAll(t.Name(), "/", "-"), "a", "b", "c", "d")
				if err := os.MkdirAll(deep, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(filepath.Join("/etc", "wrun-h3-"+strings.ReplaceAll(t.Name(), "/", "-"))) })
				if err := os.WriteFile(filepath.Join(deep, "token"), []byte(escapeSecret+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				acts = append(acts,
					escapeAct{name: "root: a 0600 file five directories deep in /etc", grant: "inspect", env: at(filepath.Join(deep, "token")),
						keep: []string{"H3_SECRET"}, sh: `cat "$H3_SECRET"`, effect: leak},
					escapeAct{name: "root: /etc/shadow", grant: "inspect", sh: "cat /etc/shadow", effect: printed("root:")})
			} else {
				escapeSkipped(t, 2, "root's files in /etc: the control needs root")
			}
			runActs(t, base, m, acts)
		})
	}
}

// TestEscapeAnotherRunsTempDir: a run allowed a secret copies it into its
// own private temp dir; a concurrent run of the same user under another
// grant must not read it there (nor list the directory beside its own
// temp dir that holds the other runs').
func TestEscapeAnotherRunsTempDir(t *testing.T) {
	requireABI(t, 3)
	for _, m := range hostile3Modes {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			for _, g := range []string{"verify", "inspect"} {
				t.Run("--grant "+g, func(t *testing.T) {
					escapeAttempt(t)
					holder := sharedWorkspace(t)
					reader := sharedWorkspace(t)
					if m.cred != nil {
						os.Chown(holder, int(m.cred.Uid), int(m.cred.Gid))
						os.Chown(reader, int(m.cred.Uid), int(m.cred.Gid))
					}
					// The run that holds the secret in its temp dir, alive
					// while the other one tries.
					o := runOpts{dir: holder, cred: m.cred, env: m.env, bestEffort: m.bestEffort}
					cmd := exec.Command(bins.wrun, wrunArgs(t, o, "--grant", "inspect", "--", "sh", "-c",
						`echo `+escapeSecret+` > "$TMPDIR/copied-secret" && echo "$TMPDIR" && exec sleep 60`)...)
					cmd.Dir = holder
					cmd.Env = append(os.Environ(), m.env...)
					cmd.SysProcAttr = credAttr(m)
					out, err := cmd.StdoutPipe()
					if err != nil {
						t.Fatal(err)
					}
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						// wrun forwards the signal and ends the sandbox:
						// nothing of the holding run is left behind.
						cmd.Process.Signal(syscall.SIGTERM)
						done := make(chan struct{})
						go func() { cmd.Wait(); close(done) }()
						select {
						case <-done:
						case <-time.After(30 * time.Second):
							cmd.Process.Kill()
							<-done
						}
					})
					line := make(chan string, 1)
					go func() {
						s, _ := bufio.NewReader(out).ReadString('\n')
						line <- strings.TrimSpace(s)
					}()
					var tmp string
					select {
					case tmp = <-line:
					case <-time.After(30 * time.Second):
						t.Fatal("the holding run did not start")
					}
					if tmp == "" || !exists(filepath.Join(tmp, "copied-secret")) {
						t.Fatalf("the holding run's temp dir %q holds no secret", tmp)
					}
					act := `cat "$(dirname "$TMPDIR")"/*/copied-secret; ls "$(dirname "$TMPDIR")"`
					// Control: the same act, without wrun, from beside it.
					r := run(t, runOpts{dir: reader, cred: m.cred, env: []string{"TMPDIR=" + filepath.Join(filepath.Dir(tmp), "control")}}, "sh", "-c", act)
					if !strings.Contains(r.stdout, escapeSecret) {
						t.Fatalf("control: without wrun the act did not read the secret, so this case proves nothing\n%s", r)
					}
					r = wrun(t, runOpts{dir: reader, cred: m.cred, env: m.env, bestEffort: m.bestEffort}, "--grant", g, "--", "sh", "-c", act)
					if strings.Contains(r.stdout, escapeSecret) {
						t.Errorf("ESCAPE under --grant %s (%s): another run's temp dir was read\n%s", g, m.name, r)
					}
					if strings.Contains(r.stdout, filepath.Base(tmp)) {
						t.Errorf("ESCAPE under --grant %s (%s): the directory of the other runs' temp dirs was listed\n%s", g, m.name, r)
					}
				})
			}
		})
	}
}

// credAttr starts a process as the mode's user.
func credAttr(m escapeMode) *syscall.SysProcAttr {
	if m.cred == nil {
		return nil
	}
	return &syscall.SysProcAttr{Credential: m.cred}
}
