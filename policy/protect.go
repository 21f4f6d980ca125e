package policy

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/wrun-dev/wrun/verify"
)

// Why each kind of path is protected: the attack it stops.
const (
	whyGitConfig  = "git config: a child that writes it (core.fsmonitor, core.hooksPath, aliases, filters) runs code at the next unsandboxed git command"
	whyGitHooks   = "git hooks: a planted hook runs at the next unsandboxed commit, merge or checkout"
	whyGitDir     = "the repository directory itself: renaming or replacing it would swap in a config and hooks of the child's choosing"
	whyDotGitFile = "the .git file of a linked worktree: rewriting it would point git at a repository of the child's choosing"
	whyCommondir  = "git's commondir file: it redirects where git reads config and hooks from"
	whyRC         = "start-up file of a shell, editor, tool or session: it runs code at the next unsandboxed start"
	whyWrunConfig = "wrun's own config: a child must not choose the grant of later runs"
)

// ProtectedPattern is a kind of path that is protected wherever a writable
// rule reaches it: relative to a repository's git dir (Under "gitdir"),
// the home directory ("home"), or a file name anywhere ("any").
type ProtectedPattern struct {
	Under string
	Rel   string
	Why   string
}

// homeStartupFiles run code at the next unsandboxed start of a shell,
// editor, tool or desktop session.
var homeStartupFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish", ".gitconfig", ".config/git",
	".cargo/config.toml", ".cargo/config", ".cargo/bin", ".local/bin", ".npmrc",
	".vimrc", ".vim", ".config/nvim", ".emacs", ".emacs.d", ".config/autostart",
	".config/systemd/user", ".config/environment.d", ".pam_environment",
	".xprofile", ".xinitrc", ".xsession"}

// ProtectedPatterns lists every kind of path policy protects, with the
// attack each stops. escalate reads it to recognise a protected path
// wherever it lies; there is no second list.
func ProtectedPatterns() []ProtectedPattern {
	out := []ProtectedPattern{
		{"gitdir", "config", whyGitConfig},
		{"gitdir", "config.worktree", whyGitConfig},
		{"gitdir", "hooks", whyGitHooks},
		{"gitdir", "commondir", whyCommondir},
	}
	for _, rc := range homeStartupFiles {
		out = append(out, ProtectedPattern{"home", rc, whyRC})
	}
	return append(out, ProtectedPattern{"home", ".config/wrun", whyWrunConfig}, ProtectedPattern{"any", ".wrun.toml", whyWrunConfig})
}

// protectedPaths lists the paths inside writable rules that must stay
// unwritable, with the reason.
func protectedPaths(p *Policy, h Host) []Protected {
	var writable []string
	for _, r := range p.Rules {
		if r.Access&(MakeReg|MakeDir) != 0 {
			writable = append(writable, r.Path)
		}
	}
	within := func(path string) string {
		for _, w := range writable {
			if Within(path, w) {
				return w
			}
		}
		return ""
	}
	var out []Protected
	seen := map[string]bool{}
	add := func(path string, dir bool, why string, mod func(*Protected)) {
		path = filepath.Clean(path)
		w := within(path)
		if w == "" || seen[path] {
			return
		}
		seen[path] = true
		pr := Protected{Path: path, Dir: dir, Exists: exists(path), Within: w, Why: why}
		if mod != nil {
			mod(&pr)
		}
		out = append(out, pr)
	}

	// Every repository whose files a writable rule reaches: the one the
	// workspace is in, and any at the top of a writable path.
	var repos []*verify.Repo
	if r, err := verify.FindRepo(h.Workdir); err == nil && r != nil {
		repos = append(repos, r)
	}
	for _, w := range writable {
		if r, err := verify.RepoAt(w); err == nil && r != nil {
			repos = append(repos, r)
		}
	}
	for _, r := range repos {
		if r.DotGitIsFile {
			add(r.DotGit, false, whyDotGitFile, nil)
		}
		add(r.GitDir, true, whyGitDir, func(pr *Protected) { pr.Pin = true })
		for _, dir := range slices.Compact([]string{r.GitDir, r.CommonDir}) {
			add(filepath.Join(dir, "config"), false, whyGitConfig, nil)
			add(filepath.Join(dir, "config.worktree"), false, whyGitConfig, nil)
			add(filepath.Join(dir, "hooks"), true, whyGitHooks, func(pr *Protected) {
				if !pr.Exists {
					pr.Create = CreateDir
				}
			})
			add(filepath.Join(dir, "commondir"), false, whyCommondir, nil)
		}
		for _, m := range submoduleGitDirs(filepath.Join(r.CommonDir, "modules")) {
			add(filepath.Join(m, "config"), false, whyGitConfig, nil)
			add(filepath.Join(m, "hooks"), true, whyGitHooks, nil)
		}
		if hp := r.HooksPath(h.Home); hp != "" {
			add(hp, true, whyGitHooks+" (core.hooksPath)", nil)
		}
		add(filepath.Join(r.WorkTree, ".wrun.toml"), false, whyWrunConfig, nil)
	}
	if h.Home != "" {
		for _, rc := range homeStartupFiles {
			add(filepath.Join(h.Home, rc), false, whyRC, func(pr *Protected) {
				if fi, err := os.Lstat(pr.Path); err == nil {
					pr.Dir = fi.IsDir()
				}
			})
		}
		add(filepath.Join(h.Home, ".config", "wrun"), true, whyWrunConfig, nil)
	}
	add(filepath.Join(h.Workdir, ".wrun.toml"), false, whyWrunConfig, nil)
	return out
}

// submoduleGitDirs finds submodule repositories under a modules directory
// (nested submodules included), bounded in depth.
func submoduleGitDirs(modules string) []string {
	var out []string
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > 6 {
			return
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			if _, err := os.Stat(filepath.Join(sub, "HEAD")); err == nil {
				out = append(out, sub)
				walk(filepath.Join(sub, "modules"), depth+1)
				continue
			}
			walk(sub, depth+1)
		}
	}
	walk(modules, 0)
	return out
}
