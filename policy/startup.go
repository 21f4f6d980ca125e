package policy

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/verify"
)

// Code an ordinary program loads at every start from directories the
// user's environment names. Code the user runs on purpose (a script, a
// module imported by name) is the user's choice; what is loaded implicitly
// at every start is not, and a child that could plant it there escapes at
// the user's next plain command. The locations are derived from the
// environment wrun was given (the one the user's next command runs with),
// as the programs derive them, and only where a writable rule reaches
// them: nothing is read for the others, so a launch whose writable trees
// hold none of them pays nothing.

// Why each kind of location is protected.
const (
	whyLibDir      = "a directory on LD_LIBRARY_PATH: the dynamic linker loads shared libraries from it into every program the user starts"
	whyPreload     = "a library LD_PRELOAD names: the dynamic linker loads it into every program the user starts"
	whyGitExec     = "git's exec path (GIT_EXEC_PATH): git runs its commands (git-*) from there"
	whyGitTemplate = "git's template directory (GIT_TEMPLATE_DIR): git init and git clone copy its hooks into every new repository"
	whyNodePath    = "a directory on NODE_PATH: node resolves require() of every program through it"
	whyNpmGlobal   = "the global node_modules of the npm prefix: npm itself and the globally installed tools run from it"
	whyPyStdlib    = "the standard library of a Python interpreter on PATH: every start of it imports from here (site, os, encodings, ...)"
	whyPyCustomize = "a sitecustomize or usercustomize module where Python looks at every start (PYTHONPATH, a site directory): it runs before any program"
	whyPyPth       = "a .pth file in the site directory of a Python interpreter on PATH: its import lines run at every start of that interpreter"
)

// Names Python imports or executes at every start from the directories of
// sys.path as site.py builds it (a module of that name in any form: .py,
// .pyc, an extension module, a package) and, in a site directory, from
// every .pth file.
var (
	pyCustomize = []string{"sitecustomize*", "usercustomize*"}
	pySite      = []string{"sitecustomize*", "usercustomize*", "*.pth"}
)

// codeDir is a directory whose whole content programs load at start:
// what names it ("on PATH"), and the attack its protection stops.
type codeDir struct {
	path, what, why string
}

// startupCode protects the locations of code loaded at every start that
// the environment names and a writable rule reaches: whole directories
// (LD_LIBRARY_PATH, GIT_EXEC_PATH, GIT_TEMPLATE_DIR, NODE_PATH, the npm
// prefix's lib/node_modules, the standard library of a Python interpreter
// on PATH, and PATH itself), files (LD_PRELOAD), and names (sitecustomize
// and usercustomize in each PYTHONPATH entry, .pth files in the site
// directories of the Python interpreters on PATH). A whole directory that
// the grant also makes writable on purpose (a build output, a cache, the
// workspace itself) cannot be both: that is a conflict, named in the
// error, and the run is refused.
func (pt *protector) startupCode(h Host) {
	getenv := func(name string) string {
		v, _ := envlist.Lookup(h.Env, name)
		return v
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return ""
	}
	var dirs []codeDir
	path := filepath.SplitList(getenv("PATH"))
	for _, d := range path {
		if d = abs(d); d != "" {
			dirs = append(dirs, codeDir{d, "on PATH", whyPathDir})
		}
	}
	for _, d := range filepath.SplitList(getenv("LD_LIBRARY_PATH")) {
		if d = abs(d); d != "" {
			dirs = append(dirs, codeDir{d, "on LD_LIBRARY_PATH", whyLibDir})
		}
	}
	if d := abs(getenv("GIT_EXEC_PATH")); d != "" {
		dirs = append(dirs, codeDir{d, "GIT_EXEC_PATH", whyGitExec})
	}
	if d := abs(getenv("GIT_TEMPLATE_DIR")); d != "" {
		dirs = append(dirs, codeDir{d, "GIT_TEMPLATE_DIR", whyGitTemplate})
	}
	for _, d := range filepath.SplitList(getenv("NODE_PATH")) {
		if d = abs(d); d != "" {
			dirs = append(dirs, codeDir{d, "on NODE_PATH", whyNodePath})
		}
	}
	for _, prefix := range pt.npmPrefixes(h, getenv, path) {
		dirs = append(dirs, codeDir{filepath.Join(prefix, "lib", "node_modules"), "the npm prefix's lib/node_modules", whyNpmGlobal})
	}
	// Where a Python on PATH loads from (prefix/lib*) is looked at only
	// when a writable rule reaches it (the private temp dir aside: it
	// goes with the run).
	reaches := func(prefix string) bool {
		for _, w := range pt.writable {
			if w == h.TempDir {
				continue
			}
			if Within(prefix, w) {
				return true
			}
			for _, lib := range []string{"lib", "lib64", "local/lib"} {
				if Within(w, filepath.Join(prefix, lib)) {
					return true
				}
			}
		}
		return false
	}
	var pyDirs, siteDirs []string
	for _, d := range path {
		if d = abs(d); d == "" || !reaches(filepath.Dir(d)) {
			continue
		}
		stdlib, site := pythonDirs(d)
		for _, s := range stdlib {
			dirs = append(dirs, codeDir{s, "the standard library of the Python in " + d, whyPyStdlib})
		}
		for _, s := range site {
			if pt.within(s) != "" {
				siteDirs = append(siteDirs, s)
			}
		}
	}
	for _, e := range filepath.SplitList(getenv("PYTHONPATH")) {
		// A relative entry (or an empty one: the current directory) is
		// taken from where the user's next python most likely starts.
		pyDirs = append(pyDirs, absFrom(h.Workdir, e))
	}
	for _, s := range siteDirs {
		pyDirs = append(pyDirs, pthPaths(s)...)
	}

	for _, d := range dirs {
		pt.codeDir(d)
	}
	for _, f := range strings.FieldsFunc(getenv("LD_PRELOAD"), func(r rune) bool { return r == ' ' || r == ':' }) {
		if f = abs(f); f != "" && pt.within(f) != "" {
			pt.add(f, false, whyPreload, nil)
		}
	}
	for _, s := range siteDirs {
		pt.codeNames(s, pySite, whyPyPth)
	}
	for _, d := range pyDirs {
		pt.codeNames(d, pyCustomize, whyPyCustomize)
	}
}

// codeDir protects a directory whose whole content programs load, or
// names the conflict when the grant also writes it on purpose.
func (pt *protector) codeDir(d codeDir) {
	if pt.within(d.path) == "" {
		return // not writable: nothing to protect
	}
	for _, w := range pt.rules {
		switch {
		case w.Path == d.path:
			pt.conflict(d, w, "the grant makes it writable")
			return
		case w.Path != d.path && Within(w.Path, d.path):
			pt.conflict(d, w, "the grant makes "+w.Path+" inside it writable")
			return
		case buildOutput(w) && Within(d.path, w.Path):
			pt.conflict(d, w, "it lies in "+w.Path+", which the grant makes writable")
			return
		}
	}
	pt.protectTree(d.path, d.why, nil)
}

// buildOutput reports whether r makes a build output or a cache writable:
// places the tools of the grant write, which a protection inside them
// would break.
func buildOutput(r Rule) bool {
	return strings.HasPrefix(r.Source, "verify:") || strings.HasPrefix(r.Source, "full:")
}

func (pt *protector) conflict(d codeDir, w Rule, how string) {
	msg := fmt.Sprintf("%s is %s, and %s (%s): code the command planted there would run at your next unsandboxed command",
		d.path, d.what, how, w.Why)
	if !slices.Contains(pt.conflicts, msg) {
		pt.conflicts = append(pt.conflicts, msg)
	}
}

// codeNames protects, in dir, the entries whose names match patterns, and
// has any new one removed after the run (in dir and in its __pycache__,
// where a compiled sitecustomize is found beside its source).
func (pt *protector) codeNames(dir string, patterns []string, why string) {
	if pt.within(dir) == "" || pt.named[dir] {
		return
	}
	pt.named[dir] = true
	for _, d := range []string{dir, filepath.Join(dir, "__pycache__")} {
		for _, n := range verify.MatchingNames(d, patterns) {
			pt.protectTree(filepath.Join(d, n), why, nil)
		}
		pt.guard.Named = append(pt.guard.Named, verify.NewGuardNamed(d, patterns, why))
	}
}

// pythonDirs returns, for a directory on PATH holding a Python
// interpreter, the standard library directories (prefix/lib/pythonX.Y, for
// an interpreter installed there; a virtual environment has none of its
// own) and the site directories (site-packages, Debian's dist-packages) of
// its prefix, computed as the interpreter computes them from its prefix,
// without running it.
func pythonDirs(bin string) (stdlib, site []string) {
	if !exists(filepath.Join(bin, "python3")) && !exists(filepath.Join(bin, "python")) {
		return nil, nil
	}
	prefix := filepath.Dir(bin)
	venv := exists(filepath.Join(prefix, "pyvenv.cfg"))
	for _, lib := range []string{"lib", "lib64", "local/lib"} {
		ents, err := os.ReadDir(filepath.Join(prefix, lib))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "python") {
				continue
			}
			dir := filepath.Join(prefix, lib, e.Name())
			if !venv && lib != "local/lib" && e.Name() != "python3" {
				stdlib = append(stdlib, dir)
			}
			for _, s := range []string{"site-packages", "dist-packages"} {
				if p := filepath.Join(dir, s); exists(p) {
					site = append(site, p)
				}
			}
		}
	}
	return stdlib, site
}

// pthPaths returns the directories the .pth files of a site directory add
// to Python's path (their lines that are not comments or imports),
// relative to the site directory: a sitecustomize there runs at every
// start too (an editable install adds the project's sources this way).
func pthPaths(site string) []string {
	var out []string
	for _, n := range verify.MatchingNames(site, []string{"*.pth"}) {
		f, err := os.Open(filepath.Join(site, n))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || strings.HasPrefix(line, "import ") || strings.HasPrefix(line, "import\t") {
				continue
			}
			out = append(out, absFrom(site, line))
		}
		f.Close()
	}
	return out
}

// npmPrefixes returns the npm prefixes whose lib/node_modules npm and the
// global tools run from: the one npm's configuration sets (npm_config_prefix
// in the environment, else prefix in ~/.npmrc), else the install prefix
// of each node on PATH (npm's default).
func (pt *protector) npmPrefixes(h Host, getenv func(string) string, path []string) []string {
	for _, v := range []string{"npm_config_prefix", "NPM_CONFIG_PREFIX"} {
		if p := getenv(v); filepath.IsAbs(p) {
			return []string{filepath.Clean(p)}
		}
	}
	rc := getenv("NPM_CONFIG_USERCONFIG")
	if rc == "" && h.Home != "" {
		rc = filepath.Join(h.Home, ".npmrc")
	}
	if p := npmrcPrefix(rc); p != "" {
		return []string{p}
	}
	var out []string
	for _, d := range path {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		// Only where it matters (writable) is the disk asked.
		if prefix := filepath.Dir(d); pt.within(filepath.Join(prefix, "lib", "node_modules")) != "" && exists(filepath.Join(d, "node")) {
			out = append(out, prefix)
		}
	}
	return out
}

// npmrcPrefix reads prefix=... from an npmrc file ("" if none).
func npmrcPrefix(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.TrimSpace(k) == "prefix" {
			if v = strings.TrimSpace(v); filepath.IsAbs(v) {
				return filepath.Clean(v)
			}
		}
	}
	return ""
}
