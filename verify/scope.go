package verify

import (
	"path/filepath"
	"strings"
)

// Input is what the verify scope depends on.
type Input struct {
	// Workdir is the workspace root, absolute with symlinks resolved.
	Workdir string
	// Home is the invoking user's home directory.
	Home string
	// Getenv looks up the invoking environment (nil: nothing is set).
	// Callers holding the environment as a list build it with
	// envlist.Lookup.
	Getenv func(string) string
	// StateDir is a directory private to sandboxed runs of this workspace
	// under this grant (policy.StateKey), kept between runs (for warm
	// caches that unsandboxed builds never use); "" keeps no state.
	StateDir string
	// StateRoot is wrun's state directory, which holds StateDir: reached
	// without following links, made on first use (StepStateRoot).
	StateRoot string
	// TempDir is the private temp dir of this run ("" when only
	// explaining).
	TempDir string
	// RunID names this run's git quarantine; "" takes TempDir's base name.
	RunID string
	// Self is the path of the wrun executable, which serves the go
	// command's build cache (GOCACHEPROG); "" disables that.
	Self string
	// SharedCaches is set under shell=full, where the user's own tool caches
	// are writable (Scope.UserCaches) and no private cache is needed.
	SharedCaches bool
	// WorkspaceWritable is set under files=write: a repository inside the
	// workspace is writable already and needs no quarantine.
	WorkspaceWritable bool
	// HostsProxy is set under network=hosts: the way out is wrun's proxy,
	// which git:// remotes reach through core.gitProxy.
	HostsProxy bool
}

// Path is one path verify mode makes writable.
type Path struct {
	Path   string
	Dir    bool   // a directory (with everything beneath it) rather than one file
	Create bool   // created by wrun before the child starts when missing
	Tool   string // which tool needs it: cargo, go, git, npm, python, build
	Why    string // plain words
	// Beneath, when set, is a trusted directory above Path whose contents
	// are not trusted (a repository, a cargo workspace): Path is reached
	// from it without following symbolic links, so a planted link cannot
	// redirect the grant. Compute sets it on every writable path inside
	// the workspace: the workspace root, unless the tool names a nearer
	// directory.
	Beneath string
	// Entry: Path is one name wrun's mediation makes, replaces and
	// removes for the child in a directory that is not writable (a
	// branch's ref and its lock file beside the other branches); see
	// policy.Rule's Entry.
	Entry bool
	// Scratch: a directory wrun makes empty for the run, once the guard's
	// journal records it, and removes after the run with everything in it
	// (the guard's Scratch: a killed wrun's is removed by the next run).
	// Nothing outside the run trusts it, so symbolic links, FIFOs and
	// sockets may be made beneath it; elsewhere later unsandboxed runs
	// write there and a planted link would redirect them.
	Scratch bool
}

// ReadOnly is a path verify mode deliberately leaves unwritable although a
// tool writes beside it, with the attack that stops.
type ReadOnly struct {
	Path string `json:"path"`
	Tool string `json:"tool"`
	Why  string `json:"why"`
}

// EnvVar is one environment change verify mode makes for the child.
type EnvVar struct {
	Name, Value, Why string
}

// Scope is the bounded write scope for one invocation, complete: the
// policy layer only translates it into rules.
type Scope struct {
	// Writable are the paths verify mode makes writable.
	Writable []Path
	// UserCaches are the user's own tool caches, which shell=full
	// (Input.SharedCaches) makes writable; nil otherwise. They exist
	// whether or not this workspace uses the tool.
	UserCaches []Path
	ReadOnly   []ReadOnly
	Env        []EnvVar
	// Prepare and Finish are run by wrun, unsandboxed, around the child
	// (see Prepare and Session.Finish).
	Prepare []Step
	Finish  []Step
	Notes   []string
}

// Compute returns the verify scope for in. It reads the disk (manifests,
// config files, the git repository) but changes nothing.
func Compute(in Input) Scope {
	var s Scope
	in = in.withGetenv()
	repo, err := FindRepo(in.Workdir)
	if err != nil {
		s.Notes = append(s.Notes, "git: "+err.Error())
		repo = nil
	}
	cargoScope(in, repo, &s)
	goScope(in, &s)
	var gitCfg [][2]string
	if !in.WorkspaceWritable {
		gitCfg = append(gitCfg, pushRefusalConfig())
		s.Notes = append(s.Notes, "git: git push is refused (every push goes to wrun's refusing remote helper, and the git shim refuses push and send-pack): verify checks work, it does not publish it; files=write with network=on may push. With the network on for git fetch this guards against a mistake, it is not a boundary: a determined child can speak git's protocol itself")
	}
	gitScope(in, repo, &s, &gitCfg)
	if len(gitCfg) > 0 {
		s.Env = append(s.Env, gitConfigEnv(gitCfg)...)
	}
	npmScope(in, &s)
	pythonScope(in, &s)
	buildDirScope(in, &s)
	// A path inside the workspace is reached from the workspace root
	// unless its tool named a nearer trusted directory: the child may
	// plant links anywhere in a workspace it can write.
	for i := range s.Writable {
		w := &s.Writable[i]
		if w.Beneath == "" && in.Workdir != "" && within(w.Path, in.Workdir) && w.Path != in.Workdir {
			w.Beneath = in.Workdir
		}
	}
	if in.SharedCaches {
		s.UserCaches = userCaches(in)
	}
	return s
}

// withGetenv returns in with Getenv set: a nil Getenv finds nothing set.
func (in Input) withGetenv() Input {
	if in.Getenv == nil {
		in.Getenv = func(string) string { return "" }
	}
	return in
}

// within reports whether path is base or lies beneath it.
func within(path, base string) bool {
	if base == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == base || strings.HasPrefix(path, base+"/")
}

// absFrom makes p absolute relative to dir, cleaned.
func absFrom(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// npmScope: npm needs nothing written for `npm test`, but it opens its cache
// (~/.npm) on every start and its update check and debug log write there:
// refused in the read-only home, harmlessly. So the update check is off
// and the cache and the log go to the private temp dir (the cache only
// when ~/.npm stays read-only: with the user's caches shared it is theirs).
func npmScope(in Input, s *Scope) {
	if !hasFileAbove(in.Workdir, "package.json") {
		return
	}
	s.Env = append(s.Env, EnvVar{Name: "npm_config_update_notifier", Value: "false",
		Why: "npm's update check writes to ~/.npm, which stays read-only"})
	if in.TempDir != "" {
		s.Env = append(s.Env, EnvVar{Name: "npm_config_logs_dir", Value: filepath.Join(in.TempDir, "npm-logs"),
			Why: "npm's debug logs go to the private temp dir (~/.npm stays read-only)"})
	}
	if in.TempDir != "" && !in.SharedCaches {
		s.Env = append(s.Env, EnvVar{Name: "npm_config_cache", Value: filepath.Join(in.TempDir, "npm-cache"),
			Why: "npm's cache is one of the run's own in the private temp dir (~/.npm stays read-only)"})
	}
	if in.Home != "" && !in.SharedCaches {
		s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: filepath.Join(in.Home, ".npm"), Tool: "npm",
			Why: "npm's cache: a planted tarball would be installed by a later unsandboxed npm install; a run's npm gets a cache of its own (npm_config_cache=$TMPDIR/npm-cache, removed with the private temp dir)"})
	}
}

// hasFileAbove reports whether name exists in dir or one of its parents.
func hasFileAbove(dir, name string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, name)) {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}
