package verify

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Guard is the check wrun makes after a run, for what no rule could stop
// the child from writing: paths that must not appear (a .git/commondir,
// rebase state, a new start-up file), new entries in directories where
// any new entry is dangerous (a gitdir's modules/ and worktrees/, the
// home directory's dot files), symbolic links that must keep their target,
// and new repositories in the writable trees whose metadata would make a
// plain git command run a program (a nested repository git status
// recurses into through a gitlink).
//
// Before the child starts, wrun writes the guard to a journal that no
// grant makes writable and holds a lock on it; after the run it checks,
// then removes the journal. A journal whose lock is free belongs to a run
// that ended without its check (wrun was killed): the next wrun makes the
// check, before its own child starts.
type Guard struct {
	// ID names the run (its private temp dir's base name).
	ID string `json:"id"`
	// Journal is the directory of the journals ("" keeps none).
	Journal string `json:"journal,omitempty"`
	// Absent must not exist after the run.
	Absent []string `json:"absent,omitempty"`
	// Lists are directories whose new entries are removed.
	Lists []GuardList `json:"lists,omitempty"`
	// Named are directories whose new entries of some names are removed
	// (a sitecustomize module or a .pth file beside a project's sources).
	// A journal field of its own: a wrun that does not know it ignores
	// it rather than removing every new entry there.
	Named []GuardNamed `json:"named,omitempty"`
	// Links must still be symbolic links to the same target.
	Links []GuardLink `json:"links,omitempty"`
	// Roots are searched for repositories that are not in Known.
	Roots []string `json:"roots,omitempty"`
	// Known are the .git entries that were there before the run.
	Known []string `json:"known,omitempty"`
	// Scratch are directories wrun makes empty for the run (they must not
	// exist before it) and removes after it with everything beneath them,
	// quietly: a build directory in the workspace that a later unsandboxed
	// build would trust. A journal field of its own: a wrun that does not
	// know it leaves them.
	Scratch []string `json:"scratch,omitempty"`
}

// GuardList is a directory whose entries may not grow during a run.
type GuardList struct {
	Dir     string   `json:"dir"`
	Before  []string `json:"before"`
	DotOnly bool     `json:"dot_only,omitempty"`
	// Keep are names that may appear (wrun creates them, or they are
	// writable by grant).
	Keep []string `json:"keep,omitempty"`
	Why  string   `json:"why"`
}

// GuardNamed is a directory in which no entry whose name matches one of
// Patterns (filepath.Match) may appear during a run.
type GuardNamed struct {
	Dir      string   `json:"dir"`
	Patterns []string `json:"patterns"`
	Before   []string `json:"before"`
	Why      string   `json:"why"`
}

// NewGuardNamed snapshots dir's entries matching patterns (a directory
// that does not exist yet has none: any that appears is removed).
func NewGuardNamed(dir string, patterns []string, why string) GuardNamed {
	return GuardNamed{Dir: dir, Patterns: patterns, Before: MatchingNames(dir, patterns), Why: why}
}

// MatchingNames lists the entries of dir whose names match a pattern.
func MatchingNames(dir string, patterns []string) []string {
	var out []string
	for _, n := range dirNames(dir, false) {
		if matchesAny(n, patterns) {
			out = append(out, n)
		}
	}
	return out
}

func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}

// GuardLink is a symbolic link that must keep its target.
type GuardLink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// NewGuardList snapshots dir's entries (only dot entries with dotOnly).
func NewGuardList(dir string, dotOnly bool, keep []string, why string) GuardList {
	return GuardList{Dir: dir, Before: dirNames(dir, dotOnly), DotOnly: dotOnly, Keep: keep, Why: why}
}

// Empty reports whether the guard checks nothing.
func (g *Guard) Empty() bool {
	return g == nil || len(g.Absent)+len(g.Lists)+len(g.Named)+len(g.Links)+len(g.Roots)+len(g.Scratch) == 0
}

// makeScratch makes each Scratch directory, its parent reached without
// following links; one that exists already is not the run's, and is
// dropped from the guard (not removed after the run) and reported.
func (g *Guard) makeScratch() []error {
	var errs []error
	kept := g.Scratch[:0]
	for _, d := range g.Scratch {
		if err := mkdirNoFollow(d); err != nil {
			errs = append(errs, fmt.Errorf("making %s for the run: %w (it appeared after the grant was computed: run again)", d, err))
			continue
		}
		kept = append(kept, d)
	}
	g.Scratch = kept
	return errs
}

// Finding is one thing a guard check changed.
type Finding struct {
	// Path is what was removed, restored or moved aside.
	Path string
	// What says what was done and why.
	What string
	// Changed is set when the path was removed, restored or moved aside
	// (clear for a check that could not be made).
	Changed bool
}

// Check neutralises what the run left that a later unsandboxed program
// would run: it removes paths that must not exist and new entries of the
// listed directories, restores links, and moves aside the .git of a new
// repository whose metadata runs programs.
func (g *Guard) Check() []Finding {
	var out []Finding
	for _, d := range g.Scratch {
		// Made for the run: removing it is no finding.
		if _, err := removeNoFollow(d); err != nil {
			out = append(out, Finding{d, "could not be removed after the run (a sandboxed build's outputs, which an unsandboxed build must not trust): " + err.Error(), false})
		}
	}
	for _, p := range g.Absent {
		removed, err := removeNoFollow(p)
		switch {
		case err != nil:
			out = append(out, Finding{p, "could not be removed: " + err.Error(), false})
		case removed:
			out = append(out, Finding{p, "removed: the command created it, and it must not exist", true})
		}
	}
	for _, l := range g.Lists {
		for _, n := range dirNames(l.Dir, l.DotOnly) {
			if slices.Contains(l.Before, n) || slices.Contains(l.Keep, n) {
				continue
			}
			p := filepath.Join(l.Dir, n)
			removed, err := removeNoFollow(p)
			switch {
			case err != nil:
				out = append(out, Finding{p, "could not be removed: " + err.Error(), false})
			case removed:
				out = append(out, Finding{p, "removed: the command created it (" + l.Why + ")", true})
			}
		}
	}
	for _, l := range g.Named {
		for _, n := range MatchingNames(l.Dir, l.Patterns) {
			if slices.Contains(l.Before, n) {
				continue
			}
			p := filepath.Join(l.Dir, n)
			removed, err := removeNoFollow(p)
			switch {
			case err != nil:
				out = append(out, Finding{p, "could not be removed: " + err.Error(), false})
			case removed:
				out = append(out, Finding{p, "removed: the command created it (" + l.Why + ")", true})
			}
		}
	}
	for _, l := range g.Links {
		if t, err := os.Readlink(l.Path); err == nil && t == l.Target {
			continue
		}
		ok, err := restoreLinkNoFollow(l.Path, l.Target)
		switch {
		case err != nil:
			out = append(out, Finding{l.Path, "could not be restored: " + err.Error(), false})
		case ok:
			out = append(out, Finding{l.Path, "restored as a link to " + l.Target + ": the command replaced it", true})
		}
	}
	if len(g.Roots) > 0 {
		f := FindRepos(g.Roots)
		for _, dg := range f.DotGits {
			if slices.Contains(g.Known, dg) {
				continue
			}
			why := UnsafeRepo(dg)
			if why == "" {
				continue
			}
			aside := dg + ".wrun-disabled-" + g.ID
			ok, err := renameNoFollow(dg, ".wrun-disabled-"+g.ID)
			if err != nil {
				out = append(out, Finding{dg, "could not be moved aside: " + err.Error(), false})
				continue
			}
			if !ok {
				continue // a link was planted on the way: not ours to move
			}
			out = append(out, Finding{dg, "moved aside to " + aside + ": a repository the command created, which " + why, true})
		}
	}
	return out
}

// UnsafeRepo says what in the repository whose .git entry is dotGit would
// make git run a program the repository's writer chose, when git works in
// it or recurses into it (git status into a submodule, checkout
// --recurse-submodules): "" when nothing does. It is decided by construction,
// not by a list of bad keys: the configuration may hold only the keys git
// init, git clone and git submodule write (safeConfigKeys), hooks only the
// samples, and there may be no rebase, am or cherry-pick state.
func UnsafeRepo(dotGit string) string {
	fi, err := os.Lstat(dotGit)
	if err != nil {
		return ""
	}
	gitDir := dotGit
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return "is reached through a symbolic link (.git)"
	case fi.Mode().IsRegular():
		gd, err := readGitdirFile(dotGit)
		if err != nil {
			return "" // git does not take it for a repository
		}
		gitDir = absFrom(filepath.Dir(dotGit), gd)
	case !fi.IsDir():
		return ""
	}
	return unsafeGitDir(gitDir, 0)
}

func unsafeGitDir(gitDir string, depth int) string {
	if depth > gitDirDepth {
		return "nests submodules too deep to check"
	}
	common, _ := readCommonDir(gitDir)
	dirs := slices.Compact([]string{gitDir, common})
	for _, d := range dirs {
		for _, name := range []string{"config", "config.worktree"} {
			if k := unsafeConfigKey(filepath.Join(d, name)); k != "" {
				return "sets " + k + " in " + filepath.Join(d, name)
			}
		}
		for _, name := range []string{"rebase-merge", "rebase-apply", "sequencer", "branches", "remotes"} {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				return "has " + filepath.Join(d, name)
			}
		}
		for _, h := range dirNames(filepath.Join(d, "hooks"), false) {
			if !strings.HasSuffix(h, ".sample") {
				return "has the hook " + filepath.Join(d, "hooks", h)
			}
		}
		if fi, err := os.Lstat(filepath.Join(d, "hooks")); err == nil && !fi.IsDir() {
			return "has a hooks entry that is not a directory"
		}
	}
	var bad string
	var mods func(dir string, d int)
	mods = func(dir string, d int) {
		for _, m := range subdirs(dir) {
			if bad != "" || d > gitDirDepth {
				return
			}
			if isFile(filepath.Join(m, "HEAD")) {
				bad = unsafeGitDir(m, depth+1)
				continue
			}
			mods(m, d+1)
		}
	}
	mods(filepath.Join(common, "modules"), 0)
	for _, wt := range subdirs(filepath.Join(common, "worktrees")) {
		if bad == "" {
			if k := unsafeConfigKey(filepath.Join(wt, "config.worktree")); k != "" {
				bad = "sets " + k + " in " + filepath.Join(wt, "config.worktree")
			}
		}
	}
	return bad
}

// safeConfigKeys are the configuration keys (section.key, or
// section.*.key with a subsection) that git init, git clone, git
// submodule and git worktree write and that name no program: every other
// key makes a new repository unsafe. Programs git runs are chosen by
// keys not here (core.fsmonitor, core.hooksPath, core.pager, core.editor,
// core.sshCommand, alias.*, filter.*, diff.*, merge.*, credential.*,
// remote.*.uploadpack, include.path, ...).
var safeConfigKeys = []string{
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
	"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
	"core.worktree", "core.sparsecheckout", "core.sparsecheckoutcone",
	"remote.*.url", "remote.*.fetch", "remote.*.pushurl", "remote.*.tagopt", "remote.*.mirror",
	"remote.*.promisor", "remote.*.partialclonefilter",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase",
	"submodule.*.url", "submodule.*.active", "submodule.active",
	"extensions.objectformat", "extensions.worktreeconfig", "extensions.partialclone", "extensions.refstorage",
	"init.defaultbranch", "user.name", "user.email", "index.version", "pull.rebase",
	"gc.auto", "maintenance.auto", "fetch.writecommitgraph", "clone.defaultremotename",
}

// unsafeConfigKey returns the first key of a git config file that is not
// in safeConfigKeys, or a description of a line it cannot read ("" when
// the file is missing or holds only safe keys). It reads every line as git
// may: a line it does not understand counts as unsafe.
func unsafeConfigKey(path string) string {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		return "an unreadable file"
	}
	defer f.Close()
	section, sub := "", false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	cont := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cont { // a continued value: its text is a value, not a key
			cont = strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`)
			continue
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			var rest string
			var ok bool
			section, sub, rest, ok = parseSectionHeader(line)
			if !ok {
				return "a line git may read differently: " + strconvQuote(line)
			}
			if line = strings.TrimSpace(rest); line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		name := line
		if i := strings.IndexAny(line, "=#; \t"); i >= 0 {
			name = line[:i]
		}
		if !validConfigName(name) || section == "" {
			return "a line git may read differently: " + strconvQuote(line)
		}
		key := section + "." + strings.ToLower(name)
		if sub {
			key = section + ".*." + strings.ToLower(name)
		}
		if !slices.Contains(safeConfigKeys, key) {
			return key
		}
		cont = strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`)
	}
	if sc.Err() != nil {
		return "a file wrun cannot read to the end"
	}
	return ""
}

// parseSectionHeader reads "[section]", "[section.sub]" or
// `[section "sub"]` at the start of line: the section (lower case),
// whether it has a subsection, and what follows the header.
func parseSectionHeader(line string) (string, bool, string, bool) {
	i := 1
	for i < len(line) && (isAlnum(line[i]) || line[i] == '-' || line[i] == '.') {
		i++
	}
	name := strings.ToLower(line[1:i])
	if name == "" {
		return "", false, "", false
	}
	sub := false
	if dot := strings.IndexByte(name, '.'); dot >= 0 {
		name, sub = name[:dot], true
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i < len(line) && line[i] == '"' && !sub {
		sub = true
		i++
		for i < len(line) && line[i] != '"' {
			if line[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(line) {
			return "", false, "", false
		}
		i++
	}
	if i >= len(line) || line[i] != ']' {
		return "", false, "", false
	}
	return name, sub, line[i+1:], true
}

func validConfigName(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

func strconvQuote(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// writeJournal records g in its journal directory and returns the open
// file, locked: a journal whose lock is free belongs to a run that ended
// without its check. It is written under a name settleStaleGuards skips,
// locked, and renamed into place, so no other run ever sees it unlocked
// or half written. It is not fsynced: it must outlast a killed wrun, not
// the machine, and the kernel has it once write returns (an fsync made
// every run wait for the disk).
func (g *Guard) writeJournal() (*os.File, error) {
	if g.Journal == "" {
		return nil, nil
	}
	if err := os.MkdirAll(g.Journal, 0o700); err != nil {
		return nil, err
	}
	tmp := filepath.Join(g.Journal, "."+g.ID+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		os.Remove(tmp)
		f.Close()
		return nil, err
	}
	if err := lockFile(f, false); err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(g)
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, filepath.Join(g.Journal, g.ID+".json")); err != nil {
		return fail(err)
	}
	return f, nil
}

// settleStaleGuards makes the checks of earlier runs that ended without them:
// journals in dir whose lock is free.
func settleStaleGuards(dir, self string) []Finding {
	var out []Finding
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".new") && e.Type().IsRegular() {
			// A journal its run never published (killed while writing
			// it): nothing ran under it. Left alone while locked.
			if f, err := os.Open(p); err == nil {
				if lockFile(f, true) == nil {
					os.Remove(p)
				}
				f.Close()
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") || name == self+".json" || !e.Type().IsRegular() {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if lockFile(f, true) != nil {
			f.Close() // the run is still going
			continue
		}
		var g Guard
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &g)
		}
		if err != nil {
			out = append(out, Finding{p, "an unreadable journal of an earlier run was removed: " + err.Error(), false})
		} else {
			for _, fd := range g.Check() {
				fd.What = "an earlier run that ended without its checks (wrun killed?) left it; " + fd.What
				out = append(out, fd)
			}
		}
		os.Remove(p)
		f.Close()
	}
	return out
}

// lockFile takes an exclusive lock on f, without waiting when nowait.
func lockFile(f *os.File, nowait bool) error {
	how := syscall.LOCK_EX
	if nowait {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}
