package escalate

import (
	"path/filepath"
	"strings"

	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/verify"
)

// cacheAt returns the tool cache of the policy (policy.Policy.Caches)
// path lies in, the most specific, if any.
func (a *Analyzer) cacheAt(path string) *verify.ToolCache {
	for i, c := range a.p.Caches {
		if filepath.IsAbs(c.Path) && policy.Within(path, c.Path) {
			return &a.p.Caches[i]
		}
	}
	return nil
}

// fullCovers reports whether shell=full would make path writable.
func (a *Analyzer) fullCovers(path string) bool {
	for _, c := range a.p.Caches {
		for _, f := range c.Full {
			if filepath.IsAbs(f.Path) && policy.Within(path, f.Path) {
				return true
			}
		}
	}
	return false
}

// cacheRoot is the narrowest directory of cache c worth granting for a
// write to path: the shell=full directory holding it, else the first
// directory beneath the cache root (for the XDG cache, one tool's cache).
func cacheRoot(c *verify.ToolCache, path string) string {
	for _, f := range c.Full {
		if policy.Within(path, f.Path) && f.Path != c.Path {
			return f.Path
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
