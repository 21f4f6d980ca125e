package verify

import "path/filepath"

// ToolDirs are the directories the user's tools share between runs, located
// as the tools themselves locate them. Sandboxed children below shell=full
// never write them: an entry planted there is used by later unsandboxed
// builds. Empty fields are unknown (no home) or switched off.
type ToolDirs struct {
	// CargoHome is CARGO_HOME, else ~/.cargo.
	CargoHome string
	// GoModCache is GOMODCACHE, else GOPATH/pkg/mod (go env file
	// included), else ~/go/pkg/mod.
	GoModCache string
	// GoCache is the user's GOCACHE, else XDG_CACHE_HOME/go-build.
	GoCache string
	// CacheHome is XDG_CACHE_HOME, else ~/.cache.
	CacheHome string
	// NpmCache is ~/.npm.
	NpmCache string
}

// UserToolDirs locates the user's tool caches for in (Workdir, Home and
// Getenv are used).
func UserToolDirs(in Input) ToolDirs {
	in = in.withGetenv()
	d := ToolDirs{CargoHome: cargoHome(in), GoModCache: goModCache(in), GoCache: userGoCache(in)}
	d.CacheHome = in.Getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(d.CacheHome) {
		d.CacheHome = ""
		if in.Home != "" {
			d.CacheHome = filepath.Join(in.Home, ".cache")
		}
	}
	if in.Home != "" {
		d.NpmCache = filepath.Join(in.Home, ".npm")
	}
	return d
}

// ToolCache is one of the user's tool caches, as a denial there needs to
// know it: which tool's it is and what shell=full makes writable in it.
type ToolCache struct {
	// Name is how the plain words call it: "CARGO_HOME", "GOCACHE".
	Name string
	// Tool names it for the alternatives offered: "cargo", "go-mod",
	// "go-build", "npm", "xdg".
	Tool string
	// Path is the cache's directory, clean.
	Path string
	// Full are the directories beneath (or at) Path that shell=full makes
	// writable, with the tool and the reason policy gives their rules.
	Full []Path
}

// ToolCaches locates the user's tool caches for in (Workdir, Home and
// Getenv are used), most specific first: a path in CARGO_HOME, the module
// cache or GOCACHE lies in that cache even where it also lies in the
// user's cache directory.
func ToolCaches(in Input) []ToolCache {
	d := UserToolDirs(in)
	var out []ToolCache
	add := func(name, tool, path string, full ...Path) {
		if path != "" {
			out = append(out, ToolCache{Name: name, Tool: tool, Path: filepath.Clean(path), Full: full})
		}
	}
	dir := func(path, tool, why string) Path {
		return Path{Path: filepath.Clean(path), Dir: true, Tool: tool, Why: why}
	}
	if d.CargoHome != "" {
		add("CARGO_HOME", "cargo", d.CargoHome,
			dir(filepath.Join(d.CargoHome, "registry"), "cargo", "cargo's download cache (shell=full)"),
			dir(filepath.Join(d.CargoHome, "git"), "cargo", "cargo's git checkouts (shell=full)"))
	}
	add("GOMODCACHE", "go-mod", d.GoModCache, dir(d.GoModCache, "go", "the go module cache (shell=full)"))
	add("GOCACHE", "go-build", d.GoCache, dir(d.GoCache, "go", "the user's go build cache (shell=full)"))
	add("npm's cache", "npm", d.NpmCache, dir(d.NpmCache, "npm", "npm's cache (shell=full)"))
	add("the user's cache directory", "xdg", d.CacheHome, dir(d.CacheHome, "xdg", "the user's cache directory (shell=full)"))
	return out
}

// userCaches are the user's tool caches that shell=full makes writable:
// the user's cache directory first, then each tool's.
func userCaches(in Input) []Path {
	var out []Path
	caches := ToolCaches(in)
	for _, tool := range []string{"xdg", "cargo", "go-build", "go-mod", "npm"} {
		for _, c := range caches {
			if c.Tool == tool {
				out = append(out, c.Full...)
			}
		}
	}
	return out
}
