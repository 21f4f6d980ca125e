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

// userCaches are the user's tool caches that shell=full makes writable.
func userCaches(in Input) []Path {
	d := UserToolDirs(in)
	var out []Path
	add := func(path, tool, why string) {
		if path != "" {
			out = append(out, Path{Path: filepath.Clean(path), Dir: true, Tool: tool, Why: why})
		}
	}
	add(d.CacheHome, "xdg", "the user's cache directory (shell=full)")
	if d.CargoHome != "" {
		add(filepath.Join(d.CargoHome, "registry"), "cargo", "cargo's download cache (shell=full)")
		add(filepath.Join(d.CargoHome, "git"), "cargo", "cargo's git checkouts (shell=full)")
	}
	add(d.GoCache, "go", "the user's go build cache (shell=full)")
	add(d.GoModCache, "go", "the go module cache (shell=full)")
	add(d.NpmCache, "npm", "npm's cache (shell=full)")
	return out
}
