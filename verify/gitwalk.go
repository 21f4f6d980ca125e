package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The bounds of the search for repositories in a writable tree: how deep
// below the tree's root a working tree may lie, and how many directories
// are read in all. A search that reaches a bound says so (Found.Truncated):
// repositories beyond it are neither protected nor checked.
const (
	RepoSearchDepth = 8
	RepoSearchDirs  = 20000
	// gitDirDepth bounds the nesting of submodules (modules/a/modules/b).
	gitDirDepth = 6
)

// Found is what a search for repositories found.
type Found struct {
	// DotGits are the .git entries found (directories, files, links),
	// sorted; each names a working tree (or what claims to be one).
	DotGits []string
	// Repos are the repositories they name, where .git could be read.
	Repos []*Repo
	// Truncated is set when a bound stopped the search.
	Truncated bool
}

// FindRepos searches the trees below roots for git repositories as git
// finds them: .git entries (every repository, submodule checkout and
// linked worktree a writable tree holds) and directories git takes for a
// git directory whatever their name (IsGitDir: a bare repository, a
// separate git dir). It follows no symbolic link and does not descend
// into a git directory (GitDirs lists what lies there), within
// RepoSearchDepth and RepoSearchDirs.
func FindRepos(roots []string) Found {
	var f Found
	seen := map[string]bool{}
	dirs := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if dirs >= RepoSearchDirs {
			f.Truncated = true
			return
		}
		dirs++
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		if gitDirNames(ents) && IsGitDir(dir) {
			if !seen[dir] {
				seen[dir] = true
				f.DotGits = append(f.DotGits, dir)
				if r, err := BareRepo(dir); err == nil {
					f.Repos = append(f.Repos, r)
				}
			}
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.Name() == ".git" {
				if !seen[p] {
					seen[p] = true
					f.DotGits = append(f.DotGits, p)
					if r, err := RepoAt(dir); err == nil && r != nil {
						f.Repos = append(f.Repos, r)
					}
				}
				continue
			}
			if !e.IsDir() { // DirEntry.IsDir is false for a symbolic link
				continue
			}
			if depth >= RepoSearchDepth {
				f.Truncated = true
				continue
			}
			walk(p, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	slices.Sort(f.DotGits)
	return f
}

// gitDirNames reports whether a directory's entries have the names a git
// directory needs (HEAD, and objects and refs or a commondir file): only
// then is IsGitDir asked, so the search reads no file elsewhere.
func gitDirNames(ents []os.DirEntry) bool {
	var head, objects, refs, common bool
	for _, e := range ents {
		switch e.Name() {
		case "HEAD":
			head = true
		case "objects":
			objects = true
		case "refs":
			refs = true
		case "commondir":
			common = true
		}
	}
	return head && (objects && refs || common)
}

// GitDirs lists every git directory of the repository that git may read
// when working in it or recursing from it: its git dir, its common dir,
// the git dirs of its submodules (modules/**, nested too) and of its
// linked worktrees (worktrees/*), bounded in depth.
func (r *Repo) GitDirs() []string {
	out := []string{r.GitDir}
	if r.CommonDir != r.GitDir {
		out = append(out, r.CommonDir)
	}
	var walk func(common string, depth int)
	walk = func(common string, depth int) {
		if depth > gitDirDepth {
			return
		}
		for _, wt := range subdirs(filepath.Join(common, "worktrees")) {
			if isFile(filepath.Join(wt, "HEAD")) {
				out = append(out, wt)
			}
		}
		var mods func(dir string, d int)
		mods = func(dir string, d int) {
			if d > gitDirDepth {
				return
			}
			for _, m := range subdirs(dir) {
				if isFile(filepath.Join(m, "HEAD")) {
					out = append(out, m)
					walk(m, depth+1)
					continue
				}
				mods(m, d+1) // a submodule named a/b lives in modules/a/b
			}
		}
		mods(filepath.Join(common, "modules"), 0)
	}
	walk(r.CommonDir, 0)
	slices.Sort(out)
	return slices.Compact(out)
}

// subdirs lists the directories (not links to them) directly in dir.
func subdirs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func isFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// GitDirEntry is a name in a git directory that git reads and that can make
// it run a program, or read configuration, hooks or another repository.
type GitDirEntry struct {
	Name string
	Dir  bool
	Why  string
}

// GitDirProtected lists, for one git directory, what git reads that can
// make it run a program the repository's writer chose. Everything else
// in a git directory is what git's ordinary work writes (objects, refs,
// logs, the index, HEAD, ORIG_HEAD, FETCH_HEAD, COMMIT_EDITMSG, MERGE_*,
// packed-refs and their *.lock files) and names nothing git executes.
var GitDirProtected = []GitDirEntry{
	{"config", false, whyGitConfig},
	{"config.worktree", false, whyGitConfig},
	{"hooks", true, "git hooks: a planted hook runs at the next unsandboxed commit, merge or checkout"},
	{"commondir", false, "git's commondir file: it redirects where git reads config and hooks from"},
	{"gitdir", false, "a linked worktree's gitdir file: where git looks for the worktree"},
	{"info", true, "info/attributes and info/exclude: attributes choose filter and diff drivers"},
	{"branches", true, "old-style remote definitions: they choose the URL (and so the transport program) of a fetch"},
	{"remotes", true, "old-style remote definitions: they choose the URL (and so the transport program) of a fetch"},
	{"rebase-merge", true, "rebase state: an `exec` line in its todo list runs at the next `git rebase --continue`"},
	{"rebase-apply", true, "am/rebase state: its options and patches are replayed at the next `git am --continue` or `git rebase --continue`"},
	{"sequencer", true, "cherry-pick/revert state: replayed at the next `git cherry-pick --continue`"},
}

// GitDirListed are the directories of a git directory that hold other git
// directories: an entry that appears there during a run is a repository
// git may enter (a submodule's git dir is reused by `git submodule update`,
// a worktree's names its commondir), so it is removed after the run.
var GitDirListed = []string{"modules", "worktrees"}

// dotEntries lists the names in dir starting with a dot; with all, every
// name.
func dirNames(dir string, dotOnly bool) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !dotOnly || strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}
