package escalate

import (
	"path/filepath"
	"strings"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// toolCache is a directory of the user's that tools share between runs.
// Sandboxed children below shell=full must never write it: an entry
// planted there is used by later unsandboxed builds.
type toolCache struct {
	// Name is how the plain words call it: "CARGO_HOME", "GOCACHE".
	Name string
	// Tool is the key the catalogue matches on: "cargo", "go-mod",
	// "go-build", "npm", "xdg".
	Tool string
	Path string
	// Full lists the directories beneath Path that shell=full makes
	// writable (the same list policy gives shell=full).
	Full []string
}

// toolCaches locates the user's tool caches, most specific first, as
// verify.UserToolDirs does for policy's shell=full caches.
func toolCaches(workdir, home string, getenv func(string) string) []toolCache {
	d := verify.UserToolDirs(verify.Input{Workdir: workdir, Home: home, Getenv: getenv})
	var out []toolCache
	add := func(c toolCache) {
		if c.Path != "" && filepath.IsAbs(c.Path) {
			c.Path = filepath.Clean(c.Path)
			out = append(out, c)
		}
	}
	if d.CargoHome != "" {
		add(toolCache{Name: "CARGO_HOME", Tool: "cargo", Path: d.CargoHome,
			Full: []string{filepath.Join(d.CargoHome, "registry"), filepath.Join(d.CargoHome, "git")}})
	}
	add(toolCache{Name: "GOMODCACHE", Tool: "go-mod", Path: d.GoModCache, Full: []string{d.GoModCache}})
	add(toolCache{Name: "GOCACHE", Tool: "go-build", Path: d.GoCache, Full: []string{d.GoCache}})
	add(toolCache{Name: "npm's cache", Tool: "npm", Path: d.NpmCache, Full: []string{d.NpmCache}})
	add(toolCache{Name: "the user's cache directory", Tool: "xdg", Path: d.CacheHome, Full: []string{d.CacheHome}})
	return out
}

// cacheAt returns the tool cache path lies in, if any.
func (a *Analyzer) cacheAt(path string) *toolCache {
	for i := range a.caches {
		if policy.Within(path, a.caches[i].Path) {
			return &a.caches[i]
		}
	}
	return nil
}

// fullCovers reports whether shell=full would make path writable.
func (a *Analyzer) fullCovers(path string) bool {
	for _, c := range a.caches {
		for _, f := range c.Full {
			if policy.Within(path, f) {
				return true
			}
		}
	}
	return false
}

// cacheRoot is the narrowest directory of cache c worth granting for a
// write to path: the shell=full directory holding it, else the first
// directory beneath the cache root (for the XDG cache, one tool's cache).
func (c *toolCache) cacheRoot(path string) string {
	for _, f := range c.Full {
		if policy.Within(path, f) && f != c.Path {
			return f
		}
	}
	if c.Tool == "xdg" || c.Tool == "cargo" {
		rel, err := filepath.Rel(c.Path, path)
		if err == nil && rel != "." {
			first, _, more := strings.Cut(rel, string(filepath.Separator))
			if more {
				return filepath.Join(c.Path, first)
			}
		}
	}
	return c.Path
}
