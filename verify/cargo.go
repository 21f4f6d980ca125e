package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// cargoScope: a target directory of the sandbox's own (cargoTargetPrivate),
// else the target directory (and build directory, when configured apart)
// of the cargo workspace, created up front: cargo otherwise builds
// targetXXXX/ beside it and renames it, which needs write access to the
// workspace root. Cargo.lock and CARGO_HOME stay read-only.
func cargoScope(in Input, repo *Repo, s *Scope) {
	root := cargoWorkspaceRoot(in.Workdir)
	envTarget := in.Getenv("CARGO_TARGET_DIR")
	if envTarget == "" {
		envTarget = in.Getenv("CARGO_BUILD_TARGET_DIR")
	}
	if root == "" && envTarget == "" {
		return
	}
	home := cargoHome(in)
	cc := cargoConfig{in: in, repo: repo, root: root, home: home}
	target, why := cc.dir("target-dir", []string{"CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"}, s)
	if target == "" {
		return
	}
	build, bwhy := cc.dir("build-dir", []string{"CARGO_BUILD_BUILD_DIR"}, s)
	if cargoTargetPrivate(in, target, build) {
		privateCargoTarget(in, target, s)
	} else {
		cc.add(s, target, why)
		if build != "" && build != target {
			cc.add(s, build, bwhy)
		}
	}
	if root != "" {
		lock := filepath.Join(root, "Cargo.lock")
		s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: lock, Tool: "cargo",
			Why: "the dependency lock (cargo): a run must not choose other dependency versions; a stale or missing lock is a denial (run `cargo generate-lockfile` or `cargo update` outside, or pass --locked to fail fast)"})
		if !fileExists(lock) {
			s.Notes = append(s.Notes, "cargo: "+lock+" does not exist and cannot be written under this grant: cargo fails to write it; create it first (cargo generate-lockfile) or use --grant write")
		}
	}
	if home != "" && !in.SharedCaches {
		s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: home, Tool: "cargo",
			Why: "CARGO_HOME: source planted in its registry or git checkouts would be compiled by a later unsandboxed build (cargo runs with a read-only CARGO_HOME: it skips its cache locks, and needs every dependency downloaded and unpacked already)"})
	}
}

// cargoTargetPrivate reports whether cargo builds into a target dir of
// the sandbox's own rather than the user's: always, unless the grant writes
// the user's target (and build) dir anyway (files=write holds them in the
// workspace, shell=full writes the user's caches, which unsandboxed builds
// trust just as much). An unsandboxed cargo runs what it finds fresh in
// its target dir (a test binary whose fingerprint still matches), so a
// sandboxed child must never write the user's.
func cargoTargetPrivate(in Input, target, build string) bool {
	if in.SharedCaches {
		return false
	}
	if !in.WorkspaceWritable {
		return true
	}
	return !within(target, in.Workdir) || build != "" && !within(build, in.Workdir)
}

// privateCargoTarget points cargo at a target dir private to sandboxed runs
// of this workspace under this grant (CARGO_TARGET_DIR and the build dir in
// wrun's state directory), kept between runs so a second `cargo test` is
// incremental. Without a state directory it is a fresh one in the private
// temp dir, removed after the run.
func privateCargoTarget(in Input, user string, s *Scope) {
	var dir, why string
	p := Path{Dir: true, Create: true, Tool: "cargo"}
	switch {
	case in.StateDir != "":
		addStateRoot(in, s)
		dir = filepath.Join(in.StateDir, "cargo-target")
		p.Beneath = stateRoot(in)
		why = "cargo's target dir private to sandboxed runs of this workspace under this grant (" + user + " stays read-only: an unsandboxed cargo runs what it finds there)"
	case in.TempDir != "":
		dir = filepath.Join(in.TempDir, "cargo-target")
		p.Beneath = in.TempDir
		why = "cargo's target dir for this run only, in the private temp dir (" + user + " stays read-only: an unsandboxed cargo runs what it finds there)"
		s.Notes = append(s.Notes, "cargo: no state directory, so the build starts from scratch in the private temp dir")
	default:
		s.Notes = append(s.Notes, "cargo: no state directory and no temp dir: cargo has no writable target dir")
		return
	}
	p.Path, p.Why = dir, why
	s.Writable = append(s.Writable, p)
	s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: user, Tool: "cargo",
		Why: "cargo's target dir: a later unsandboxed cargo run or cargo test executes binaries it finds fresh there; sandboxed builds use " + dir})
	s.Env = append(s.Env,
		EnvVar{Name: "CARGO_TARGET_DIR", Value: dir, Why: "cargo builds into the sandbox's own target dir"},
		EnvVar{Name: "CARGO_BUILD_BUILD_DIR", Value: dir, Why: "cargo's intermediate build outputs go to the sandbox's own target dir too"})
}

type cargoConfig struct {
	in   Input
	repo *Repo
	root string // the cargo workspace root, "" when none was found
	home string // CARGO_HOME
}

// add makes dir writable, reached without following links from the
// nearest trusted directory above it.
func (cc cargoConfig) add(s *Scope, dir, why string) {
	p := Path{Path: dir, Dir: true, Create: true, Tool: "cargo", Why: why}
	if cc.root != "" && within(dir, cc.root) && dir != cc.root {
		p.Beneath = cc.root
	}
	s.Writable = append(s.Writable, p)
}

// dir finds where cargo puts one kind of output: an environment variable
// (the user's choice, trusted), else [build] KEY in the nearest config file,
// else the workspace's target directory. A value from a config file the
// repository controls may only name a fresh output directory inside the
// config's own tree; otherwise the default is granted and forced with the
// environment, so a repository cannot widen the grant.
func (cc cargoConfig) dir(key string, envNames []string, s *Scope) (string, string) {
	for _, name := range envNames {
		if v := cc.in.Getenv(name); v != "" {
			return absFrom(cc.in.Workdir, v), "cargo build output (" + name + ")"
		}
	}
	def := ""
	if cc.root != "" {
		def = filepath.Join(cc.root, "target")
	}
	cfg, base, val := cc.configValue(key)
	if val == "" {
		if key == "build-dir" {
			return "", "" // defaults to the target dir
		}
		return def, "cargo build output of the workspace at " + cc.root
	}
	val = strings.NewReplacer("{workspace-root}", cc.root, "{cargo-cache-home}", cc.home).Replace(val)
	path := absFrom(base, val)
	if strings.Contains(val, "{") || cc.root == "" {
		s.Notes = append(s.Notes, "cargo: "+key+" in "+cfg+" ("+val+") is not understood by wrun; set it with the environment to have it granted")
		return "", ""
	}
	if cc.trusted(cfg) || cc.freshOutputDir(path, base) {
		return path, "cargo build output ([build] " + key + " in " + cfg + ")"
	}
	env := envNames[0]
	s.Env = append(s.Env, EnvVar{Name: env, Value: def,
		Why: "the repository's " + cfg + " sets " + key + " = " + val + ", which wrun does not grant; cargo builds in the default place instead"})
	s.Notes = append(s.Notes, "cargo: "+key+" = "+val+" in "+cfg+" is ignored: a repository's config may not make "+path+" writable (it is not a fresh output directory inside "+base+"); "+env+" points cargo at "+def)
	if key == "build-dir" {
		return "", ""
	}
	return def, "cargo build output of the workspace at " + cc.root + " (the repository's " + key + " overridden)"
}

// configValue finds [build] key in the config files cargo reads, nearest
// first: .cargo/config.toml (or .cargo/config) in the workspace directory
// and each parent, then CARGO_HOME/config.toml. It returns the file, the
// directory a relative value is relative to (the parent of the directory
// holding the file) and the value.
func (cc cargoConfig) configValue(key string) (cfg, base, val string) {
	var files []string
	for d := cc.in.Workdir; ; d = filepath.Dir(d) {
		files = append(files, filepath.Join(d, ".cargo", "config.toml"), filepath.Join(d, ".cargo", "config"))
		if filepath.Dir(d) == d {
			break
		}
	}
	if cc.home != "" {
		files = append(files, filepath.Join(cc.home, "config.toml"), filepath.Join(cc.home, "config"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v := tomlString(string(b), "build", key); v != "" {
			return f, filepath.Dir(filepath.Dir(f)), v
		}
	}
	return "", "", ""
}

// trusted reports whether a config file is the user's rather than the
// repository's: it lies neither in the workspace nor in the repository's
// working tree.
func (cc cargoConfig) trusted(cfg string) bool {
	if within(cfg, cc.in.Workdir) {
		return false
	}
	return cc.repo == nil || !within(cfg, cc.repo.WorkTree)
}

// freshOutputDir reports whether path is acceptable as an output directory
// named by a repository's config: strictly inside base, not holding the
// workspace, no part of a git repository, and either missing (wrun creates
// it empty) or already marked as cargo's (CACHEDIR.TAG).
func (cc cargoConfig) freshOutputDir(path, base string) bool {
	if !within(path, base) || path == base || within(cc.in.Workdir, path) || (cc.root != "" && within(cc.root, path)) {
		return false
	}
	for _, part := range strings.Split(path, string(filepath.Separator)) {
		if part == ".git" {
			return false
		}
	}
	if cc.repo != nil && (within(path, cc.repo.GitDir) || within(path, cc.repo.CommonDir)) {
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return os.IsNotExist(err)
	}
	return fi.IsDir() && fileExists(filepath.Join(path, "CACHEDIR.TAG"))
}

func cargoHome(in Input) string {
	if h := in.Getenv("CARGO_HOME"); h != "" {
		return absFrom(in.Workdir, h)
	}
	if in.Home != "" {
		return filepath.Join(in.Home, ".cargo")
	}
	return ""
}

// cargoWorkspaceRoot returns the root of the cargo workspace dir belongs
// to: the package's explicit `workspace = "..."`, else the nearest
// Cargo.toml at or above dir that has a [workspace] table, else the nearest
// Cargo.toml's directory, else "".
func cargoWorkspaceRoot(dir string) string {
	nearest := ""
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "Cargo.toml"))
		if err == nil {
			doc := string(b)
			if nearest == "" {
				nearest = d
				if ws := tomlString(doc, "package", "workspace"); ws != "" {
					return absFrom(d, ws)
				}
			}
			if hasTable(doc, "workspace") {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return nearest
		}
	}
}

// hasTable reports whether a TOML document has a [name] table, a
// [name.sub] table, or a name.key dotted key at the top level.
func hasTable(doc, name string) bool {
	top := true
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			h := strings.TrimSpace(strings.Trim(line, "[]"))
			if h == name || strings.HasPrefix(h, name+".") {
				return true
			}
			top = false
			continue
		}
		if top && strings.HasPrefix(line, name+".") {
			return true
		}
	}
	return false
}

// tomlString finds key = "value" in [table] of a simple TOML document (or
// table.key = "value" at the top level).
func tomlString(doc, table, key string) string {
	cur := ""
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			cur = strings.TrimSpace(strings.Trim(line, "[]"))
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

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// ProjectRoots returns what the build tools read above workdir, where they
// find the project workdir is part of: the cargo workspace of a member
// crate (its manifest must declare [workspace]: a member's own
// package.workspace, which the repository chooses, names nothing else),
// the nearest go.mod and go.work above it (a workspace that is a
// subdirectory of a Go module), and cargo's configuration files in every
// directory above it (cargo reads them all, and stops at one it cannot
// read).
func ProjectRoots(workdir string) []string {
	var out []string
	if fileExists(filepath.Join(workdir, "Cargo.toml")) {
		if root := cargoWorkspaceRoot(workdir); root != workdir && within(workdir, root) {
			if b, err := os.ReadFile(filepath.Join(root, "Cargo.toml")); err == nil && hasTable(string(b), "workspace") {
				out = append(out, root)
			}
		}
	}
	goMod, goWork := fileExists(filepath.Join(workdir, "go.mod")), false
	for d := filepath.Dir(workdir); ; d = filepath.Dir(d) {
		if !goMod && fileExists(filepath.Join(d, "go.mod")) {
			goMod = true
			out = append(out, d)
		}
		if !goWork && fileExists(filepath.Join(d, "go.work")) {
			goWork = true
			out = append(out, d)
		}
		if fileExists(filepath.Join(d, ".cargo")) {
			for _, n := range []string{"config.toml", "config"} {
				if f := filepath.Join(d, ".cargo", n); fileExists(f) {
					out = append(out, f)
				}
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
