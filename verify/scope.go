package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Input is what the verify scope depends on.
type Input struct {
	// Workdir is the workspace root, absolute with symlinks resolved.
	Workdir string
	// Home is the invoking user's home directory.
	Home string
	// Getenv looks up the invoking environment.
	Getenv func(string) string
	// StateDir is a directory private to sandboxed runs of this workspace,
	// kept between runs (for warm caches that unsandboxed builds never use).
	StateDir string
	// SharedCaches is set under shell=full, where the user's own tool caches
	// are writable and no private cache is needed.
	SharedCaches bool
}

// Path is one path verify mode makes writable.
type Path struct {
	Path   string
	Dir    bool   // a directory (with everything beneath it) rather than one file
	Create bool   // created by wrun before the child starts when missing
	Tool   string // which tool needs it: cargo, go, git, npm
	Why    string // plain words
}

// EnvVar is one environment change verify mode makes for the child.
type EnvVar struct {
	Name, Value, Why string
}

// Step is an action wrun takes outside the sandbox, before the child
// starts (Prepare) or after it and everything it started have ended
// (Finish): creating a quarantine, migrating what the child produced into
// place. Kind names the action; the fields it uses depend on it.
type Step struct {
	Kind string `json:"kind"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	Why  string `json:"why"`
}

// Scope is the bounded write scope for one invocation.
type Scope struct {
	Writable []Path
	Env      []EnvVar
	// Prepare and Finish are run by wrun, unsandboxed, around the child.
	Prepare []Step
	Finish  []Step
	Notes   []string
}

// RunSteps carries out steps in order and returns what failed; it goes on
// after a failure so one bad step does not strand the others.
func RunSteps(steps []Step) []error {
	var errs []error
	for _, s := range steps {
		if err := runStep(s); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.Kind, s.To, err))
		}
	}
	return errs
}

func runStep(s Step) error {
	switch s.Kind {
	default:
		return fmt.Errorf("unknown step kind %q", s.Kind)
	}
}

// Compute returns the verify scope for in.
func Compute(in Input) Scope {
	var s Scope
	if in.Getenv == nil {
		in.Getenv = func(string) string { return "" }
	}
	cargoScope(in, &s)
	goScope(in, &s)
	return s
}

// cargoScope: the target directory of the cargo workspace, created up front
// (cargo otherwise builds targetXXXX/ beside it and renames it, which needs
// write access to the workspace root).
func cargoScope(in Input, s *Scope) {
	target, why := cargoTargetDir(in)
	if target == "" {
		return
	}
	s.Writable = append(s.Writable, Path{Path: target, Dir: true, Create: true, Tool: "cargo", Why: why})
}

func cargoTargetDir(in Input) (string, string) {
	if t := in.Getenv("CARGO_TARGET_DIR"); t != "" {
		if !filepath.IsAbs(t) {
			t = filepath.Join(in.Workdir, t)
		}
		return filepath.Clean(t), "cargo build output (CARGO_TARGET_DIR)"
	}
	root := cargoWorkspaceRoot(in.Workdir)
	if root == "" {
		return "", ""
	}
	if t, cfg := configTargetDir(in.Workdir); t != "" {
		return t, "cargo build output ([build] target-dir in " + cfg + ")"
	}
	return filepath.Join(root, "target"), "cargo build output of the workspace at " + root
}

// cargoWorkspaceRoot returns the directory of the outermost Cargo.toml at or
// above dir that declares [workspace], else the nearest Cargo.toml's
// directory, else "".
func cargoWorkspaceRoot(dir string) string {
	nearest, ws := "", ""
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "Cargo.toml"))
		if err == nil {
			if nearest == "" {
				nearest = d
			}
			if hasTable(string(b), "workspace") {
				ws = d
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if ws != "" {
		return ws
	}
	return nearest
}

// configTargetDir looks for [build] target-dir in .cargo/config.toml (or
// .cargo/config) at or above dir; a relative value is relative to the
// directory holding .cargo.
func configTargetDir(dir string) (string, string) {
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range []string{"config.toml", "config"} {
			cfg := filepath.Join(d, ".cargo", name)
			b, err := os.ReadFile(cfg)
			if err != nil {
				continue
			}
			if v := tomlString(string(b), "build", "target-dir"); v != "" {
				if !filepath.IsAbs(v) {
					v = filepath.Join(d, v)
				}
				return filepath.Clean(v), cfg
			}
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// hasTable reports whether a TOML document has a [name] table header.
func hasTable(doc, name string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if strings.TrimSpace(line) == "["+name+"]" {
			return true
		}
	}
	return false
}

// tomlString finds key = "value" in [table] of a simple TOML document.
func tomlString(doc, table, key string) string {
	cur := ""
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			cur = strings.Trim(line, "[] ")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if cur == table && k == key || cur == "" && k == table+"."+key {
			v = strings.TrimSpace(v)
			if i := strings.Index(v, "#"); i >= 0 && strings.Count(v[:i], `"`)%2 == 0 {
				v = strings.TrimSpace(v[:i])
			}
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// goScope: a build cache of the sandbox's own. The user's GOCACHE is used by
// later unsandboxed builds, so a sandboxed child must never write it; a
// cache kept per workspace under wrun's state directory stays warm between
// sandboxed runs and is never read by unsandboxed builds.
func goScope(in Input, s *Scope) {
	if in.SharedCaches || !hasGoModule(in.Workdir) || in.StateDir == "" {
		return
	}
	cache := filepath.Join(in.StateDir, "gocache")
	s.Writable = append(s.Writable, Path{Path: cache, Dir: true, Create: true, Tool: "go",
		Why: "go build cache private to sandboxed runs of this workspace (the user's GOCACHE stays read-only)"})
	s.Env = append(s.Env, EnvVar{Name: "GOCACHE", Value: cache, Why: "the sandbox's own go build cache"})
}

func hasGoModule(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return true
		}
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}
