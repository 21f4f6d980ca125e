//go:build linux

package integration

import (
	"github.com/wrun-dev/wrun/sandbox/linux"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// newRepo makes a git repository with one commit in a fresh workspace.
func newRepo(t *testing.T, ws string) {
	t.Helper()
	gitCmd(t, ws, "init", "-q", "-b", "main")
	mustWrite(t, filepath.Join(ws, "README"), "hello\n")
	mustWrite(t, filepath.Join(ws, "src", "lib.txt"), "lib\n")
	gitCmd(t, ws, "add", ".")
	gitCmd(t, ws, "commit", "-qm", "first")
}

// escapes are the ways a child could plant code that runs at the next
// unsandboxed git command. Each must fail under every grant.
var escapes = []struct {
	name string
	sh   string
}{
	{"create a hook", "echo 'touch /tmp/pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"},
	{"replace a sample hook", "echo evil > .git/hooks/pre-commit.sample"},
	{"remove the hooks dir", "rm -rf .git/hooks"},
	{"rewrite the config", "echo '[core]\n\tfsmonitor = touch /tmp/pwned' >> .git/config"},
	{"git config", "git config core.fsmonitor 'touch /tmp/pwned'"},
	{"replace the config by rename", "cp .git/config $TMPDIR/c && echo '[core]' >> $TMPDIR/c && mv $TMPDIR/c .git/config"},
	{"rename .git away", "mv .git .git-old && mkdir .git"},
	{"remove .git", "rm -rf .git"},
}

func checkRepoIntact(t *testing.T, ws, config string) {
	t.Helper()
	if got := mustRead(t, filepath.Join(ws, ".git", "config")); got != config {
		t.Fatalf(".git/config changed:\n%s", got)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git-old", ".git/commondir"} {
		if exists(filepath.Join(ws, p)) {
			t.Fatalf("%s exists after the run", p)
		}
	}
	if !exists(filepath.Join(ws, ".git", "hooks", "pre-commit.sample")) {
		t.Fatal("a sample hook was removed")
	}
	if got := mustRead(t, filepath.Join(ws, ".git", "hooks", "pre-commit.sample")); got == "evil\n" {
		t.Fatal("a sample hook was replaced")
	}
}

func TestGitConfigAndHooksAreProtectedUnderEveryGrant(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	newRepo(t, ws)
	config := mustRead(t, filepath.Join(ws, ".git", "config"))

	// Control: without wrun, the first escape works.
	if r := run(t, runOpts{dir: ws}, "sh", "-c", escapes[0].sh); r.code != 0 {
		t.Fatalf("control: %s", r)
	}
	os.Remove(filepath.Join(ws, ".git", "hooks", "pre-commit"))

	for _, g := range []string{"inspect", "verify", "write", "full"} {
		for _, e := range escapes {
			r := wrun(t, runOpts{dir: ws}, "--grant", g, "--", "sh", "-c", e.sh)
			if r.code == 0 {
				t.Errorf("%s: %s succeeded:\n%s", g, e.name, r)
			}
			checkRepoIntact(t, ws, config)
		}
	}
}

func TestWriteGrantKeepsGitUsable(t *testing.T) {
	requireABI(t, 3)
	if !linux.Mediates(bins.features) {
		t.Skip("new files beside .git need the mediation (seccomp user notification); without it carving refuses them (files.create)")
	}
	ws := workspace(t)
	newRepo(t, ws)
	config := mustRead(t, filepath.Join(ws, ".git", "config"))
	r := wrun(t, runOpts{dir: ws, env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}},
		"--grant", "write", "--", "sh", "-c", "echo new > NEWFILE && echo more >> src/lib.txt && git add -A && git commit -qm second && git branch topic && git log --oneline | wc -l")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "2" {
		t.Fatalf("git commit under write:\n%s", r)
	}
	if got := gitCmd(t, ws, "log", "-1", "--format=%s"); got != "second" {
		t.Fatalf("last commit %q", got)
	}
	checkRepoIntact(t, ws, config)
}

func TestCommondirPlantedInGitdirIsRemoved(t *testing.T) {
	requireABI(t, 3)
	ws := workspace(t)
	newRepo(t, ws)
	evil := workspace(t)
	r := wrun(t, runOpts{dir: ws}, "--grant", "write", "--", "sh", "-c", "echo "+evil+" > .git/commondir; echo done")
	if exists(filepath.Join(ws, ".git", "commondir")) {
		t.Fatalf(".git/commondir survived the run:\n%s", r)
	}
}

func TestLinkedWorktreeGitdirIsProtected(t *testing.T) {
	requireABI(t, 3)
	main := workspace(t)
	newRepo(t, main)
	wt := filepath.Join(workspace(t), "wt")
	gitCmd(t, main, "worktree", "add", "-q", wt, "-b", "feature")
	dotgit := mustRead(t, filepath.Join(wt, ".git"))
	for _, g := range []string{"inspect", "verify", "write", "full"} {
		for _, sh := range []string{
			"echo 'gitdir: /tmp/evil' > .git",
			"echo evil > " + filepath.Join(main, ".git", "hooks", "post-checkout"),
			"echo evil >> " + filepath.Join(main, ".git", "config"),
			"echo /tmp/evil > " + filepath.Join(main, ".git", "worktrees", "wt", "commondir"),
		} {
			r := wrun(t, runOpts{dir: wt}, "--grant", g, "--", "sh", "-c", sh)
			if r.code == 0 {
				t.Errorf("%s: %q succeeded", g, sh)
			}
		}
		if got := mustRead(t, filepath.Join(wt, ".git")); got != dotgit {
			t.Fatalf("%s: the worktree's .git file changed: %q", g, got)
		}
		if exists(filepath.Join(main, ".git", "hooks", "post-checkout")) {
			t.Fatalf("%s: a hook was planted in the main repository", g)
		}
	}
	// Under write the worktree's own files are writable.
	r := wrun(t, runOpts{dir: wt}, "--grant", "write", "--", "sh", "-c", "echo x > newfile && echo y >> src/lib.txt")
	if r.code != 0 {
		t.Fatalf("write in a linked worktree: %s", r)
	}
}

// nobody is the unprivileged user the carve-mode tests run wrun as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// sharedWorkspace makes a workspace an unprivileged user can use.
func sharedWorkspace(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "wrun-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// asNobody runs the git-protection checks as an unprivileged user;
// extraEnv chooses how wrun protects the repository then, and wantMode is
// what explain must say.
func asNobody(t *testing.T, extraEnv []string, wantMode string, gitWorks bool) {
	t.Helper()
	requireABI(t, 3)
	// As root, wrun runs as nobody; otherwise as the test's own user.
	ws := sharedWorkspace(t)
	newRepo(t, ws)
	if unprivileged != nil {
		chownTree(t, ws, int(unprivileged.Uid), int(unprivileged.Gid))
	}
	config := mustRead(t, filepath.Join(ws, ".git", "config"))
	env := runOpts{dir: ws, cred: unprivileged, env: append([]string{"HOME=/nonexistent",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}, extraEnv...)}
	// Carved rules alone run the write grant only degraded: the support
	// matrix refuses files.create without the mediation.
	env.bestEffort = !gitWorks

	// Control: as nobody, without wrun, planting a hook works.
	if r := run(t, env, "sh", "-c", escapes[0].sh); r.code != 0 {
		t.Fatalf("control: %s", r)
	}
	os.Remove(filepath.Join(ws, ".git", "hooks", "pre-commit"))

	explainArgs := []string{"explain", "--grant", "write"}
	if env.bestEffort {
		explainArgs = append(explainArgs, "--best-effort")
	}
	r := wrun(t, env, explainArgs...)
	if !strings.Contains(r.stdout, wantMode) {
		t.Fatalf("as nobody, protection should be by %s:\n%s", wantMode, r)
	}
	// First the work a writable grant is for (the escapes below may wreck
	// the repository's contents, which a writable grant allows).
	r = wrun(t, env, "--grant", "write", "--", "sh", "-c", "echo new > NEWFILE && git add -A && git commit -qm second")
	if gitWorks && r.code != 0 {
		t.Fatalf("git commit under write: %s", r)
	}
	if !gitWorks && r.code == 0 {
		t.Fatalf("git commit worked with carved rules, which should refuse .git/index.lock: %s", r)
	}
	checkRepoIntact(t, ws, config)
	for _, g := range []string{"inspect", "write", "full"} {
		for _, e := range escapes {
			r := wrun(t, env, "--grant", g, "--", "sh", "-c", e.sh)
			if r.code == 0 {
				t.Errorf("%s: %s succeeded:\n%s", g, e.name, r)
			}
			checkRepoIntact(t, ws, config)
		}
	}
	// Below the top level the workspace stays writable.
	r = wrun(t, env, "--grant", "write", "--", "sh", "-c", "echo more >> src/lib.txt && mkdir src/new && echo x > src/new/f")
	if r.code != 0 {
		t.Fatalf("write below the workspace root: %s", r)
	}
}

func TestGitProtectionAsAUser(t *testing.T) {
	asNobody(t, nil, "the mediation", true)
}

func TestGitProtectionByCarvedRules(t *testing.T) {
	asNobody(t, []string{"WRUN_SIMULATE=no-user-notif"}, "carved Landlock rules", false)
}
