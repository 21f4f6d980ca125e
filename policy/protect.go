package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/verify"
)

// Why each kind of path is protected: the attack it stops.
const (
	whyGitDir     = "the repository directory itself: renaming or replacing it would swap in a config and hooks of the child's choosing"
	whyEnvGitDir  = "the git directory the environment names: git takes its config and hooks from there at the next unsandboxed command, so the child must not make one there"
	whyDotGitFile = "the .git file of a linked worktree or submodule: rewriting it would point git at a repository of the child's choosing"
	whyRC         = "start-up file of a shell, editor, tool or session: it runs code at the next unsandboxed start"
	whyHomeDot    = "a dot file or directory of the home directory: programs load their configuration (and with it code: shell rc files, editor plugins, tool settings that name programs) from there at their next unsandboxed start"
	whyEnvDir     = "a start-up location named by an environment variable: programs load configuration or code from it at their next unsandboxed start"
	whyPathDir    = "a directory on PATH: a program planted there runs instead of the one the user means at the next unsandboxed command"
	whyWrunConfig = "wrun's own config: a child must not choose the grant of later runs"
	whyRecords    = "wrun's records of runs (receipts, the roster of live runs): the user's, not the child's"
	whyTempRoot   = "the private temp dirs of other runs of this user: each run reads its own only"
	whyJournal    = "wrun's record of the checks it makes after a run: a child that could remove it would escape the check when wrun is killed"
)

// homeStartupFiles are start-up files and directories the home directory
// may not have yet: created during a run, they are removed after it.
// Those that exist are protected with every other dot entry of the home
// directory; .config and .local are created (empty) when missing so that
// they can be protected whole.
var homeStartupFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".inputrc",
	".gitconfig", ".cargo/config.toml", ".cargo/config", ".cargo/bin", ".cargo/env", ".npmrc", ".yarnrc", ".yarnrc.yml",
	".vimrc", ".exrc", ".vim", ".gvimrc", ".emacs", ".emacs.el", ".emacs.d", ".pythonrc", ".pypirc",
	".pam_environment", ".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".Xresources",
	".ssh", ".gnupg", ".docker", ".kube", ".rustup", ".mozilla", ".vscode", ".vscode-server",
	".tmux.conf", ".screenrc", ".wgetrc", ".curlrc", ".netrc", ".gemrc", ".irbrc", ".pryrc", ".Rprofile",
	".perldlrc", ".sqliterc", ".psqlrc", ".mysql", ".guile", ".sbclrc", ".lesskey", ".dir_colors"}

// workdirConfig are wrun's own files in a workspace (and in each work
// tree of a repository it holds): .wrun.toml, which narrows the grant of
// later runs there, and .wrun/, which holds the repository's tool labels
// (.wrun/tools.toml, which narrow what a harness may give a child).
// Removing or rewriting either would widen what a later run allows.
var workdirConfig = []struct {
	name string
	dir  bool
}{{".wrun.toml", false}, {".wrun", true}}

// homeCreated are created when missing, so that they can be protected
// whole: programs find their user configuration (XDG_CONFIG_HOME), user
// executables, Python's user site (.pth files, usercustomize),
// completions and plugins (XDG_DATA_HOME) there.
var homeCreated = []string{".config", ".local"}

// startupEnv are the variables that move a location programs load
// configuration or code from at start.
var startupEnv = []struct {
	name string
	dir  bool
}{
	{"XDG_CONFIG_HOME", true}, {"XDG_DATA_HOME", true}, {"XDG_STATE_HOME", true}, {"ZDOTDIR", true},
	{"PYTHONUSERBASE", true}, {"CARGO_HOME", true}, {"RUSTUP_HOME", true}, {"GNUPGHOME", true},
	{"DOCKER_CONFIG", true}, {"GIT_CONFIG_GLOBAL", false}, {"GOENV", false}, {"NPM_CONFIG_USERCONFIG", false},
	{"BASH_ENV", false}, {"ENV", false}, {"PYTHONSTARTUP", false}, {"INPUTRC", false}, {"KUBECONFIG", false},
}

const whyGitListed = "git directories of submodules and linked worktrees: one that appears during a run is removed after it (git submodule update reuses it, its commondir points anywhere)"

// protector collects the protected paths of one policy and the check
// after the run.
type protector struct {
	writable []string // rules the child may create entries in
	rules    []Rule   // those rules
	out      []Protected
	seen     map[string]bool
	named    map[string]bool // directories whose names codeNames guards
	guard    verify.Guard
	keepHome []string
	// conflicts are start-up locations the grant also makes writable on
	// purpose: the run is refused, naming each.
	conflicts []string
}

func (pt *protector) within(path string) string {
	for _, w := range pt.writable {
		if Within(path, w) {
			return w
		}
	}
	return ""
}

// holdsWritable reports whether a writable rule lies at or below path.
func (pt *protector) holdsWritable(path string) bool {
	for _, w := range pt.writable {
		if Within(w, path) {
			return true
		}
	}
	return false
}

func (pt *protector) add(path string, dir bool, why string, mod func(*Protected)) {
	path = filepath.Clean(path)
	w := pt.within(path)
	if w == "" || pt.seen[path] {
		return
	}
	pt.seen[path] = true
	pr := Protected{Path: path, Dir: dir, Exists: exists(path), Within: w, Why: why}
	if fi, err := os.Lstat(path); err == nil {
		pr.Dir = fi.IsDir()
	}
	if mod != nil {
		mod(&pr)
	}
	pt.out = append(pt.out, pr)
}

// protectTree protects path, or when a writable rule lies within it (a
// cache the grant makes writable), each of its entries but those holding
// such a rule, recursively. A symbolic link cannot be protected in place:
// its target is (when writable), and the link must keep that target.
func (pt *protector) protectTree(path, why string, mod func(*Protected)) {
	path = filepath.Clean(path)
	if pt.within(path) == "" {
		return
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		if t, err := os.Readlink(path); err == nil {
			pt.guard.Links = append(pt.guard.Links, verify.GuardLink{Path: path, Target: t})
		}
		if real, err := filepath.EvalSymlinks(path); err == nil && real != path && !pt.holdsWritable(real) {
			pt.add(real, false, why+" (where "+path+" points)", nil)
		}
	case !pt.holdsWritable(path):
		pt.add(path, false, why, mod)
	case err == nil && fi.IsDir():
		for _, w := range pt.writable {
			if w == path {
				return // the grant makes it writable: a cache, the workspace
			}
		}
		ents, _ := os.ReadDir(path)
		for _, e := range ents {
			pt.protectTree(filepath.Join(path, e.Name()), why, nil)
		}
	}
}

// protectedPaths lists the paths inside writable rules that must stay
// unwritable, with the reason, and the check to make after the run. It
// fails when a start-up location is also writable on purpose (a build
// output on PATH): nothing can be both.
func protectedPaths(p *Policy, h Host, repo *verify.Repo) ([]Protected, verify.Guard, error) {
	pt := &protector{seen: map[string]bool{}, named: map[string]bool{}}
	var roots []string
	for _, r := range p.Rules {
		if r.Access&(MakeReg|MakeDir) == 0 {
			continue
		}
		pt.writable = append(pt.writable, r.Path)
		pt.rules = append(pt.rules, r)
		// Repositories are searched for in the trees the user made
		// writable (the workspace, --allow-write), not in caches, the
		// private temp dir or git plumbing.
		if (r.Source == "grant" || r.Source == "--allow-write") && r.Path != h.TempDir {
			roots = append(roots, r.Path)
		}
	}
	if h.RunID != "" {
		pt.guard.ID = h.RunID
	} else if h.TempDir != "" {
		pt.guard.ID = filepath.Base(h.TempDir)
	}

	pt.protectGit(h, roots, p, repo)
	pt.protectStartup(h)
	pt.protectWrunConfig(h.Workdir)
	pt.startupCode(h)
	if len(pt.conflicts) > 0 {
		return nil, verify.Guard{}, fmt.Errorf("refusing to run: %s; take it out of that variable for this run, or use a grant that does not write it", strings.Join(pt.conflicts, "; "))
	}

	for _, pr := range pt.out {
		if !pr.Exists && pr.Create == CreateNone {
			pt.guard.Absent = append(pt.guard.Absent, pr.Path)
		}
	}
	return pt.out, pt.guard, nil
}

// protectGit protects, in every repository a writable tree holds or the
// workspace lies in, found as git finds one (a .git entry, or a directory
// git takes for a git directory whatever its name: a bare repository, a
// separate git dir, the one GIT_DIR names), what git reads that can make
// it run a program: in each git directory (the repository's, its common
// dir, every submodule's and linked worktree's) the entries of
// verify.GitDirProtected, and the .git files that name them. What git's ordinary work writes (objects,
// refs, logs, the index, HEAD, ...) stays writable.
func (pt *protector) protectGit(h Host, roots []string, p *Policy, workspace *verify.Repo) {
	found := verify.FindRepos(roots)
	if found.Truncated {
		p.Notes = append(p.Notes, "git: the search for repositories in the writable trees stopped at its bound (depth 8, 20000 directories): repositories beyond it are neither protected nor checked after the run")
	}
	repos := found.Repos
	if r := workspace; r != nil {
		repos = append([]*verify.Repo{r}, repos...)
		if !slices.Contains(found.DotGits, r.DotGit) {
			pt.guard.Known = append(pt.guard.Known, r.DotGit)
		}
	}
	pt.guard.Known = append(pt.guard.Known, found.DotGits...)
	if len(roots) > 0 {
		pt.guard.Roots = roots
	}
	// The git directories the user's environment names: git works there
	// at the next unsandboxed command, wherever the working directory is.
	for _, v := range []string{"GIT_DIR", "GIT_COMMON_DIR"} {
		gd, _ := envlist.Lookup(h.Env, v)
		if gd == "" {
			continue
		}
		gd = absFrom(h.Workdir, gd)
		if pt.within(gd) == "" {
			continue
		}
		if verify.IsGitDir(gd) || v == "GIT_COMMON_DIR" && exists(filepath.Join(gd, "config")) {
			if r, err := verify.BareRepo(gd); err == nil {
				repos = append(repos, r)
				continue
			}
		}
		// Not (yet) a git directory: the child must not make it one.
		if !exists(gd) {
			pt.add(gd, true, whyEnvGitDir+" ($"+v+")", nil)
			continue
		}
		pt.add(filepath.Join(gd, "HEAD"), false, whyEnvGitDir+" ($"+v+")", nil)
		for _, e := range verify.GitDirProtected {
			pt.add(filepath.Join(gd, e.Name), e.Dir, e.Why+" ($"+v+")", nil)
		}
	}
	for _, r := range repos {
		if r.DotGitIsFile {
			pt.add(r.DotGit, false, whyDotGitFile, nil)
		}
		if pt.within(r.GitDir) == "" && pt.within(r.CommonDir) == "" && !pt.holdsWritable(r.GitDir) && !pt.holdsWritable(r.CommonDir) {
			// Nothing of its git dirs is writable (they all lie in the
			// common dir or are the git dir): none is listed.
			if hp := r.HooksPath(h.Home); hp != "" {
				pt.add(hp, true, verify.GitDirProtected[2].Why+" (core.hooksPath)", nil)
			}
			continue
		}
		for _, gd := range r.GitDirs() {
			if pt.within(gd) == "" {
				continue
			}
			pt.add(gd, true, whyGitDir, func(pr *Protected) { pr.Pin = true })
			_, err := os.Lstat(filepath.Join(gd, "commondir"))
			common := err != nil
			for _, e := range verify.GitDirProtected {
				pt.add(filepath.Join(gd, e.Name), e.Dir, e.Why, func(pr *Protected) {
					if !pr.Exists && e.Name == "hooks" && common {
						pr.Create = CreateDir
					}
				})
			}
			for _, n := range verify.GitDirListed {
				dir := filepath.Join(gd, n)
				if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
					pt.guard.Lists = append(pt.guard.Lists, verify.NewGuardList(dir, false, nil, whyGitListed))
				} else {
					pt.add(dir, true, whyGitListed, nil)
				}
			}
		}
		if hp := r.HooksPath(h.Home); hp != "" {
			pt.add(hp, true, verify.GitDirProtected[2].Why+" (core.hooksPath)", nil)
		}
		if !r.Bare {
			pt.protectWrunConfig(r.WorkTree)
		}
	}
}

// protectWrunConfig protects wrun's own files in the work tree dir
// (workdirConfig); one that is missing may not be created (it is removed
// after the run).
func (pt *protector) protectWrunConfig(dir string) {
	for _, c := range workdirConfig {
		pt.add(filepath.Join(dir, c.name), c.dir, whyWrunConfig, nil)
	}
}

// absFrom makes p absolute from dir.
func absFrom(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// protectStartup protects what programs load when they start, wherever a
// writable rule reaches it: every dot entry of the home directory (not
// only the files of known programs: the convention is that a dot entry of
// the home directory is some program's configuration or state), .config
// and .local whole (created when missing), the locations variables such
// as XDG_CONFIG_HOME, ZDOTDIR, PYTHONUSERBASE or GIT_CONFIG_GLOBAL name
// (the directories on PATH and other code loaded at every start:
// startupCode). A dot entry of the home directory that
// appears during the run is removed after it. What a grant makes writable
// on purpose (the caches of shell=full, the workspace) stays writable.
func (pt *protector) protectStartup(h Host) {
	getenv := func(name string) string {
		v, _ := envlist.Lookup(h.Env, name)
		if !filepath.IsAbs(v) {
			return ""
		}
		return filepath.Clean(v)
	}
	// The journal of the checks after the run lies in wrun's state
	// directory ($XDG_STATE_HOME/wrun, else ~/.local/state/wrun), made
	// when missing if the directory above it (or the home directory) is
	// there.
	state, above := getenv("XDG_STATE_HOME"), ""
	if state != "" {
		above = filepath.Dir(state)
	} else if h.Home != "" {
		state, above = filepath.Join(h.Home, ".local", "state"), h.Home
	}
	// A nested wrun (WRUN_GRANT set by the enclosing one) keeps none: the
	// enclosing run protects the state directory from it, and its own
	// checks after the run cover what the nested run wrote.
	if state != "" && h.TempDir != "" && getenv("WRUN_GRANT") == "" {
		if fi, err := os.Stat(above); err == nil && fi.IsDir() {
			pt.guard.Journal = filepath.Join(state, "wrun", "guard")
		}
	}
	if home := h.Home; home != "" && pt.within(home) != "" {
		ents, _ := os.ReadDir(home)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				why := whyHomeDot
				if slices.Contains(homeStartupFiles, e.Name()) {
					why = whyRC
				}
				pt.protectTree(filepath.Join(home, e.Name()), why, nil)
			}
			if pt.holdsWritable(filepath.Join(home, e.Name())) {
				pt.keepHome = append(pt.keepHome, e.Name())
			}
		}
		for _, d := range homeCreated {
			path := filepath.Join(home, d)
			if !exists(path) && !pt.holdsWritable(path) {
				pt.add(path, true, whyHomeDot, func(pr *Protected) { pr.Create = CreateDir })
				pt.keepHome = append(pt.keepHome, d)
			}
		}
		for _, rc := range homeStartupFiles {
			path := filepath.Join(home, rc)
			// One that exists is protected above, as a dot entry.
			if !exists(path) && !pt.holdsWritable(path) {
				pt.add(path, false, whyRC, nil)
			}
		}
		pt.guard.Lists = append(pt.guard.Lists, verify.NewGuardList(home, true, pt.keepHome,
			"a new dot entry of the home directory: some program's configuration or start-up file"))
	}
	for _, v := range startupEnv {
		path := getenv(v.name)
		if path == "" || pt.within(path) == "" {
			continue
		}
		if !exists(path) {
			pt.add(path, v.dir, whyEnvDir+" ($"+v.name+")", func(pr *Protected) {
				if v.dir {
					pr.Create = CreateDir
				}
			})
			continue
		}
		pt.protectTree(path, whyEnvDir+" ($"+v.name+")", nil)
	}
	if j := pt.guard.Journal; j != "" && !slices.ContainsFunc(pt.out, func(pr Protected) bool { return pr.Dir && Within(j, pr.Path) }) {
		pt.add(filepath.Dir(j), true, whyJournal, func(pr *Protected) { pr.Create = CreateDir })
	}
}
