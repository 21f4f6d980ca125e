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
	// GitDir is the repository directory for this worktree (HEAD, index).
	GitDir string
	// CommonDir holds what all worktrees share: objects, refs, config, hooks.
	// It equals GitDir for a normal clone.
	CommonDir string
}

// FindRepo looks for a git repository at dir or above it. It returns
// (nil, nil) when there is none. Symlinks in the result are resolved.
func FindRepo(dir string) (*Repo, error) {
	for d := dir; ; {
		r, err := RepoAt(d)
		if err != nil || r != nil {
			return r, err
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
	r.CommonDir = r.GitDir
	if b, err := os.ReadFile(filepath.Join(r.GitDir, "commondir")); err == nil {
		cd := strings.TrimSpace(string(b))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(r.GitDir, cd)
		}
		if r.CommonDir, err = filepath.EvalSymlinks(cd); err != nil {
			return nil, fmt.Errorf("resolving common dir of %s: %w", dir, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(r.GitDir, "commondir"), err)
	}
	return r, nil
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
