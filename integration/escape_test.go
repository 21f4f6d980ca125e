//go:build linux

package integration

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Real sandbox-escape attempts. Each act is a shell script run twice on
// fresh copies of one fixture: first without wrun (the control: the
// forbidden effect must appear, or the case proves nothing), then under
// wrun with a grant, where the effect, checked on disk (or in what the
// child printed) afterwards, must not appear.
//
// The fixture, $F in every script:
//
//	$F/ws        the workspace: a git repository (main, and side one
//	             commit behind) that is also a cargo package, with target/
//	$F/outside/  victim (a file) and dir/ (empty): outside every grant
//	$F/home/     $HOME: .ssh/id_test (a credential store) and .gitconfig
//
// In the control the script runs as the child of a parent shell whose
// working directory is the workspace, as it is the child of wrun under
// wrun, so that $PPID means the same in both.

const escapeSecret = "SECRET-KEY-e5c4pe"

// escapeAct is one escape attempt.
type escapeAct struct {
	name, grant, sh string
	// prep, if set, changes each fresh copy before its run.
	prep func(t *testing.T, F string)
	// env, if set, adds variables to both runs.
	env func(F string) []string
	// keep names variables of env the sandboxed act reads: they are not
	// on wrun's allowlist, so wrun passes them only with --keep-env.
	keep []string
	// effect describes the forbidden effect if it happened ("" if not).
	effect func(F string, r result) string
	// mayRefuse: wrun may refuse to start (exit 125) instead of running
	// the act, because what the act exploits is already in place.
	mayRefuse bool
}

// escapeMode is who runs wrun and what it finds on the machine.
type escapeMode struct {
	name string
	// cred is the unprivileged user wrun runs as (nobody when the tests
	// run as root; nil, the test's own user, when they do not).
	cred *syscall.Credential
	env  []string
	// bestEffort: the support matrix refuses every grant in this mode
	// (no mediation); the refusal is asserted and the act then run with
	// --best-effort, to test what the degraded mode holds.
	bestEffort bool
}

var (
	modeRoot = escapeMode{name: "root"}
	modeUser = escapeMode{name: "nobody", cred: unprivileged}
	// modeNoMed is a machine where wrun cannot mediate (no seccomp user
	// notification, simulated): carved rules alone.
	modeNoMed = escapeMode{name: "nobody, without the mediation", cred: unprivileged, env: []string{"WRUN_SIMULATE=no-user-notif"}, bestEffort: true}
)

// unprivileged is the user the unprivileged modes run wrun as: nobody
// when the tests run as root, the tests' own user (nil) otherwise.
var unprivileged = func() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return nobody
}()

// usable skips the test when this machine cannot run wrun in mode m. (A
// mode the support matrix refuses is not skipped here: wrun's helper
// asserts the refusal.) Every mode is usable wherever wrun runs.
func (m escapeMode) usable(t *testing.T) { t.Helper() }

// escapeFixture builds the fixture once per test; acts run on copies.
func escapeFixture(t *testing.T) string {
	t.Helper()
	base := workspace(t)
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	newRepo(t, ws)
	mustWrite(t, filepath.Join(ws, "Cargo.toml"), "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
	mustWrite(t, filepath.Join(ws, ".gitignore"), "/target\n")
	gitCmd(t, ws, "add", ".")
	gitCmd(t, ws, "commit", "-qm", "cargo")
	gitCmd(t, ws, "branch", "side", "HEAD~1")
	if err := os.MkdirAll(filepath.Join(ws, "target"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(base, "outside", "victim"), "victim\n")
	if err := os.MkdirAll(filepath.Join(base, "outside", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(base, "home", ".ssh", "id_test"), escapeSecret+"\n")
	mustWrite(t, filepath.Join(base, "home", ".gitconfig"), "[user]\n\tname = owner\n")
	return base
}

// freshCopy copies the fixture for one run, owned by the mode's user.
func freshCopy(t *testing.T, base string, m escapeMode) string {
	t.Helper()
	dir := workspace(t)
	if m.cred != nil {
		dir = sharedWorkspace(t)
	}
	F := filepath.Join(dir, "F")
	copyTree(t, base, F)
	if m.cred != nil {
		chownTree(t, F, int(m.cred.Uid), int(m.cred.Gid))
	}
	return F
}

func escapeOpts(F string, m escapeMode, extra ...string) runOpts {
	env := []string{"F=" + F, "HOME=" + filepath.Join(F, "home"), "PROBE=" + bins.probe,
		"XDG_CACHE_HOME=" + filepath.Join(F, "home", ".cache"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1"}
	env = append(env, m.env...)
	return runOpts{dir: filepath.Join(F, "ws"), cred: m.cred, env: append(env, extra...), bestEffort: m.bestEffort}
}

// escapeKeep passes the variables escapeOpts sets that the acts read and
// that are not on wrun's allowlist: without them an act would aim at the
// wrong place and fail, a false green.
var escapeKeep = []string{"--keep-env", "F", "--keep-env", "PROBE"}

// keepArgs are escapeKeep plus --keep-env for each of names.
func keepArgs(names ...string) []string {
	args := append([]string(nil), escapeKeep...)
	for _, n := range names {
		args = append(args, "--keep-env", n)
	}
	return args
}

// TestEscapeActsSeeTheirVariables: the acts read $F and $PROBE inside the
// sandbox; were they dropped, every act would miss its target and pass.
func TestEscapeActsSeeTheirVariables(t *testing.T) {
	requireABI(t, 3)
	F := freshCopy(t, escapeFixture(t), modeRoot)
	r := wrun(t, escapeOpts(F, modeRoot), append(keepArgs(), "--", "sh", "-c", `echo "$F $PROBE"`)...)
	if got, want := strings.TrimSpace(r.stdout), F+" "+bins.probe; got != want {
		t.Fatalf("the sandboxed act sees %q, want %q\n%s", got, want, r)
	}
}

// controlShell runs $ESCAPE_SH as the child of a shell (not exec'd by it).
const controlShell = `sh -c "$ESCAPE_SH"; s=$?; exit $s`

// runActs runs each act, control first, in mode m.
func runActs(t *testing.T, base string, m escapeMode, acts []escapeAct) {
	t.Helper()
	for _, a := range acts {
		t.Run(a.name, func(t *testing.T) {
			escapeAttempt(t)
			prepare := func(F string) runOpts {
				if a.prep != nil {
					a.prep(t, F)
				}
				var extra []string
				if a.env != nil {
					extra = a.env(F)
				}
				return escapeOpts(F, m, extra...)
			}
			twin := freshCopy(t, base, m)
			o := prepare(twin)
			// wrun gives the child a private TMPDIR; the control gets one too.
			tmp := filepath.Join(twin, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			if m.cred != nil {
				os.Chown(tmp, int(m.cred.Uid), int(m.cred.Gid))
			}
			o.env = append(o.env, "ESCAPE_SH="+a.sh, "TMPDIR="+tmp)
			r := run(t, o, "sh", "-c", controlShell)
			if e := a.effect(twin, r); e == "" {
				t.Fatalf("control: without wrun the act had no effect, so this case proves nothing\nact: %s\n%s", a.sh, r)
			}
			F := freshCopy(t, base, m)
			r = wrun(t, prepare(F), append(keepArgs(a.keep...), "--grant", a.grant, "--", "sh", "-c", a.sh)...)
			if e := a.effect(F, r); e != "" {
				t.Errorf("ESCAPE under --grant %s (%s): %s\nact: %s\n%s", a.grant, m.name, e, a.sh, r)
			}
			if r.code == 125 {
				if !a.mayRefuse {
					t.Errorf("wrun refused to run, so the act was not tried:\n%s", r)
				}
				t.Logf("wrun refused to run: %s", strings.TrimSpace(r.stderr))
			}
		})
	}
}

// Effects.

// changed: a file of the fixture differs from the original (or is gone).
func changed(base string, rels ...string) func(F string, r result) string {
	return func(F string, r result) string {
		for _, rel := range rels {
			want, werr := os.ReadFile(filepath.Join(base, rel))
			got, gerr := os.ReadFile(filepath.Join(F, rel))
			if (werr == nil) != (gerr == nil) || string(want) != string(got) {
				return rel + " changed: " + strconv.Quote(string(got))
			}
		}
		return ""
	}
}

// appeared: a path that must not exist does.
func appeared(rels ...string) func(F string, r result) string {
	return func(F string, r result) string {
		for _, rel := range rels {
			if exists(filepath.Join(F, rel)) {
				return rel + " was created"
			}
		}
		return ""
	}
}

// vanished: a path that must stay is gone.
func vanished(rels ...string) func(F string, r result) string {
	return func(F string, r result) string {
		for _, rel := range rels {
			if !exists(filepath.Join(F, rel)) {
				return rel + " is gone"
			}
		}
		return ""
	}
}

// filled: a directory that must stay empty is not.
func filled(rel string) func(F string, r result) string {
	return func(F string, r result) string {
		ents, _ := os.ReadDir(filepath.Join(F, rel))
		if len(ents) > 0 {
			return rel + " gained " + ents[0].Name()
		}
		return ""
	}
}

// printed: the child printed a secret.
func printed(secret string) func(F string, r result) string {
	return func(F string, r result) string {
		if strings.Contains(r.stdout, secret) {
			return "the child printed " + secret
		}
		return ""
	}
}

func anyOf(fs ...func(F string, r result) string) func(F string, r result) string {
	return func(F string, r result) string {
		for _, f := range fs {
			if e := f(F, r); e != "" {
				return e
			}
		}
		return ""
	}
}

func symlink(target, link string) func(t *testing.T, F string) {
	return func(t *testing.T, F string) {
		t.Helper()
		l := filepath.Join(F, link)
		if err := os.RemoveAll(l); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(F, target), l); err != nil {
			t.Fatal(err)
		}
	}
}

// revParse resolves a ref in dir, "" if it does not resolve.
func revParse(dir, ref string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "-q", "--verify", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

const evilConfig = `printf '[core]\n\tfsmonitor = "touch $F/pwned; false"\n'`

// gitFileActs attack .git/config and .git/hooks by links, renames and
// exchanges under --grant write, where the workspace (and .git) is
// writable. The escapes table of gitprotect_test.go has the plain writes.
func gitFileActs(base string) []escapeAct {
	cfg := changed(base, "ws/.git/config")
	hook := anyOf(appeared("ws/.git/hooks/pre-commit"), vanished("ws/.git/hooks/pre-commit.sample"), changed(base, "ws/.git/hooks/pre-commit.sample"))
	return []escapeAct{
		{name: "hard link .git/config into the workspace, append", grant: "write",
			sh: "ln .git/config cfg && " + evilConfig + " >> cfg", effect: cfg},
		{name: "hard link .git/config beside itself, append", grant: "write",
			sh: "ln .git/config .git/config2 && " + evilConfig + " >> .git/config2", effect: cfg},
		{name: "hard link a sample hook, overwrite", grant: "write",
			sh: "ln .git/hooks/pre-commit.sample h && echo evil > h", effect: hook},
		{name: "move .git/hooks aside, plant a new one", grant: "write",
			sh:     "mv .git/hooks .git/h2 && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
			effect: anyOf(appeared("ws/.git/h2"), hook)},
		{name: "move a planted dir over .git/hooks", grant: "write",
			sh: "mkdir h && echo evil > h/pre-commit; rm -rf .git/hooks; mv -T h .git/hooks", effect: hook},
		{name: "exchange .git/config with a planted one", grant: "write",
			sh: "cp .git/config c && " + evilConfig + " >> c && $PROBE exchange c .git/config", effect: cfg},
		{name: "exchange .git/hooks with a planted dir", grant: "write",
			sh: "mkdir h && echo evil > h/pre-commit && $PROBE exchange h .git/hooks", effect: hook},
		{name: "exchange .git with a planted gitdir", grant: "write",
			sh: "cp -r .git g && " + evilConfig + " >> g/config && $PROBE exchange g .git", effect: cfg},
		{name: "rename the workspace, recreate it", grant: "write",
			sh: "cd .. && mv ws ws.old && mkdir ws", effect: appeared("ws.old")},
		{name: "symlink in .git pointing at the config, write through it", grant: "write",
			sh: "ln -s config .git/cfglink && " + evilConfig + " >> .git/cfglink", effect: cfg},
	}
}

func TestEscapeGitFilesByLinksAndRenames(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, gitFileActs(base))
		})
	}
}

// TestEscapeProtectionFromANewNamespace: a new user and mount namespace
// would give the command a view of its own in which to unmount or remap
// what keeps git's files (there are no mounts to undo any more, but the
// attempt stays: the seccomp filter refuses the namespaces, and Landlock
// holds inside any namespace anyway).
func TestEscapeProtectionFromANewNamespace(t *testing.T) {
	requireABI(t, 3)
	requireTool(t, "unshare", "umount")
	modeRoot.usable(t)
	if !userNSWorks(nil) {
		// Both acts start with a user namespace: without one the control
		// cannot show the effect (and wrun is refused here anyway).
		escapeSkipped(t, 2, "control needs unprivileged user namespaces")
		t.Skip("control needs unprivileged user namespaces (this machine restricts them)")
	}
	base := escapeFixture(t)
	runActs(t, base, modeRoot, []escapeAct{
		{name: "unshare -Um, unmount, write .git/config", grant: "write",
			sh:     `unshare -Um sh -c 'umount -l .git/config; umount -l .git; echo "[core]" >> .git/config'`,
			effect: changed(base, "ws/.git/config")},
		{name: "unshare -Ur, write .git/config", grant: "write",
			sh:     `unshare -Ur sh -c 'echo "[core]" >> .git/config'`,
			effect: changed(base, "ws/.git/config")},
	})
}

func TestEscapeHardLinksOutOfReadOnlyPlaces(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	obj := revParse(filepath.Join(base, "ws"), "HEAD:README")
	objRel := "ws/.git/objects/" + obj[:2] + "/" + obj[2:]
	runActs(t, base, modeRoot, []escapeAct{
		{name: "write: a file outside, linked into the workspace", grant: "write",
			sh: "ln $F/outside/victim v && echo x >> v", effect: changed(base, "outside/victim")},
		{name: "inspect: a file outside, linked into TMPDIR", grant: "inspect",
			sh: "ln $F/outside/victim $TMPDIR/h && echo x >> $TMPDIR/h", effect: changed(base, "outside/victim")},
		{name: "inspect: a workspace file, linked into TMPDIR", grant: "inspect",
			sh: "ln README $TMPDIR/r && echo x >> $TMPDIR/r", effect: changed(base, "ws/README")},
		{name: "verify: a source file, linked into target/", grant: "verify",
			sh: "ln src/lib.txt target/l && echo x >> target/l", effect: changed(base, "ws/src/lib.txt")},
		{name: "verify: a git object, linked into refs/remotes", grant: "verify",
			// Objects are read-only files: root writes them anyway, their
			// owner after a chmod through the link.
			sh:     "mkdir -p .git/refs/remotes && ln " + strings.TrimPrefix(objRel, "ws/") + " .git/refs/remotes/o && { [ $(id -u) = 0 ] || chmod u+w .git/refs/remotes/o; } && echo x >> .git/refs/remotes/o",
			effect: changed(base, objRel)},
		{name: "verify: Cargo.toml, linked into TMPDIR", grant: "verify",
			sh: "ln Cargo.toml $TMPDIR/c && echo x >> $TMPDIR/c", effect: changed(base, "ws/Cargo.toml")},
	})
}

func TestEscapeRenamesUnderVerify(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	runActs(t, base, modeRoot, []escapeAct{
		{name: "move the local branch into refs/remotes", grant: "verify",
			sh: "mkdir -p .git/refs/remotes && mv .git/refs/heads/main .git/refs/remotes/main", effect: vanished("ws/.git/refs/heads/main")},
		{name: "move target/ away and a source dir in its place", grant: "verify",
			sh: "mv target target.old && mv src target", effect: anyOf(appeared("ws/target.old"), vanished("ws/src"))},
		{name: "move a source file into target/", grant: "verify",
			sh: "mv src/lib.txt target/", effect: vanished("ws/src/lib.txt")},
		{name: "exchange target/ with src/", grant: "verify",
			sh: "$PROBE exchange target src", effect: vanished("ws/src/lib.txt")},
	})
}

func TestEscapeSymlinks(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	outFile := changed(base, "outside/victim")
	outDir := filled("outside/dir")
	runActs(t, base, modeRoot, []escapeAct{
		{name: "write: a symlink planted before the run, to a file outside", grant: "write",
			prep: symlink("outside/victim", "ws/out"), sh: "echo x >> out", effect: outFile},
		{name: "write: a symlink the child makes, to a file outside", grant: "write",
			sh: "ln -s $F/outside/victim s && echo x >> s", effect: outFile},
		{name: "write: a symlink the child makes, to a directory outside", grant: "write",
			sh: "ln -s $F/outside/dir d && echo x > d/new", effect: outDir},
		{name: "write: a symlinked subdirectory planted before the run", grant: "write",
			prep: symlink("outside/dir", "ws/src/gen"), sh: "echo x > src/gen/new", effect: outDir},
		// verify makes cargo's target dir writable: a symlink in its place
		// must not carry the grant outside (wrun may refuse to run: 125).
		{name: "verify: target/ is a symlink to a directory outside", grant: "verify",
			prep: symlink("outside/dir", "ws/target"), sh: "echo x > target/planted", effect: outDir, mayRefuse: true},
		{name: "verify: [build] target-dir names a symlink to outside", grant: "verify",
			prep: func(t *testing.T, F string) {
				mustWrite(t, filepath.Join(F, "ws", ".cargo", "config.toml"), "[build]\ntarget-dir = \"out\"\n")
				symlink("outside/dir", "ws/out")(t, F)
			},
			sh: "echo x > out/planted", effect: outDir, mayRefuse: true},
		{name: "verify: .git/refs/remotes is a symlink to outside", grant: "verify",
			prep: symlink("outside/dir", "ws/.git/refs/remotes"), sh: "echo x > .git/refs/remotes/planted", effect: outDir, mayRefuse: true},
		{name: "verify: .git/refs/tags is a symlink to outside", grant: "verify",
			prep: symlink("outside/dir", "ws/.git/refs/tags"), sh: "echo x > .git/refs/tags/planted", effect: outDir, mayRefuse: true},
		{name: "verify: .git/logs is a symlink to outside", grant: "verify",
			prep: symlink("outside/dir", "ws/.git/logs"), sh: "mkdir -p .git/logs/refs/remotes && echo x > .git/logs/refs/remotes/planted", effect: outDir, mayRefuse: true},
		{name: "verify: .git/FETCH_HEAD is a symlink to a file outside", grant: "verify",
			prep: symlink("outside/victim", "ws/.git/FETCH_HEAD"), sh: "echo x >> .git/FETCH_HEAD", effect: outFile, mayRefuse: true},
	})
}

func TestEscapeThroughProc(t *testing.T) {
	requireABI(t, 3)
	modeRoot.usable(t)
	base := escapeFixture(t)
	// A process outside the sandbox: its /proc/PID/root and cwd lead to
	// the files past the child's Landlock rules, if /proc let them.
	outsider := exec.Command("sleep", "60")
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	defer outsider.Process.Kill()
	cfg := changed(base, "ws/.git/config")
	outFile := changed(base, "outside/victim")
	runActs(t, base, modeRoot, []escapeAct{
		{name: "inspect: /proc/self/root to a file outside", grant: "inspect",
			sh: "echo x >> /proc/self/root$F/outside/victim", effect: outFile},
		{name: "write: /proc/self/root to a file outside", grant: "write",
			sh: "echo x >> /proc/self/root$F/outside/victim", effect: outFile},
		{name: "write: /proc/thread-self/cwd/../outside", grant: "write",
			sh: "echo x >> /proc/thread-self/cwd/../outside/victim", effect: outFile},
		{name: "write: .git/config through the parent's root", grant: "write",
			sh: evilConfig + " >> /proc/$PPID/root$PWD/.git/config", effect: cfg},
		{name: "write: .git/config through the parent's cwd", grant: "write",
			sh: evilConfig + " >> /proc/$PPID/cwd/.git/config", effect: cfg},
		{name: "write: .git/config through each thread of the parent", grant: "write",
			sh: "for t in /proc/$PPID/task/*; do " + evilConfig + " >> $t/root$PWD/.git/config; done; true", effect: cfg},
		{name: "write: .git/config through an outside process's root", grant: "write",
			env:  func(string) []string { return []string{"OUTSIDER=" + strconv.Itoa(outsider.Process.Pid)} },
			keep: []string{"OUTSIDER"},
			sh:   evilConfig + " >> /proc/$OUTSIDER/root$PWD/.git/config", effect: cfg},
		{name: "inspect: create a file through the parent's cwd", grant: "inspect",
			sh: "echo x > /proc/$PPID/cwd/planted; for t in /proc/$PPID/task/*; do echo x > $t/cwd/planted; done; true", effect: appeared("ws/planted")},
		{name: "write: a directory fd's /proc/self/fd link", grant: "write",
			sh: "exec 4<$F/outside/dir; echo x > /proc/self/fd/4/planted", effect: filled("outside/dir")},
	})
}

func TestEscapeCredentialReads(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	leak := printed(escapeSecret)
	runActs(t, base, modeRoot, []escapeAct{
		{name: "cat ~/.ssh/id_test", grant: "inspect", sh: "cat $HOME/.ssh/id_test", effect: leak},
		{name: "a symlink in the workspace to the key", grant: "inspect",
			prep: symlink("home/.ssh/id_test", "ws/key"), sh: "cat key", effect: leak},
		{name: "a symlink in the workspace to ~/.ssh", grant: "inspect",
			prep: symlink("home/.ssh", "ws/sshdir"), sh: "cat sshdir/id_test", effect: leak},
		{name: "a hard link the child makes in TMPDIR", grant: "inspect",
			sh: "ln $HOME/.ssh/id_test $TMPDIR/k; cat $TMPDIR/k", effect: leak},
		{name: "/proc/self/root to the key", grant: "inspect", sh: "cat /proc/self/root$HOME/.ssh/id_test", effect: leak},
		{name: "the parent's root to the key", grant: "inspect",
			sh: "cat /proc/$PPID/root$HOME/.ssh/id_test; for t in /proc/$PPID/task/*; do cat $t/root$HOME/.ssh/id_test; done", effect: leak},
	})

	// A hard link made before the run, from a readable place, is another
	// path to the same inode. Landlock rules are attached to directories
	// and a file inherits its rights from the path it is opened by, so this
	// link is as readable as the rest of the workspace: wrun hides paths,
	// not inodes. Documented here, not asserted as protection.
	t.Run("a hard link made before the run", func(t *testing.T) {
		F := freshCopy(t, base, modeRoot)
		if err := os.Link(filepath.Join(F, "home", ".ssh", "id_test"), filepath.Join(F, "ws", "key")); err != nil {
			t.Fatal(err)
		}
		if r := run(t, escapeOpts(F, modeRoot), "cat", "key"); !strings.Contains(r.stdout, escapeSecret) {
			t.Fatalf("control: %s", r)
		}
		r := wrun(t, escapeOpts(F, modeRoot), "--grant", "inspect", "--", "cat", "key")
		if strings.Contains(r.stdout, escapeSecret) {
			t.Logf("known Landlock property: a hard link made before the run to a hidden file is readable through its own path (%s)", filepath.Join(F, "ws", "key"))
		} else {
			t.Logf("a hard link made before the run to a hidden file is not readable: %s", r)
		}
	})
}

func TestEscapeThroughGit(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	main := revParse(filepath.Join(base, "ws"), "refs/heads/main")
	moved := func(F string, r result) string {
		if got := revParse(filepath.Join(F, "ws"), "refs/heads/main"); got != main {
			return "refs/heads/main moved to " + got
		}
		return ""
	}
	homeInWorkspace := func(F string) []string { return []string{"HOME=" + filepath.Join(F, "ws", "home")} }
	prepHome := func(t *testing.T, F string) {
		mustWrite(t, filepath.Join(F, "ws", "home", ".gitconfig"), "[user]\n\tname = owner\n")
		mustWrite(t, filepath.Join(F, "ws", "home", ".bashrc"), "# rc\n")
	}
	gitconfig := changed(base, "home/.gitconfig")
	acts := []escapeAct{
		{name: "inspect: git config --global", grant: "inspect",
			sh: "git config --global core.pager 'touch $F/pwned'", effect: gitconfig},
		{name: "verify: git config --global", grant: "verify",
			sh: "git config --global core.pager 'touch $F/pwned'", effect: gitconfig},
		{name: "verify: git config --global creates ~/.gitconfig", grant: "verify",
			prep: func(t *testing.T, F string) { os.Remove(filepath.Join(F, "home", ".gitconfig")) },
			sh:   "git config --global core.pager 'touch $F/pwned'", effect: appeared("home/.gitconfig")},
		{name: "verify: git config --file ~/.config/git/config", grant: "verify",
			prep: func(t *testing.T, F string) { os.MkdirAll(filepath.Join(F, "home", ".config", "git"), 0o755) },
			sh:   "git config --file $HOME/.config/git/config core.pager 'touch $F/pwned'", effect: appeared("home/.config/git/config")},
		{name: "verify: git update-ref of the local branch", grant: "verify",
			sh: "git update-ref refs/heads/main side", effect: moved},
		{name: "verify: git branch -f of the local branch", grant: "verify",
			sh: "git branch -f side main", effect: func(F string, r result) string {
				if revParse(filepath.Join(F, "ws"), "side") == main {
					return "side moved"
				}
				return ""
			}},
		{name: "verify: git fetch into the local branch", grant: "verify",
			sh: "git fetch -q --update-head-ok . +side:main", effect: moved},
		{name: "verify: git pack-refs rewrites packed-refs", grant: "verify",
			sh: "git pack-refs --all", effect: appeared("ws/.git/packed-refs")},
		{name: "write, HOME in the workspace: git config --global", grant: "write",
			prep: prepHome, env: homeInWorkspace,
			sh: "git config --global core.pager 'touch $F/pwned'",
			effect: func(F string, r result) string {
				return changedFile(F, "ws/home/.gitconfig", "[user]\n\tname = owner\n")
			}},
		{name: "write, HOME in the workspace: append to ~/.bashrc", grant: "write",
			prep: prepHome, env: homeInWorkspace,
			sh:     "echo 'touch $F/pwned' >> $HOME/.bashrc",
			effect: func(F string, r result) string { return changedFile(F, "ws/home/.bashrc", "# rc\n") }},
	}
	runActs(t, base, modeRoot, acts)

	// What verify does allow: a remote-tracking ref moves.
	F := freshCopy(t, base, modeRoot)
	side := revParse(filepath.Join(F, "ws"), "side")
	r := wrun(t, escapeOpts(F, modeRoot), "--grant", "verify", "--", "git", "update-ref", "refs/remotes/origin/x", "side")
	if r.code != 0 || revParse(filepath.Join(F, "ws"), "refs/remotes/origin/x") != side {
		t.Errorf("verify: git update-ref refs/remotes/origin/x should work:\n%s", r)
	}
	if revParse(filepath.Join(F, "ws"), "refs/heads/main") != main {
		t.Error("main moved")
	}
}

// changedFile reports whether F/rel no longer holds want.
func changedFile(F, rel, want string) string {
	b, err := os.ReadFile(filepath.Join(F, rel))
	if err != nil || string(b) != want {
		return rel + " changed: " + strconv.Quote(string(b))
	}
	return ""
}

func TestEscapeNetworkOff(t *testing.T) {
	requireABI(t, 4)
	if !bins.features.Seccomp {
		t.Skip("needs seccomp")
	}
	ws := workspace(t)
	tcpAddr, accepted := listen(t)
	_, tcpPort, _ := net.SplitHostPort(tcpAddr)

	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	datagrams := make(chan struct{}, 16)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			datagrams <- struct{}{}
		}
	}()
	udpAddr := udp.LocalAddr().String()
	_, udpPort, _ := net.SplitHostPort(udpAddr)

	name := "wrun-escape-" + strconv.Itoa(os.Getpid())
	abstract, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	abstractAccepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := abstract.Accept()
			if err != nil {
				return
			}
			c.Close()
			abstractAccepted <- struct{}{}
		}
	}()

	got := func(ch chan struct{}, wait time.Duration) bool {
		select {
		case <-ch:
			return true
		case <-time.After(wait):
			return false
		}
	}
	_, bashErr := exec.LookPath("bash")
	tests := []struct {
		name  string
		argv  []string
		ch    chan struct{}
		needs string
	}{
		{"TCP connect with bash /dev/tcp", []string{"bash", "-c", "echo x > /dev/tcp/127.0.0.1/" + tcpPort}, accepted, "bash"},
		{"UDP sendto", []string{bins.probe, "udp", udpAddr}, datagrams, ""},
		{"UDP with bash /dev/udp", []string{"bash", "-c", "echo x > /dev/udp/127.0.0.1/" + udpPort}, datagrams, "bash"},
		{"abstract UNIX socket connect", []string{bins.probe, "abstract", name}, abstractAccepted, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			escapeAttempt(t)
			if tc.needs == "bash" && bashErr != nil {
				t.Skip("needs bash")
			}
			if r := run(t, runOpts{dir: ws}, tc.argv...); r.code != 0 || !got(tc.ch, 5*time.Second) {
				t.Fatalf("control: without wrun nothing arrived: %s", r)
			}
			// The abstract socket is refused by seccomp (no AF_UNIX socket
			// below Landlock ABI 9 with desktop=off) and by Landlock's
			// abstract UNIX socket scope (ABI 6).
			for _, g := range []string{"inspect", "write", "verify,network=off"} {
				r := wrun(t, runOpts{dir: ws}, append([]string{"--grant", g, "--"}, tc.argv...)...)
				if got(tc.ch, 100*time.Millisecond) {
					t.Errorf("ESCAPE under --grant %s: it arrived\n%s", g, r)
				}
				if r.code == 0 {
					t.Errorf("--grant %s: the command succeeded: %s", g, r)
				}
			}
		})
	}
}

func TestEscapeSignalsToOutsideProcesses(t *testing.T) {
	requireABI(t, 6)
	ws := workspace(t)
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait()
		t.Cleanup(func() { c.Process.Kill() })
		return c
	}
	for _, sig := range []struct{ name, sh string }{
		{"kill -TERM pid", "kill -TERM $VICTIM"},
		{"kill -KILL pid", "kill -KILL $VICTIM"},
		{"kill -TERM process group", "kill -TERM -$VICTIM"},
		{"/bin/kill -STOP pid", "/bin/kill -STOP $VICTIM"},
	} {
		t.Run(sig.name, func(t *testing.T) {
			escapeAttempt(t)
			control := start()
			env := []string{"VICTIM=" + strconv.Itoa(control.Process.Pid)}
			if r := run(t, runOpts{dir: ws, env: env}, "sh", "-c", sig.sh); r.code != 0 {
				t.Fatalf("control: %s", r)
			}
			stopped := func(pid int) bool {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				f := strings.Fields(string(b))
				return len(f) > 2 && f[2] == "T"
			}
			reached := false
			for i := 0; i < 100 && !reached; i++ {
				reached = stopped(control.Process.Pid) || !alive(control.Process.Pid)
				if !reached {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if !reached {
				t.Fatal("control: the signal did not reach the process")
			}
			for _, g := range []string{"inspect", "verify", "write"} {
				victim := start()
				env := []string{"VICTIM=" + strconv.Itoa(victim.Process.Pid)}
				r := wrun(t, runOpts{dir: ws, env: env}, "--keep-env", "VICTIM", "--grant", g, "--", "sh", "-c", sig.sh)
				time.Sleep(20 * time.Millisecond)
				if !alive(victim.Process.Pid) || stopped(victim.Process.Pid) {
					t.Errorf("ESCAPE under --grant %s: %s reached a process outside the sandbox\n%s", g, sig.sh, r)
				}
			}
		})
	}
	// wrun itself (its pid, the thread group) is outside the sandbox too.
	t.Run("kill -KILL the parent", func(t *testing.T) {
		escapeAttempt(t)
		if r := run(t, runOpts{dir: ws}, "sh", "-c", `sh -c 'kill -KILL $PPID'; echo survived`); r.code != 128+9 && r.code != -1 {
			t.Fatalf("control: the parent shell survived: %s", r)
		}
		r := wrun(t, runOpts{dir: ws}, "--", "sh", "-c", "kill -KILL $PPID; echo child-done")
		if r.code == -1 || !strings.Contains(r.stdout, "child-done") {
			t.Errorf("ESCAPE: the child killed wrun: %s", r)
		}
	})
}

// The escapes below were found succeeding by this suite, when wrun forked
// every child from one of its own threads (the launch thread), which is in
// the child's Landlock domain. Inspecting it (/proc/PPID/task/TID/environ,
// mem, fd/*; pidfd_getfd) is refused (wrun is not dumpable). The thread
// launch is the one launch path: the seccomp filter refuses every call
// naming that thread or wrun's process by number, and the mediation or
// Landlock's scope every signal outside (escape_reach_test.go). wrun's
// private go cache is now reached without following symlinks.

// launchThread is the shell loop over the threads of the child's parent:
// under wrun one of them is the launch thread; in the control the parent
// shell has only one.
const launchThread = `for t in /proc/$PPID/task/*; do `

func TestEscapeScrubbedEnvironmentThroughTheLaunchThread(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	const token = "ghp_escapeTOKEN0123456789"
	act := escapeAct{name: "read the parent's environ", grant: "inspect",
		env: func(string) []string { return []string{"GITHUB_TOKEN=" + token} },
		sh:  launchThread + `tr '\0' '\n' < $t/environ; done 2>/dev/null; echo "own: $GITHUB_TOKEN"`,
		effect: func(F string, r result) string {
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.Contains(l, token) && !strings.HasPrefix(l, "own:") {
					return "the child read " + l + " from its parent's environment"
				}
			}
			return ""
		}}
	write := act
	write.name, write.grant = "read the parent's environ, write grant", "write"
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, []escapeAct{act, write})
		})
	}
}

func TestEscapeInheritedDescriptorsThroughTheLaunchThread(t *testing.T) {
	requireABI(t, 3)
	// Each act first closes its own fd 3 (wrun closes it for the child; in
	// the control the parent shell keeps it, as wrun does), then takes the
	// parent's back.
	acts := []struct {
		name, sh string
		pipe     bool // fd 3 is a pipe (else a file outside the grant)
	}{
		{"a pipe, reopened through /proc/PPID/task/TID/fd/3",
			`exec 3>&-; ` + launchThread + `(echo leak > $t/fd/3) 2>/dev/null; done; true`, true},
		{"a file outside, taken with pidfd_getfd",
			`exec 3>&-; ` + launchThread + `$PROBE stealfd ${t##*/} 3; done; true`, false},
	}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			for _, a := range acts {
				t.Run(a.name, func(t *testing.T) {
					escapeAttempt(t)
					if a.pipe && m.cred != nil {
						t.Skip("reopening a pipe through /proc checks its owner, and the test's pipes belong to root")
					}
					dir := workspace(t)
					if m.cred != nil {
						dir = sharedWorkspace(t)
					}
					o := runOpts{dir: dir, cred: m.cred, env: append([]string{"HOME=/nonexistent", "PROBE=" + bins.probe}, m.env...), bestEffort: m.bestEffort}
					// try runs the act with fd 3 open on a fresh pipe or
					// file and returns what reached it.
					try := func(argv ...string) (string, result) {
						oo := o
						oo.env = append(append([]string(nil), o.env...), "ESCAPE_SH="+a.sh)
						if a.pipe {
							pr, pw, err := os.Pipe()
							if err != nil {
								t.Fatal(err)
							}
							defer pr.Close()
							oo.files = []*os.File{pw}
							r := run(t, oo, argv...)
							pw.Close()
							pr.SetReadDeadline(time.Now().Add(time.Second))
							b := make([]byte, 64)
							n, _ := pr.Read(b)
							return string(b[:n]), r
						}
						path := filepath.Join(dir, "leak.txt")
						f, err := os.Create(path)
						if err != nil {
							t.Fatal(err)
						}
						defer f.Close()
						oo.files = []*os.File{f}
						r := run(t, oo, argv...)
						return mustRead(t, path), r
					}
					got, r := try("sh", "-c", controlShell)
					if !strings.Contains(got, "leak") {
						if !a.pipe {
							t.Skipf("control: pidfd_getfd did not work without wrun (needs pidfd_open with PIDFD_THREAD, Linux 6.9): %s", r)
						}
						t.Fatalf("control: nothing came through fd 3: %s", r)
					}
					for _, g := range []string{"inspect", "write"} {
						if got, r := try(append([]string{bins.wrun}, wrunArgs(t, o, "--keep-env", "PROBE", "--grant", g, "--", "sh", "-c", a.sh)...)...); got != "" {
							t.Errorf("ESCAPE under --grant %s: the child wrote %q through fd 3 of wrun (which it must not inherit)\n%s", g, got, r)
						}
					}
				})
			}
		})
	}
}

func TestEscapeChildKillsWrunToKeepAPlantedCommondir(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	// The child plants .git/commondir (wrun removes it after the run: the
	// sweep) pointing at a repository of its making whose config runs a
	// command, then kills its parent's threads: on the thread launch path
	// that is wrun, so no sweep. The signal is refused, and the plant is
	// refused when it is made (wrun performs creates in .git, refusing
	// commondir; with carved rules alone nothing new can be made in .git).
	plant := `mkdir evil && cp -r .git/objects .git/refs evil/ && ` +
		`printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s/pwned; false"\n' "$F" > evil/config && ` +
		`echo ../evil > .git/commondir && echo "tmp=$TMPDIR" && ` +
		launchThread + `kill -KILL ${t##*/} 2>/dev/null; done`
	act := escapeAct{name: "plant commondir, kill wrun", grant: "write", sh: plant,
		effect: func(F string, r result) string {
			// wrun could not remove its private TMPDIR: the test does.
			for _, l := range strings.Split(r.stdout, "\n") {
				if d, ok := strings.CutPrefix(l, "tmp="); ok && (strings.HasPrefix(filepath.Base(d), "wrun-") || strings.HasPrefix(filepath.Base(filepath.Dir(d)), "wrun-")) {
					os.RemoveAll(d)
				}
			}
			if !exists(filepath.Join(F, "ws", ".git", "commondir")) {
				return ""
			}
			// The user's next git command, without wrun, runs the planted one.
			exec.Command("git", "-c", "safe.directory=*", "-C", filepath.Join(F, "ws"), "status", "--short").Run()
			if exists(filepath.Join(F, "pwned")) {
				return ".git/commondir survived the run, and a plain `git status` ran the planted core.fsmonitor"
			}
			return ".git/commondir survived the run"
		}}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, []escapeAct{act})
		})
	}
}

// modeChanged: a path's permission bits or mtime differ from the fixture's.
func modeChanged(base string, rels ...string) func(F string, r result) string {
	return func(F string, r result) string {
		for _, rel := range rels {
			want, err1 := os.Lstat(filepath.Join(base, rel))
			got, err2 := os.Lstat(filepath.Join(F, rel))
			if err1 != nil || err2 != nil {
				continue
			}
			if want.Mode() != got.Mode() {
				return rel + " mode changed from " + want.Mode().String() + " to " + got.Mode().String()
			}
			if !want.ModTime().Equal(got.ModTime()) && !want.IsDir() {
				return rel + " mtime changed to " + got.ModTime().String()
			}
		}
		return ""
	}
}

func TestEscapeMetadataWritesOutsideTheGrant(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	acts := []escapeAct{
		{name: "inspect: chmod 4777 a file outside (setuid, world-writable)", grant: "inspect",
			sh: "chmod 4777 $F/outside/victim", effect: modeChanged(base, "outside/victim")},
		{name: "inspect: set the mtime of a file outside", grant: "inspect",
			sh: "touch -m -d 2001-01-01 $F/outside/victim", effect: modeChanged(base, "outside/victim")},
		{name: "inspect: chmod a file of the read-only workspace", grant: "inspect",
			sh: "chmod 0777 README", effect: modeChanged(base, "ws/README")},
		{name: "inspect: chmod the hidden key and ~/.ssh", grant: "inspect",
			sh: "chmod 0777 $HOME/.ssh $HOME/.ssh/id_test", effect: modeChanged(base, "home/.ssh", "home/.ssh/id_test")},
		{name: "verify: chmod a source file executable", grant: "verify",
			sh: "chmod 0755 src/lib.txt", effect: modeChanged(base, "ws/src/lib.txt")},
		{name: "write: chmod .git/hooks and .git/config world-writable", grant: "write",
			sh: "chmod 0777 .git/hooks; chmod 0666 .git/config", effect: modeChanged(base, "ws/.git/hooks", "ws/.git/config")},
	}
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			if withoutMediation(t, m, "files.metadata", len(acts)) {
				return
			}
			runActs(t, base, m, acts)
		})
	}
}

func TestEscapeFullGrantRedirectsTheGoCacheOfLaterRuns(t *testing.T) {
	requireABI(t, 3)
	escapeAttempt(t)
	base := escapeFixture(t)
	F := freshCopy(t, base, modeRoot)
	twin := freshCopy(t, base, modeRoot)
	for _, d := range []string{F, twin} {
		mustWrite(t, filepath.Join(d, "ws", "go.mod"), "module example.com/x\n\ngo 1.22\n")
		mustWrite(t, filepath.Join(d, "home", ".bashrc"), "# rc\n")
		if err := os.MkdirAll(filepath.Join(d, "home", ".cache"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// wrun keeps a private go build cache for sandboxed runs of a workspace
	// at $XDG_CACHE_HOME/wrun/ws/<sha256(workspace)[:8]>/gocache, which
	// --grant full (the user's caches are writable) may replace by a
	// symlink; a later --grant verify run then has the link's target
	// writable: here $HOME, with ~/.bashrc in it.
	const state = `d=$XDG_CACHE_HOME/wrun/ws/$(printf %s "$PWD" | sha256sum | cut -c1-16); `
	plant := state + `mkdir -p $d && ln -s $HOME $d/gocache`
	use := state + `echo 'touch $F/pwned' >> $d/gocache/.bashrc`

	for i, sh := range []string{plant, use} {
		if r := run(t, escapeOpts(twin, modeRoot), "sh", "-c", sh); r.code != 0 {
			t.Fatalf("control, step %d: %s", i+1, r)
		}
	}
	if changedFile(twin, "home/.bashrc", "# rc\n") == "" {
		t.Fatal("control: ~/.bashrc did not change")
	}
	r1 := wrun(t, escapeOpts(F, modeRoot), append(keepArgs(), "--grant", "full", "--", "sh", "-c", plant)...)
	r2 := wrun(t, escapeOpts(F, modeRoot), append(keepArgs(), "--grant", "verify", "--", "sh", "-c", use)...)
	if e := changedFile(F, "home/.bashrc", "# rc\n"); e != "" {
		t.Errorf("ESCAPE: a --grant full child planted a symlink at wrun's private go cache; the next --grant verify run wrote through it: %s\nfull: %s\nverify: %s", e, r1, r2)
	}
}
