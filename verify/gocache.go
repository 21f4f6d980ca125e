package verify

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// GoCacheProgCommand is the hidden wrun subcommand that serves the go
// command's build cache (GOCACHEPROG); see ServeGoCache.
const GoCacheProgCommand = "__gocacheprog"

// goScope: a build cache of the sandbox's own. The user's GOCACHE is used by
// later unsandboxed builds, so a sandboxed child must never write it (a
// poisoned entry would be linked into them); a cache kept per workspace
// under wrun's state directory stays warm between sandboxed runs and is
// never read by unsandboxed builds. Until a go command has used it once,
// wrun itself serves it to the go command (GOCACHEPROG), copying entries
// the user's cache already has (read-only) into it: the first sandboxed run
// does not rebuild the standard library, and later runs use the private
// cache directly, without a cache program's round trips.
func goScope(in Input, s *Scope) {
	if in.SharedCaches || !hasFileAbove(in.Workdir, "go.mod") && !hasFileAbove(in.Workdir, "go.work") {
		return
	}
	userCache := userGoCache(in)
	if userCache != "" {
		s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: userCache, Tool: "go",
			Why: "the user's GOCACHE: a poisoned entry would be linked into later unsandboxed builds"})
	}
	if mod := goModCache(in); mod != "" {
		s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: mod, Tool: "go",
			Why: "GOMODCACHE: planted module source would be compiled by later unsandboxed builds (modules must be downloaded already: go mod download)"})
	}
	if in.TempDir != "" {
		s.Env = append(s.Env, EnvVar{Name: "GOTMPDIR", Value: in.TempDir, Why: "the go command's work files go to the private temp dir"})
	}
	if in.StateDir == "" {
		s.Notes = append(s.Notes, "go: no state directory, so no private build cache: go commands that need a cache fail")
		return
	}
	cache := filepath.Join(in.StateDir, "gocache")
	addStateRoot(in, s)
	s.Writable = append(s.Writable, Path{Path: cache, Dir: true, Create: true, Tool: "go",
		Beneath: stateRoot(in),
		Why:     "go build cache private to sandboxed runs of this workspace under this grant (the user's GOCACHE stays read-only; runs under other grants have their own)"})
	s.Env = append(s.Env, EnvVar{Name: "GOCACHE", Value: cache, Why: "the sandbox's own go build cache"})
	if fileExists(filepath.Join(cache, GoCacheSeeded)) {
		return // warm: the go command uses it directly
	}
	if in.Self == "" || userCache == "" {
		s.Notes = append(s.Notes, "go: the private build cache starts empty: the first sandboxed build of this workspace compiles the standard library (tens of seconds on two cores)")
		return
	}
	args := []string{in.Self, GoCacheProgCommand, "--private", cache, "--read", userCache}
	prog, ok := quoteArgs(args)
	if !ok {
		s.Notes = append(s.Notes, "go: the path of wrun or a cache cannot be quoted for GOCACHEPROG; the private build cache starts empty")
		return
	}
	why := "first sandboxed go command of this workspace: wrun serves the build cache, copying what it needs from the user's GOCACHE (read only) into the private one"
	if in.Getenv("GOCACHEPROG") != "" {
		why += " (replaces the inherited GOCACHEPROG, which could not write its cache here)"
	}
	s.Env = append(s.Env, EnvVar{Name: "GOCACHEPROG", Value: prog, Why: why})
}

// userGoCache returns the build cache unsandboxed go commands use: GOCACHE
// from the environment or the go env file, else the default; "" when the
// cache is off.
func userGoCache(in Input) string {
	v := in.Getenv("GOCACHE")
	if v == "" {
		v = goEnvFileValue(in, "GOCACHE")
	}
	if v == "off" {
		return ""
	}
	if v != "" {
		if !filepath.IsAbs(v) {
			return "" // the go command refuses a relative GOCACHE
		}
		return filepath.Clean(v)
	}
	cacheHome := in.Getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(cacheHome) {
		if in.Home == "" {
			return ""
		}
		cacheHome = filepath.Join(in.Home, ".cache")
	}
	return filepath.Join(cacheHome, "go-build")
}

// goModCache returns GOMODCACHE as the go command computes it.
func goModCache(in Input) string {
	v := in.Getenv("GOMODCACHE")
	if v == "" {
		v = goEnvFileValue(in, "GOMODCACHE")
	}
	if v != "" {
		return filepath.Clean(v)
	}
	gopath := in.Getenv("GOPATH")
	if gopath == "" {
		gopath = goEnvFileValue(in, "GOPATH")
	}
	if gopath == "" {
		if in.Home == "" {
			return ""
		}
		gopath = filepath.Join(in.Home, "go")
	}
	return filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
}

// goEnvFileValue reads a setting from the go env file (go env -w).
func goEnvFileValue(in Input, key string) string {
	file := in.Getenv("GOENV")
	if file == "off" {
		return ""
	}
	if file == "" {
		cfg := in.Getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(cfg) {
			if in.Home == "" {
				return ""
			}
			cfg = filepath.Join(in.Home, ".config")
		}
		file = filepath.Join(cfg, "go", "env")
	}
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	val := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && k == key {
			val = v
		}
	}
	return val
}

// quoteArgs joins args the way the go command splits GOCACHEPROG
// (cmd/internal/quoted): fields with spaces or quotes are quoted. A field
// holding both quote characters cannot be expressed.
func quoteArgs(args []string) (string, bool) {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case a == "":
			return "", false
		case !strings.ContainsAny(a, " \t\n\r'\""):
			b.WriteString(a)
		case !strings.Contains(a, "'"):
			b.WriteString("'" + a + "'")
		case !strings.Contains(a, `"`):
			b.WriteString(`"` + a + `"`)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// stateRoot is wrun's state directory holding in.StateDir.
func stateRoot(in Input) string {
	if in.StateRoot != "" {
		return in.StateRoot
	}
	return filepath.Dir(filepath.Dir(in.StateDir))
}

// addStateRoot has wrun make its state directory before the child starts.
// A child with a wider grant could have planted a symbolic link on the way
// (ws -> $HOME): private state is reached from the state root without
// following any. The root itself is made on first use, and refused if it
// is a link.
func addStateRoot(in Input, s *Scope) {
	root := stateRoot(in)
	for _, st := range s.Prepare {
		if st.Kind == StepStateRoot && st.Dir == root {
			return
		}
	}
	s.Prepare = append(s.Prepare, Step{Kind: StepStateRoot, Dir: root,
		Why: "wrun's state directory, made on first use (mode 0700) and never a symbolic link"})
}
