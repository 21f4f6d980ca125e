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
