package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/verify"
)

// The home directory holds the user's secrets under names no list keeps up
// with (database passwords, cloud CLI tokens, shell history, ...), so it is
// hidden whole, and the child gets back only what builds and toolchains
// need to read: the places below, each located as its tool locates it,
// and the directories on PATH. Outside the home these get rules of their
// own too (a GOPATH in /srv, a toolchain on PATH in /work), wherever the
// system's readable directories do not already hold them.

// homeRead is one place in the home directory the child may read.
type homeRead struct {
	// path returns the place ("" when it is unknown or switched off).
	path func(l homeLocator) []string
	why  string
	// hide are paths inside it that stay hidden (relative), with why.
	hide []homeHide
}

type homeHide struct{ rel, why string }

// homeLocator finds the tools' places for one home directory.
type homeLocator struct {
	home   string
	getenv func(string) string
	dirs   verify.ToolDirs
}

// xdg returns the XDG base directory named by env, else home/def.
func (l homeLocator) xdg(env, def string) string {
	if v := l.getenv(env); filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	return filepath.Join(l.home, def)
}

// envOr returns env's value when it is an absolute path, else home/def.
func (l homeLocator) envOr(env, def string) []string {
	if v := l.getenv(env); filepath.IsAbs(v) {
		return []string{filepath.Clean(v)}
	}
	if def == "" {
		return nil
	}
	return []string{filepath.Join(l.home, def)}
}

func one(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// homeReads is what the child reads in the home directory, and why. Every
// other entry of the home directory is hidden: its names can be listed,
// not read.
var homeReads = []homeRead{
	{path: func(l homeLocator) []string { return one(l.dirs.CargoHome) },
		why: "cargo: its config, registry and git caches, installed binaries (CARGO_HOME)",
		hide: []homeHide{
			{"credentials.toml", "cargo's registry token: only `cargo publish` needs it"},
			{"credentials", "cargo's registry token: only `cargo publish` needs it"},
		}},
	{path: func(l homeLocator) []string { return l.envOr("RUSTUP_HOME", ".rustup") },
		why: "rustup: the Rust toolchains (RUSTUP_HOME)"},
	{path: func(l homeLocator) []string {
		out := one(l.dirs.GoModCache)
		if gp := l.getenv("GOPATH"); gp != "" {
			for _, p := range filepath.SplitList(gp) {
				if filepath.IsAbs(p) {
					out = append(out, filepath.Clean(p))
				}
			}
		} else {
			out = append(out, filepath.Join(l.home, "go"))
		}
		return out
	}, why: "go: GOPATH (the module cache, installed binaries)"},
	{path: func(l homeLocator) []string { return one(l.dirs.GoCache) },
		why: "go: the build cache (GOCACHE)"},
	{path: func(l homeLocator) []string {
		if v := l.getenv("GOENV"); filepath.IsAbs(v) {
			return []string{filepath.Clean(v)}
		}
		return []string{filepath.Join(l.xdg("XDG_CONFIG_HOME", ".config"), "go")}
	}, why: "go: its settings (go env -w)"},
	{path: func(l homeLocator) []string { return l.envOr("npm_config_cache", ".npm") },
		why: "npm: the package cache"},
	{path: func(l homeLocator) []string { return l.envOr("NVM_DIR", ".nvm") },
		why: "nvm: the node versions it installed"},
	{path: func(l homeLocator) []string { return []string{filepath.Join(l.home, ".gitconfig")} },
		why: "git: the user's identity and settings (git stops when it cannot read them); secrets belong to credential helpers, which stay hidden"},
	{path: func(l homeLocator) []string {
		return []string{filepath.Join(l.xdg("XDG_CONFIG_HOME", ".config"), "git")}
	}, why: "git: the user's settings, ignore and attributes files",
		hide: []homeHide{{"credentials", "git's stored passwords (credential-store helper)"}}},
	{path: func(l homeLocator) []string { return []string{filepath.Join(l.home, ".local", "lib")} },
		why: "Python: packages installed with pip --user"},
}

// homeHidden says why the home directory is hidden, and what is left out
// of the readable places on purpose.
const homeHidden = "the home directory: only the places listed as readable are (it holds secrets under names no list keeps up with: tokens, passwords, keys, shell history)"

// homePolicy returns the rules and holes for one home directory: the home
// hidden, the places toolchains need readable, and the targets of symbolic
// links in the home that lead out of it. have are paths other rules grant
// (the workspace, the temp dir): a home that is one of them is hidden entry
// by entry.
func homePolicy(home string, h Host, have []string) ([]Rule, []Hole) {
	getenv := func(name string) string {
		v, _ := envlist.Lookup(h.Env, name)
		return v
	}
	l := homeLocator{home: home, getenv: getenv,
		dirs: verify.UserToolDirs(verify.Input{Workdir: h.Workdir, Home: home, Getenv: getenv})}
	var rules []Rule
	var holes []Hole
	allow := func(path, why string) {
		path = filepath.Clean(path)
		if path == home || !exists(path) {
			return // missing: nothing to read
		}
		if !Within(path, home) && (inRoots(path, h.Roots) || shared(path, h.homes())) {
			// Readable already (a system directory), or a directory of
			// everyone's (/tmp, /home): a variable naming it opens nothing.
			return
		}
		rules = append(rules, Rule{Path: path, Access: ReadExec, Source: "home", Why: why, Optional: true})
	}
	for _, r := range homeReads {
		for _, p := range r.path(l) {
			allow(p, r.why)
			for _, hd := range r.hide {
				hp := filepath.Join(p, hd.rel)
				// A missing file holds no secret, and carving its hole
				// would take create rights from the directory above.
				if Within(hp, home) && exists(hp) {
					holes = append(holes, Hole{Path: hp, Withheld: All &^ ReadDir, Why: hd.why})
				}
			}
		}
	}
	// Programs on PATH, and the install prefix of a bin directory (where a
	// toolchain keeps its libraries), unless that prefix is the home
	// itself or a base directory shared by everything (~/.local).
	shared := []string{home, filepath.Join(home, ".local"), l.xdg("XDG_CONFIG_HOME", ".config"),
		l.xdg("XDG_CACHE_HOME", ".cache"), l.xdg("XDG_DATA_HOME", ".local/share"), l.xdg("XDG_STATE_HOME", ".local/state")}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		if slices.Contains(shared, dir) {
			continue
		}
		allow(dir, "on PATH: programs the command may run")
		if filepath.Base(dir) == "bin" && !slices.Contains(shared, filepath.Dir(dir)) {
			allow(filepath.Dir(dir), "the install prefix of "+dir+", which is on PATH")
		}
	}
	if h.Self != "" {
		allow(h.Self, "wrun itself (it serves go's build cache, and runs nested)")
	}

	// A place inside another needs no rule of its own (GOMODCACHE in GOPATH).
	rules = slices.DeleteFunc(rules, func(r Rule) bool {
		return slices.ContainsFunc(rules, func(o Rule) bool { return o.Path != r.Path && Within(r.Path, o.Path) })
	})

	if slices.Contains(have, home) {
		// The home is itself granted (it is the workspace): its files and
		// projects are what the user named, its dot-entries (settings,
		// histories, credentials) stay hidden, one by one.
		ents, _ := os.ReadDir(home)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(home, e.Name())
			if slices.ContainsFunc(rules, func(r Rule) bool { return Within(p, r.Path) }) {
				continue // a readable place itself
			}
			holes = append(holes, Hole{Path: p, Withheld: All &^ ReadDir, Why: homeHidden})
		}
	} else {
		holes = append(holes, Hole{Path: home, Withheld: All &^ ReadDir, Why: homeHidden})
	}
	holes = append(holes, homeLinkTargets(home, rules, have)...)
	return rules, holes
}

// homeLinkTargets hides where the home's symbolic links lead (its own
// entries, and those of ~/.config and ~/.local/share): a key store moved
// elsewhere and linked back is still the home's. A target that holds a
// granted path, a readable place or a system directory is left alone.
func homeLinkTargets(home string, rules []Rule, have []string) []Hole {
	var out []Hole
	for _, dir := range []string{home, filepath.Join(home, ".config"), filepath.Join(home, ".local", "share")} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			link := filepath.Join(dir, e.Name())
			if slices.ContainsFunc(rules, func(r Rule) bool { return Within(link, r.Path) || Within(r.Path, link) }) {
				continue
			}
			target, err := filepath.EvalSymlinks(link)
			if err != nil || Within(target, home) || systemDir(target) {
				continue
			}
			if slices.ContainsFunc(have, func(p string) bool { return Within(p, target) }) {
				continue
			}
			out = append(out, Hole{Path: target, Withheld: All &^ ReadDir,
				Why: "where " + link + " leads: " + homeHidden})
		}
	}
	return out
}

// systemDir reports whether path is, holds or lies in the directories every
// program needs (a link from the home to them hides nothing of the home's).
func systemDir(path string) bool {
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/nix", "/snap", "/proc", "/sys", "/dev"} {
		if Within(path, d) || Within(d, path) {
			return true
		}
	}
	return false
}

// homes returns the home directories to hide: $HOME and the account's,
// other than /, with symbolic links resolved where they exist.
func (h Host) homes() []string {
	var out []string
	for _, home := range []string{h.Home, h.AccountHome} {
		if home == "" || !filepath.IsAbs(home) {
			continue
		}
		home = filepath.Clean(home)
		if r, err := filepath.EvalSymlinks(home); err == nil {
			home = r
		}
		if home == "/" || slices.Contains(out, home) {
			continue
		}
		out = append(out, home)
	}
	return out
}

// runtimeDir returns the hole for the user's runtime directory
// (XDG_RUNTIME_DIR), private to the user by definition: its sockets are
// reached by connecting, not reading, and what it stores to read is the
// user's (container registry logins, session tokens).
func runtimeDir(h Host) []Hole {
	dir, _ := envlist.Lookup(h.Env, "XDG_RUNTIME_DIR")
	if !filepath.IsAbs(dir) {
		return nil
	}
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || dir == "/" {
		return nil
	}
	return []Hole{{Path: dir, Withheld: All &^ ReadDir,
		Why: "the user's runtime directory (XDG_RUNTIME_DIR): private to the user by definition"}}
}
