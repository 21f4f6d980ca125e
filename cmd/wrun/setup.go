package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wrun-dev/wrun/config"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/receipt"
	"github.com/wrun-dev/wrun/roster"
	"github.com/wrun-dev/wrun/run"
)

// homeDir is the invoking user's home directory: $HOME, else the
// account's.
func homeDir() string {
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return filepath.Clean(u.HomeDir)
	}
	return ""
}

// wrunPaths are where this user's config, receipts and roster lie.
func wrunPaths() (config.Paths, error) {
	home := homeDir()
	p := config.PathsFrom(os.Getenv, home)
	if !filepath.IsAbs(p.State) || !filepath.IsAbs(p.UserConfig) {
		return p, errors.New("no home directory (HOME unset, no account entry) and XDG_CONFIG_HOME/XDG_STATE_HOME not set: wrun cannot place its config and receipts")
	}
	return p, nil
}

// workdirOf is the workspace a run would use.
func workdirOf(flag string) string {
	if flag != "" {
		return flag
	}
	wd, _ := os.Getwd()
	return wd
}

// nested reports whether this wrun runs inside another's sandbox, where
// the receipts and the roster are hidden: the outer run records it.
func nested() bool {
	_, ok := envlist.Lookup(os.Environ(), grant.EnvGrant)
	return ok
}

// settings are a run's settings after the config files and the flags.
type settings struct {
	paths config.Paths
	eff   config.Effective
	req   config.Request
}

// loadSettings reads the config files for workdir and applies the flags.
func loadSettings(workdir string, f config.Flags) (*settings, error) {
	paths, err := wrunPaths()
	if err != nil {
		return nil, err
	}
	if nested() {
		// Inside another wrun's sandbox the user's config is hidden, and
		// the environment naming it is the child's to set: the enclosing
		// run's settings bound this one (WRUN_GRANT, WRUN_CEILING).
		paths.UserConfig = ""
	}
	eff, err := config.Load(paths, workdir)
	if err != nil {
		return nil, err
	}
	req, err := eff.Resolve(f)
	if err != nil {
		return nil, err
	}
	return &settings{paths: paths, eff: eff, req: req}, nil
}

// apply puts the settings into the run's configuration; pf's lists keep
// the command line's additions.
func (s *settings) apply(cfg *run.Config, receiptFile string) {
	cfg.Grant = s.req.Grant.V
	cfg.Ceiling, cfg.CeilingSource = s.req.Ceiling.V, s.req.CeilingPlace
	home := s.paths.Home
	for _, p := range s.eff.AllowRead.V {
		cfg.AllowRead = append(cfg.AllowRead, config.ExpandHome(p, home))
	}
	for _, p := range s.eff.Hide.V {
		cfg.Hide = append(cfg.Hide, config.ExpandHome(p, home))
	}
	cfg.KeepEnv = append(cfg.KeepEnv, s.eff.KeepEnv.V...)
	cfg.Records = []string{s.paths.State, s.paths.Roster}
	if receiptFile != "" {
		cfg.Records = append(cfg.Records, receiptFile)
	}
	if s.req.ConductorDir != "" {
		cfg.AllowWrite = append(cfg.AllowWrite, s.req.ConductorDir)
	}
}

// conductorCheck refuses the conductor role inside a git repository: a
// shell there defeats every path scope (git config and hooks, build
// scripts). It makes the conductor's directory.
func conductorCheck(s *settings, workdir string) error {
	if s.req.ConductorDir == "" {
		return nil
	}
	if repo := gitRepoOf(workdir); repo != "" {
		return fmt.Errorf("role %s: no shell inside a git repository (%s is in %s): a shell there defeats every path scope; delegate the work to a worker instead: wrun --role worker -- COMMAND",
			config.Conductor, workdir, repo)
	}
	dir := config.ExpandHome(s.req.ConductorDir, s.paths.Home)
	s.req.ConductorDir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("role %s: making its directory: %w", config.Conductor, err)
	}
	return nil
}

// gitRepoOf returns the directory holding the .git of the repository dir
// lies in, or "".
func gitRepoOf(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// writeScopes are the directories a run holds for writing, for the
// conflict guard: the workspace under files=write and each --allow-write
// path given on the command line. verify's private build outputs and
// full's caches are not: their tools lock them themselves.
func writeScopes(g grant.Grant, workdir string, allowWrite []string) []roster.Scope {
	var out []roster.Scope
	// A path that does not resolve is refused by run.Run, in its own
	// words, before anything starts.
	if g.Files == grant.FilesWrite {
		if s, err := roster.NewScope(workdir, "the workspace (files=write)"); err == nil {
			out = append(out, s)
		}
	}
	for _, p := range allowWrite {
		if s, err := roster.NewScope(p, "--allow-write"); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// plainGrant is a grant in a few words: "write (the workspace is
// writable...)".
func plainGrant(spec string) string {
	g, err := grant.Parse(spec)
	if err != nil {
		return spec
	}
	return g.Compact()
}

// since says how long ago t was, roughly.
func since(t time.Time) string {
	d := time.Since(t).Round(time.Second)
	return d.String()
}

// words joins with ", ", or says none.
func words(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// canonicalPath is p absolute with every symbolic link resolved.
func canonicalPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

func slicesSort(s []string) { sort.Strings(s) }

// ensureStateDir makes wrun's state directory (the receipts, the roster
// without a runtime directory) when what it lies in is there: the
// directory above $XDG_STATE_HOME, else the home directory. wrun never
// creates a home directory ($HOME=/nonexistent stays so).
func ensureStateDir(p config.Paths) error {
	base := p.Home
	if v := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(v) {
		base = filepath.Dir(filepath.Clean(v))
	}
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not there, and wrun does not create it (set XDG_STATE_HOME to record runs elsewhere)", base)
	}
	return receipt.EnsureDir(p.State)
}
