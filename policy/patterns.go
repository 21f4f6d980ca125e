package policy

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/verify"
)

// protectedPattern is a kind of path that is protected wherever a writable
// rule reaches it: relative to a repository's git dir (Under "gitdir"),
// the home directory ("home"), any dot entry directly in the home
// directory ("home-dot", Rel empty), the workspace root ("workdir"), a
// file name anywhere ("any"), or an existing file (not a directory) of
// that name anywhere ("file": the .git file of a linked worktree or
// submodule).
type protectedPattern struct {
	Under string
	Rel   string
	Why   string
}

// protectedPatterns lists every kind of path policy protects, with the
// attack each stops, for ProtectedAt and ProtectedIn.
func protectedPatterns() []protectedPattern {
	var out []protectedPattern
	for _, e := range verify.GitDirProtected {
		out = append(out, protectedPattern{"gitdir", e.Name, e.Why})
	}
	for _, n := range verify.GitDirListed {
		out = append(out, protectedPattern{"gitdir", n, whyGitListed})
	}
	for _, rc := range homeStartupFiles {
		out = append(out, protectedPattern{"home", rc, whyRC})
	}
	out = append(out, protectedPattern{"home", ".config/wrun", whyWrunConfig})
	for _, d := range homeCreated {
		out = append(out, protectedPattern{"home", d, whyHomeDot})
	}
	out = append(out, protectedPattern{"home-dot", "", whyHomeDot}, protectedPattern{"any", ".wrun.toml", whyWrunConfig})
	for _, c := range workdirConfig {
		out = append(out, protectedPattern{"workdir", c.name, whyWrunConfig})
	}
	return append(out, protectedPattern{"file", ".git", whyDotGitFile})
}

// ProtectedAt recognizes the paths policy protects wherever a grant makes
// them writable (a repository's config and hooks, the user's start-up
// files, wrun's own config), for a write with rights acc to path, clean
// and absolute, in workspace workdir of a user whose home is home ("" if
// unknown). It returns the protected path and why, or "" and "". A
// policy's own protected paths are those its writable rules reach
// (Policy.Protected); this is what a wider grant would meet. exists says
// whether a path exists; nil takes an existing dot entry of the home to
// be missing.
func ProtectedAt(path string, acc Access, workdir, home string, exists func(string) bool) (string, string) {
	for _, pp := range protectedPatterns() {
		switch pp.Under {
		case "home":
			if home == "" {
				continue
			}
			base := filepath.Join(home, pp.Rel)
			if Within(path, base) {
				return base, pp.Why
			}
		case "home-dot":
			if home == "" || !Within(path, home) || path == home {
				continue
			}
			// The entry itself only: beneath it may lie a cache that a
			// grant makes writable (the policy's own list covers the rest).
			// A new one is removed after the run, not protected.
			if filepath.Dir(path) == home && strings.HasPrefix(filepath.Base(path), ".") && exists != nil && exists(path) {
				return path, pp.Why
			}
		case "workdir":
			base := filepath.Join(workdir, pp.Rel)
			if Within(path, base) {
				return base, pp.Why
			}
		case "any":
			if filepath.Base(path) == pp.Rel {
				return path, pp.Why
			}
		case "file":
			// Written as a file (opened for writing, truncated): an
			// existing file, not a directory of that name.
			if filepath.Base(path) == pp.Rel && acc&(WriteFile|Truncate) != 0 {
				return path, pp.Why
			}
		case "gitdir":
			gds := gitDirsOf(path)
			for i, gd := range gds {
				base := filepath.Join(gd, pp.Rel)
				if !Within(path, base) {
					continue
				}
				if i+1 < len(gds) && Within(gds[i+1], base) && slices.Contains(verify.GitDirListed, pp.Rel) {
					// Inside a worktree's or submodule's git dir listed
					// there: that git dir's own patterns protect it
					// (files=write opens a linked worktree's own).
					continue
				}
				return base, pp.Why
			}
		}
	}
	return "", ""
}

// gitDirsOf returns the repository directories path may lie in, judging by
// its name alone: <x>/.git, a linked worktree's <x>/.git/worktrees/<name>,
// and a submodule's <x>/.git/modules/<name>[/modules/<name>...].
func gitDirsOf(path string) []string {
	const dotGit = string(filepath.Separator) + ".git"
	i := strings.LastIndex(path+string(filepath.Separator), dotGit+string(filepath.Separator))
	if i < 0 {
		return nil
	}
	gd := path[:i+len(dotGit)]
	out := []string{gd}
	rest := strings.Split(strings.TrimPrefix(path[len(gd):], string(filepath.Separator)), string(filepath.Separator))
	switch {
	case len(rest) >= 3 && rest[0] == "worktrees":
		out = append(out, filepath.Join(gd, "worktrees", rest[1]))
	case len(rest) >= 3 && rest[0] == "modules":
		dir := filepath.Join(gd, "modules", rest[1])
		out = append(out, dir)
		for j := 2; j+2 < len(rest) && rest[j] == "modules"; j += 2 {
			dir = filepath.Join(dir, "modules", rest[j+1])
			out = append(out, dir)
		}
	}
	return out
}

// ProtectedIn lists, as holes withholding the write rights, the protected
// paths policy would add inside root were it made writable, for workspace
// workdir and home directory home ("" if unknown): the workspace
// repository's config and hooks, wrun's config in the workspace, the
// user's start-up files, where they exist (exists).
func ProtectedIn(root, workdir, home string, exists func(string) bool) []Hole {
	var out []Hole
	patterns := protectedPatterns()
	add := func(path, why string) {
		if Within(path, root) && exists(path) {
			out = append(out, Hole{Path: path, Withheld: Write, Why: why})
		}
	}
	for d := workdir; ; d = filepath.Dir(d) {
		if gd := filepath.Join(d, ".git"); exists(gd) {
			for _, pp := range patterns {
				if pp.Under == "gitdir" {
					add(filepath.Join(gd, pp.Rel), pp.Why)
				}
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	for _, pp := range patterns {
		if pp.Under == "workdir" {
			add(filepath.Join(workdir, pp.Rel), pp.Why)
		}
	}
	if home != "" {
		for _, pp := range patterns {
			if pp.Under == "home" {
				add(filepath.Join(home, pp.Rel), pp.Why)
			}
		}
	}
	return out
}
