package darwin

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// perUserTemp is the per-user temp directory launchd gives every login
// session as TMPDIR: /var/folders/XX/YYYY/T/ (or its /private name).
var perUserTemp = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(/private)?/var/folders/[^/]+/[^/]+/T/?$`)
})

// UserCacheDir returns the per-user cache directory (what `getconf
// DARWIN_USER_CACHE_DIR` prints: clang's and Xcode's module caches) that
// lies beside tmpdir, the per-user temp directory, or "" when tmpdir is
// not one. It reads nothing: the two are siblings by construction.
func UserCacheDir(tmpdir string) string {
	t := strings.TrimSuffix(tmpdir, "/")
	if filepath.Clean(t) != t || !perUserTemp().MatchString(tmpdir) {
		return ""
	}
	return filepath.Join(filepath.Dir(t), "C")
}

// clangModuleCache is the variable clang (and swift's clang importer)
// takes its module cache from, in place of the per-user cache directory.
const clangModuleCache = "CLANG_MODULE_CACHE_PATH"

// Adapt returns p with what macOS adds to it; p is not changed. The
// per-user cache directory userCache ("" when unknown) is where clang
// and Xcode keep their module caches, which later unsandboxed builds
// read: under shell=full, which shares the user's caches, it is
// writable; under any narrower grant it stays read-only and clang keeps
// its module cache in the run's private temp dir instead
// (CLANG_MODULE_CACHE_PATH), so a build that uses modules still works
// and nothing it writes is read by a build outside the sandbox.
func Adapt(p *policy.Policy, userCache string) *policy.Policy {
	c := *p
	if p.Grant.Shell == grant.ShellFull {
		if userCache != "" {
			c.Rules = append(slices.Clone(p.Rules), policy.Rule{Path: userCache, Access: policy.ReadWrite, Source: "full:macos", Optional: true,
				Why: "the per-user cache directory (DARWIN_USER_CACHE_DIR): clang's and Xcode's module caches, shared with builds outside the sandbox like the user's other caches under shell=full"})
		}
		return &c
	}
	if p.TempDir == "" {
		return &c
	}
	v := filepath.Join(p.TempDir, "clang-module-cache")
	c.Env = slices.DeleteFunc(slices.Clone(p.Env), func(kv string) bool { return strings.HasPrefix(kv, clangModuleCache+"=") })
	c.Env = append(c.Env, clangModuleCache+"="+v)
	c.EnvSet = append(slices.Clone(p.EnvSet), policy.EnvVar{Name: clangModuleCache, Value: v,
		Why: "clang's module cache in the private temp dir: the per-user one is read by builds outside the sandbox, so it stays read-only"})
	return &c
}
