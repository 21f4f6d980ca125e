package verify

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Repo is a git repository as found from a directory.
type Repo struct {
	// WorkTree is the top of the working tree (the directory holding .git).
	WorkTree string
	// DotGit is the path of the .git entry in WorkTree.
	DotGit string
	// DotGitIsFile is true for linked worktrees and submodule checkouts,
	// where .git is a file "gitdir: PATH".
	DotGitIsFile bool
	// Bare is set for a git directory found as git finds one without a
	// .git entry: a bare repository, a separate git dir, one GIT_DIR
	// names. WorkTree and DotGit are then the git directory itself.
	Bare bool
	// GitDir is the repository directory for this worktree (HEAD, index).
	GitDir string
	// CommonDir holds what all worktrees share: objects, refs, config, hooks.
	// It equals GitDir for a normal clone.
	CommonDir string
}

// FindRepo looks for a git repository at dir or above it, as git's
// discovery does: at each level a .git entry, then the directory itself as
// a git directory (a bare repository). It returns (nil, nil) when there is
// none. Symlinks in the result are resolved.
func FindRepo(dir string) (*Repo, error) {
	for d := dir; ; {
		r, err := RepoAt(d)
		if err != nil || r != nil {
			return r, err
		}
		if IsGitDir(d) {
			return BareRepo(d)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, nil
		}
		d = parent
	}
}

// RepoAt returns the repository whose working tree top is exactly dir, or
// (nil, nil) when dir has no .git entry.
func RepoAt(dir string) (*Repo, error) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking for a git repository: %w", err)
	}
	r := &Repo{WorkTree: dir, DotGit: dotGit}
	switch {
	case fi.IsDir():
		r.GitDir = dotGit
	case fi.Mode().IsRegular():
		r.DotGitIsFile = true
		gd, err := readGitdirFile(dotGit)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		r.GitDir = gd
	default:
		return nil, fmt.Errorf("%s is neither a directory nor a gitdir file", dotGit)
	}
	if r.GitDir, err = filepath.EvalSymlinks(r.GitDir); err != nil {
		return nil, fmt.Errorf("resolving git dir of %s: %w", dir, err)
	}
	return r, r.findCommonDir()
}

// BareRepo returns the repository whose git directory is gitDir itself
// (a bare repository, a separate git dir, one GIT_DIR names), as git
// takes it when it finds it (IsGitDir).
func BareRepo(gitDir string) (*Repo, error) {
	gd, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return nil, fmt.Errorf("resolving git dir %s: %w", gitDir, err)
	}
	r := &Repo{WorkTree: gitDir, DotGit: gitDir, Bare: true, GitDir: gd}
	return r, r.findCommonDir()
}

// findCommonDir sets CommonDir from the git dir's commondir file, with
// its links resolved.
func (r *Repo) findCommonDir() error {
	cd, err := readCommonDir(r.GitDir)
	if err != nil || cd == r.GitDir {
		r.CommonDir = r.GitDir
		return err
	}
	if r.CommonDir, err = filepath.EvalSymlinks(cd); err != nil {
		return fmt.Errorf("resolving common dir of %s: %w", r.GitDir, err)
	}
	return nil
}

// readCommonDir is the common dir git uses for gitDir: the one its
// commondir file names (relative to gitDir when not absolute), or gitDir
// itself when it has none. It is the one reader of commondir files;
// links in the result are not resolved.
func readCommonDir(gitDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if errors.Is(err, fs.ErrNotExist) {
		return gitDir, nil
	}
	if err != nil {
		return gitDir, fmt.Errorf("reading %s: %w", filepath.Join(gitDir, "commondir"), err)
	}
	return absFrom(gitDir, strings.TrimSpace(string(b))), nil
}

// IsGitDir reports whether git takes dir for a git directory when it
// meets it (its discovery, GIT_DIR), as git decides it
// (setup.c:is_git_directory): HEAD is a valid head (a symbolic link into
// refs/, "ref: refs/...", or an object name), and objects/ and refs/ are
// directories, in dir or in the common dir its commondir file names. The
// name of dir plays no part: a bare repository "x.git", a separate git
// dir, a linked worktree's or submodule's git dir all count.
func IsGitDir(dir string) bool {
	if !validHead(filepath.Join(dir, "HEAD")) {
		return false
	}
	common, _ := readCommonDir(dir)
	for _, n := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(common, n)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// validHead is git's validate_headref: a symbolic link whose target starts
// with "refs/", or a file holding "ref: refs/..." or an object name.
func validHead(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		t, err := os.Readlink(path)
		return err == nil && strings.HasPrefix(t, "refs/")
	}
	if !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var buf [256]byte
	n, _ := f.Read(buf[:])
	return validHeadContent(string(buf[:n]))
}

// validHeadContent is what git accepts in a HEAD file.
func validHeadContent(s string) bool {
	if rest, ok := strings.CutPrefix(s, "ref:"); ok {
		return strings.HasPrefix(strings.TrimLeft(rest, " \t"), "refs/")
	}
	line, _, _ := strings.Cut(s, "\n")
	if len(line) != 40 && len(line) != 64 {
		return false
	}
	for _, c := range line {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func readGitdirFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s does not start with \"gitdir:\"", path)
	}
	return strings.TrimSpace(gd), nil
}

// HooksPath returns the value of core.hooksPath as set in the repository's
// config or the user's global config files, resolved against the working
// tree, or "" when unset. It reads the files directly (no git process) and
// does not follow [include] directives.
func (r *Repo) HooksPath(home string) string {
	files := []string{filepath.Join(r.CommonDir, "config")}
	if home != "" {
		files = append([]string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")}, files...)
	}
	val := ""
	for _, f := range files {
		if v, ok := gitConfigValue(f, "core", "hookspath"); ok {
			val = v // later files override earlier ones
		}
	}
	if val == "" {
		return ""
	}
	if strings.HasPrefix(val, "~/") && home != "" {
		val = filepath.Join(home, val[2:])
	}
	if !filepath.IsAbs(val) {
		// Hooks run in the working tree's top, in a bare repository in
		// the git dir.
		val = filepath.Join(r.WorkTree, val)
	}
	return filepath.Clean(val)
}

// gitConfigValue finds section.key (case-insensitive, no subsection) in a
// git config file. It understands enough of the format for simple values.
func gitConfigValue(path, section, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var cur, val string
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			cur = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if cur != section {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ToLower(strings.TrimSpace(k)) != key {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.Contains(v[:i], `"`) {
			v = strings.TrimSpace(v[:i])
		}
		val, found = strings.Trim(v, `"`), true
	}
	return val, found
}
