//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Class 4: git protection must reach every repository a writable tree
// holds, and class 7: every start-up file a later unsandboxed program
// loads. Each act plants something; its effect is checked the way the
// user would meet it: a later plain git command (or python, go), run by
// the test outside wrun, that touches $F/pwned if the planted program ran.

// reachFixture is escapeFixture plus, in the workspace, a second
// repository (lib/, untracked: a ~/src layout), a submodule (sub/, its git
// dir in .git/modules/sub) and an empty python user site.
func reachFixture(t *testing.T) string {
	t.Helper()
	base := escapeFixture(t)
	ws := filepath.Join(base, "ws")
	lib := filepath.Join(ws, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	newRepo(t, lib)
	src := filepath.Join(base, "outside", "subsrc")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	newRepo(t, src)
	gitCmd(t, ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
	gitCmd(t, ws, "commit", "-qm", "sub")
	return base
}

// ownLikeF gives everything in F to F's owner (a prep step runs as root).
func ownLikeF(t *testing.T, F string) {
	t.Helper()
	fi, err := os.Stat(F)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		chownTree(t, F, int(st.Uid), int(st.Gid))
	}
}

// plainGit runs git outside wrun as the user would, in dir, with the
// fixture's home; it reports whether $F/pwned appeared.
func plainGit(F, dir string, home string, args ...string) string {
	if home == "" {
		home = filepath.Join(F, "home")
	}
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "F="+F, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, _ := cmd.CombinedOutput()
	if exists(filepath.Join(F, "pwned")) {
		return "a plain `git " + strings.Join(args, " ") + "` in " + dir + " ran the planted program: " + strings.TrimSpace(string(out))
	}
	return ""
}

func gitRan(dir string, home string, args ...string) func(F string, r result) string {
	return func(F string, r result) string {
		return plainGit(F, filepath.Join(F, dir), home, args...)
	}
}

// evilGitDir makes a git dir at $1 whose config runs a program.
const evilGitDir = `mkgd() { mkdir -p "$1" && cp -r .git/objects .git/refs .git/HEAD "$1"/ && ` +
	`printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s/pwned; false"\n' "$F" > "$1"/config; }; `

func gitReachActs() []escapeAct {
	wsHome := func(F string) []string { return []string{"HOME=" + filepath.Join(F, "ws")} }
	return []escapeAct{
		{name: "another repository in the workspace: its config", grant: "write",
			sh: evilConfig + " >> lib/.git/config", effect: gitRan("ws/lib", "", "status", "--short")},
		{name: "another repository in the workspace: a hook", grant: "write",
			sh:     `printf '#!/bin/sh\ntouch %s/pwned\n' "$F" > lib/.git/hooks/pre-commit && chmod +x lib/.git/hooks/pre-commit`,
			effect: gitRan("ws/lib", "", "commit", "-q", "--allow-empty", "-m", "x")},
		{name: "a submodule's .git file, pointed at a planted git dir", grant: "write",
			sh:     evilGitDir + `mkgd evilgd && echo "gitdir: ../evilgd" > sub/.git`,
			effect: anyOf(gitRan("ws", "", "status", "--short"), gitRan("ws/sub", "", "status", "--short"))},
		{name: "a submodule's git dir: planted modules/sub/commondir", grant: "write",
			sh:     evilGitDir + `mkgd evilgd && echo ../../../evilgd > .git/modules/sub/commondir`,
			effect: anyOf(gitRan("ws/sub", "", "status", "--short"), gitRan("ws", "", "status", "--short"))},
		{name: "a submodule's git dir: its config", grant: "write",
			sh:     evilConfig + " >> .git/modules/sub/config",
			effect: gitRan("ws", "", "status", "--short")},
		{name: "a linked worktree's git dir: planted worktrees/wt/commondir", grant: "write",
			prep: func(t *testing.T, F string) {
				gitCmd(t, filepath.Join(F, "ws"), "-c", "safe.directory=*", "worktree", "add", "-q", filepath.Join(F, "ws", "wt"), "-b", "feature")
				ownLikeF(t, F)
			},
			sh:     evilGitDir + `mkgd evilgd && echo ../../../evilgd > .git/worktrees/wt/commondir`,
			effect: gitRan("ws/wt", "", "status", "--short")},
		{name: "a nested repository with core.fsmonitor, and a gitlink to it in the index", grant: "write",
			sh: `git init -q nest && git -C nest commit -q --allow-empty -m x && ` +
				`git -C nest config core.fsmonitor "touch $F/pwned; false" && ` +
				`git update-index --add --cacheinfo 160000,$(git -C nest rev-parse HEAD),nest`,
			effect: gitRan("ws", "", "status", "--short")},
		{name: "a planted rebase-merge with an exec line", grant: "write",
			sh: `H=$(git rev-parse HEAD) && mkdir .git/rebase-merge && cd .git/rebase-merge && echo refs/heads/main > head-name && ` +
				`echo $H > onto && echo $H > orig-head && touch interactive done && echo 0 > msgnum && echo 1 > end && ` +
				`printf 'exec touch %s/pwned\n' "$F" > git-rebase-todo`,
			effect: gitRan("ws", "", "rebase", "--continue")},
		{name: "a planted sequencer dir", grant: "write",
			sh:     `mkdir .git/sequencer && printf 'exec touch %s/pwned\n' "$F" > .git/sequencer/todo`,
			effect: appeared("ws/.git/sequencer")},
		{name: "a new submodule git dir in modules/", grant: "write",
			sh:     evilGitDir + `mkgd .git/modules/other`,
			effect: appeared("ws/.git/modules/other")},
		{name: "home is the workspace: ~/.config/git/config", grant: "write", env: wsHome,
			sh: `mkdir -p $HOME/.config/git && printf '[core]\n\tfsmonitor = "touch %s/pwned; false"\n' "$F" > $HOME/.config/git/config`,
			effect: func(F string, r result) string {
				return plainGit(F, filepath.Join(F, "ws"), filepath.Join(F, "ws"), "status", "--short")
			}},
	}
}

func TestGitProtectionReachesEveryRepository(t *testing.T) {
	requireABI(t, 3)
	base := reachFixture(t)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, gitReachActs())
		})
	}
}

// pyRan runs python outside wrun with home as HOME: a planted .pth file
// in the user site runs at its start.
func pyRan(home string) func(F string, r result) string {
	return func(F string, r result) string {
		cmd := exec.Command("/usr/bin/python3", "-c", "pass")
		cmd.Env = append(os.Environ(), "HOME="+filepath.Join(F, home))
		cmd.Run()
		if exists(filepath.Join(F, "pwned")) {
			return "a plain python3 ran the planted .pth file"
		}
		return ""
	}
}

func startupActs(base string) []escapeAct {
	wsHome := func(F string) []string { return []string{"HOME=" + filepath.Join(F, "ws")} }
	return []escapeAct{
		{name: "python user site .pth", grant: "write", env: wsHome,
			sh: `d=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && ` +
				`printf 'import os; os.system("touch %s/pwned")\n' "$F" > $d/evil.pth`,
			effect: pyRan("ws")},
		{name: "python usercustomize", grant: "write", env: wsHome,
			sh: `d=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && ` +
				`printf 'import os; os.system("touch %s/pwned")\n' "$F" > $d/usercustomize.py`,
			effect: pyRan("ws")},
		{name: "~/.ssh/config ProxyCommand", grant: "write", env: wsHome,
			sh:     `mkdir -p $HOME/.ssh && printf 'Host *\n\tProxyCommand touch %s/pwned\n' "$F" > $HOME/.ssh/config`,
			effect: appeared("ws/.ssh/config")},
		{name: "~/.config/go/env GOFLAGS=-toolexec", grant: "write", env: wsHome,
			sh: `mkdir -p $HOME/.config/go && echo "GOFLAGS=-toolexec=$F/evil" > $HOME/.config/go/env`,
			effect: func(F string, r result) string {
				// The go command starts a telemetry process that outlives it
				// and writes in the user's config directory: give it one of
				// its own with telemetry off, and name the planted env file.
				cfg, err := os.MkdirTemp("", "wrun-goenv-")
				if err != nil {
					return err.Error()
				}
				defer os.RemoveAll(cfg)
				os.MkdirAll(filepath.Join(cfg, "go", "telemetry"), 0o755)
				os.WriteFile(filepath.Join(cfg, "go", "telemetry", "mode"), []byte("off"), 0o644)
				cmd := exec.Command("go", "env", "GOFLAGS")
				cmd.Env = append(os.Environ(), "HOME="+filepath.Join(F, "ws"), "XDG_CONFIG_HOME="+cfg,
					"GOENV="+filepath.Join(F, "ws", ".config", "go", "env"), "GOFLAGS=")
				if out, _ := cmd.Output(); strings.Contains(string(out), "toolexec") {
					return "a plain `go env GOFLAGS` says " + strings.TrimSpace(string(out))
				}
				return ""
			}},
		{name: "~/.bashrc appended", grant: "write", env: wsHome,
			prep: func(t *testing.T, F string) {
				mustWrite(t, filepath.Join(F, "ws", ".bashrc"), "# rc\n")
				ownLikeF(t, F)
			},
			sh:     `echo "touch $F/pwned" >> $HOME/.bashrc`,
			effect: func(F string, r result) string { return changedFile(F, "ws/.bashrc", "# rc\n") }},
		{name: "~/.zshenv created", grant: "write", env: wsHome,
			sh: `echo "touch $F/pwned" > $HOME/.zshenv`, effect: appeared("ws/.zshenv")},
		{name: "~/.local/bin: a planted program", grant: "write", env: wsHome,
			sh: `mkdir -p $HOME/.local/bin && echo evil > $HOME/.local/bin/git`, effect: appeared("ws/.local/bin/git")},
		{name: "~/.vimrc created", grant: "write", env: wsHome,
			sh: `echo "silent !touch $F/pwned" > $HOME/.vimrc`, effect: appeared("ws/.vimrc")},
		{name: "a new dot directory of some tool", grant: "write", env: wsHome,
			sh: `mkdir $HOME/.sometool && echo evil > $HOME/.sometool/init`, effect: appeared("ws/.sometool")},
		{name: "~/.cargo/config.toml rustc-wrapper", grant: "write", env: wsHome,
			sh:     `mkdir -p $HOME/.cargo && printf '[build]\nrustc-wrapper = "%s/evil"\n' "$F" > $HOME/.cargo/config.toml`,
			effect: appeared("ws/.cargo/config.toml")},
		{name: "XDG_CONFIG_HOME inside the workspace", grant: "write",
			prep: func(t *testing.T, F string) {
				if err := os.MkdirAll(filepath.Join(F, "ws", "xdg"), 0o755); err != nil {
					t.Fatal(err)
				}
				ownLikeF(t, F)
			},
			env: func(F string) []string { return []string{"XDG_CONFIG_HOME=" + filepath.Join(F, "ws", "xdg")} },
			sh:  `mkdir -p $XDG_CONFIG_HOME/git && echo '[core]' > $XDG_CONFIG_HOME/git/config`, effect: appeared("ws/xdg/git")},
		{name: "a symlinked dot file replaced", grant: "write", env: wsHome,
			prep: func(t *testing.T, F string) {
				mustWrite(t, filepath.Join(F, "outside", "dotfiles", "profile"), "# profile\n")
				if err := os.Symlink(filepath.Join(F, "outside", "dotfiles", "profile"), filepath.Join(F, "ws", ".profile")); err != nil {
					t.Fatal(err)
				}
				ownLikeF(t, F)
			},
			sh: `rm -f $HOME/.profile && echo "touch $F/pwned" > $HOME/.profile`,
			effect: func(F string, r result) string {
				if t, err := os.Readlink(filepath.Join(F, "ws", ".profile")); err != nil || !strings.HasSuffix(t, "dotfiles/profile") {
					return "~/.profile is no longer the link to the dotfiles"
				}
				return ""
			}},
	}
}

func TestStartupFilesAreProtectedWhenHomeIsWritable(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			runActs(t, base, m, startupActs(base))
		})
	}
}

// TestKilledWrunIsCheckedByTheNextRun: wrun killed from outside (SIGKILL)
// makes no check after its run; the next wrun, under any grant, makes it
// before its own command starts.
func TestKilledWrunIsCheckedByTheNextRun(t *testing.T) {
	requireABI(t, 3)
	base := escapeFixture(t)
	for _, m := range []escapeMode{modeRoot, modeUser, modeNoMed} {
		t.Run(m.name, func(t *testing.T) {
			m.usable(t)
			F := freshCopy(t, base, m)
			o := escapeOpts(F, m)
			// A nested repository whose config runs a program (every mode
			// lets the child make one), and rebase state with an exec line
			// (carved rules already refuse a new entry in .git).
			plant := `git init -q src/nest && git -C src/nest config core.fsmonitor "touch $F/pwned; false" && ` +
				`H=$(git rev-parse HEAD) && (mkdir .git/rebase-merge && cd .git/rebase-merge && echo refs/heads/main > head-name && ` +
				`echo $H > onto && echo $H > orig-head && touch interactive done && echo 0 > msgnum && echo 1 > end && ` +
				`printf 'exec touch %s/pwned\n' "$F" > git-rebase-todo); touch $F/ws/src/planted && exec sleep 60`
			cmd := exec.Command(bins.wrun, wrunArgs(t, o, append(keepArgs(), "--grant", "write", "--", "sh", "-c", plant)...)...)
			cmd.Dir = o.dir
			cmd.Env = append(os.Environ(), o.env...)
			if m.cred != nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: m.cred}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			for i := 0; !exists(filepath.Join(F, "ws", "src", "planted")); i++ {
				if i > 200 {
					t.Fatal("the child did not plant within 10s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			rebase := exists(filepath.Join(F, "ws", ".git", "rebase-merge"))
			if !rebase && m.env == nil {
				t.Fatal("control: the planted rebase-merge is not there after wrun was killed")
			}
			if !exists(filepath.Join(F, "ws", "src", "nest", ".git")) {
				t.Fatal("control: the planted repository is not there after wrun was killed")
			}
			// The next run, under inspect, checks before its command runs:
			// the command sees no rebase-merge.
			r := wrun(t, o, "--grant", "inspect", "--", "sh", "-c", "test -e .git/rebase-merge && echo STILL-THERE; true")
			if strings.Contains(r.stdout, "STILL-THERE") || exists(filepath.Join(F, "ws", ".git", "rebase-merge")) {
				t.Errorf("the next wrun did not remove the rebase-merge a killed run left:\n%s", r)
			}
			if rebase && !strings.Contains(r.stderr, "rebase-merge") || !strings.Contains(r.stderr, "src/nest/.git") {
				t.Errorf("the next wrun should report what it removed:\n%s", r)
			}
			if e := plainGit(F, filepath.Join(F, "ws"), "", "rebase", "--continue"); e != "" {
				t.Error(e)
			}
			if e := plainGit(F, filepath.Join(F, "ws", "src", "nest"), "", "status"); e != "" {
				t.Error(e)
			}
		})
	}
}

// TestGitWorkStillWorksAcrossRepositories: under --grant write, commits in
// the top repository, a second one and a submodule still work.
func TestGitWorkStillWorksAcrossRepositories(t *testing.T) {
	requireABI(t, 3)
	modeRoot.usable(t)
	base := reachFixture(t)
	F := freshCopy(t, base, modeRoot)
	r := wrun(t, escapeOpts(F, modeRoot), "--grant", "write", "--", "sh", "-c",
		"echo a >> README && git commit -qam top && echo b >> lib/README && git -C lib commit -qam lib && "+
			"echo c >> sub/README && git -C sub commit -qam sub && git rebase -q HEAD~1 && git status --short")
	if r.code != 0 {
		t.Fatalf("git under write across repositories:\n%s", r)
	}
	for _, d := range []string{"ws", "ws/lib", "ws/sub"} {
		if n := strings.TrimSpace(gitCmd(t, filepath.Join(F, d), "log", "-1", "--format=%s")); n == "first" || n == "cargo" {
			t.Errorf("%s: no new commit (%s)", d, n)
		}
	}
}
