package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/verify"
)

// Where a setting came from.
const (
	SourceBuiltin = "built-in"
	SourceFlag    = "flag"
)

// Value is one effective setting and where it came from.
type Value[T any] struct {
	V      T
	Source string
}

// Role is a named preset over the grant, with the model and thinking
// level a harness gives the child, and where it was defined.
type Role struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Grant is the role's grant spec.
	Grant string `json:"grant"`
	// Model is "" when the role names none (the harness's default).
	Model    string `json:"model,omitempty"`
	Thinking string `json:"thinking"`
	// ThinkingLevels are the levels the role's model supports; nil
	// means any.
	ThinkingLevels []string `json:"thinking_levels,omitempty"`
	Source         string   `json:"source"`
}

// Effective is the settings after the built-ins, the user config and the
// repository file, each with its source.
type Effective struct {
	Grant   Value[string]
	Ceiling Value[string] // "" V: no ceiling set (the user's own authority); grant.Bound's syntax
	// CeilingPlace is the file that set Ceiling, as a request's
	// ceiling_source names it (grant.CeilingUserConfig,
	// grant.CeilingRepoConfig); "" when none did.
	CeilingPlace    string
	Approver        Value[string]
	ApproverTimeout Value[time.Duration]
	KeepEnv         Value[[]string]
	AllowRead       Value[[]string]
	Hide            Value[[]string]
	Tools           Value[[]string]
	ConductorDir    Value[string]
	ReceiptsMax     Value[int64]
	// CacheMax bounds wrun's private build caches (cache.max_size).
	CacheMax Value[int64]
	Roles    map[string]Role
	// Models maps a model to the thinking levels it supports.
	Models map[string]Value[[]string]
	// UserFile and RepoFile are the files read ("" when absent).
	UserFile, RepoFile string
	// Notes say what was not read and why.
	Notes []string
}

// DefaultApproverTimeout is the built-in approver timeout.
const DefaultApproverTimeout = 5 * time.Minute

// DefaultReceiptsMax is the built-in rotation size of the receipts file.
const DefaultReceiptsMax = 16 << 20

// DefaultCacheMax is the built-in bound on wrun's private build caches.
const DefaultCacheMax = verify.DefaultStateMax

// Builtin returns the built-in settings; stateDir is wrun's state
// directory (Paths.State), where the conductor's directory lies.
func Builtin(stateDir string) Effective {
	e := Effective{
		Grant:           Value[string]{grant.DefaultPreset, SourceBuiltin},
		Ceiling:         Value[string]{"", SourceBuiltin},
		ApproverTimeout: Value[time.Duration]{DefaultApproverTimeout, SourceBuiltin},
		KeepEnv:         Value[[]string]{nil, SourceBuiltin},
		AllowRead:       Value[[]string]{nil, SourceBuiltin},
		Hide:            Value[[]string]{nil, SourceBuiltin},
		Tools:           Value[[]string]{nil, SourceBuiltin},
		Approver:        Value[string]{"", SourceBuiltin},
		ConductorDir:    Value[string]{filepath.Join(stateDir, "conductor"), SourceBuiltin},
		ReceiptsMax:     Value[int64]{DefaultReceiptsMax, SourceBuiltin},
		CacheMax:        Value[int64]{DefaultCacheMax, SourceBuiltin},
		Roles:           map[string]Role{},
		Models:          map[string]Value[[]string]{},
	}
	for _, r := range BuiltinRoles() {
		e.Roles[r.Name] = r
	}
	return e
}

// Conductor is the role whose writes outside its own directory always
// go through approval, and which gets no shell inside a git repository.
const Conductor = "conductor"

// BuiltinRoles are the roles wrun knows without any config.
func BuiltinRoles() []Role {
	return []Role{
		{Name: "scout", Grant: "inspect", Thinking: "low", Source: SourceBuiltin,
			Description: "looks around: reads the workspace, writes nothing, no network"},
		{Name: "planner", Grant: "files=read,shell=none", Thinking: "high", Source: SourceBuiltin,
			Description: "plans from what it reads: the workspace is readable, no process may be launched"},
		{Name: "verifier", Grant: "verify", Thinking: "medium", Source: SourceBuiltin,
			Description: "builds and tests: the workspace is read-only, build outputs are writable"},
		{Name: "worker", Grant: "write", Thinking: "medium", Source: SourceBuiltin,
			Description: "changes the workspace: it is writable (git config and hooks excepted), no network"},
		{Name: Conductor, Grant: "inspect", Thinking: "high", Source: SourceBuiltin,
			Description: "orchestrates: writes without asking only in its own directory, elsewhere through approval; no shell inside a git repository (delegate to a worker)"},
	}
}

// Merge applies the user's config and then the repository's file (either
// may be nil) to the built-ins. The repository file may only narrow: a
// setting that would widen anything is an Error naming its line and key.
func Merge(base Effective, user, repo *File) (Effective, error) {
	e := base
	e.Roles = maps(base.Roles)
	e.Models = maps(base.Models)
	if user != nil {
		e.UserFile = user.Path
		e.applyUser(user)
	}
	if repo != nil {
		e.RepoFile = repo.Path
		if err := e.applyRepo(repo); err != nil {
			return Effective{}, err
		}
	}
	return e, nil
}

func maps[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func userSource(f *File) string { return "user config " + f.Path }
func repoSource(f *File) string { return "repository " + f.Path }

func (e *Effective) applyUser(f *File) {
	src := userSource(f)
	d := f.Defaults
	setp(&e.Grant, d.Grant, src)
	if d.Ceiling != nil {
		e.Ceiling = Value[string]{mustParseBound(*d.Ceiling).String(), src}
		e.CeilingPlace = grant.CeilingUserConfig
	}
	setp(&e.Approver, d.Approver, src)
	if d.ApproverTimeout != nil {
		t, _ := parseTimeout(*d.ApproverTimeout) // checked by Parse
		e.ApproverTimeout = Value[time.Duration]{t, src}
	}
	sets(&e.KeepEnv, d.KeepEnv, src)
	sets(&e.AllowRead, d.AllowRead, src)
	sets(&e.Hide, d.Hide, src)
	sets(&e.Tools, d.Tools, src)
	setp(&e.ConductorDir, d.ConductorDir, src)
	setp(&e.ReceiptsMax, d.ReceiptsMaxBytes, src)
	if m := f.Cache.MaxSize; m != nil {
		e.CacheMax = Value[int64]{int64(*m), src}
	}
	for name, m := range f.Models {
		e.Models[name] = Value[[]string]{slices.Clone(m.Thinking), src}
	}
	for _, name := range sortedKeys(f.Roles) {
		r, ok := e.Roles[name]
		if !ok {
			r = Role{Name: name, Grant: grant.DefaultPreset, Thinking: "medium"}
		}
		def := f.Roles[name]
		applyRoleDef(&r, def)
		r.Source = src
		e.Roles[name] = r
	}
}

func applyRoleDef(r *Role, def RoleDef) {
	if def.Description != nil {
		r.Description = *def.Description
	}
	if def.Grant != nil {
		r.Grant = *def.Grant
	}
	if def.Model != nil {
		r.Model = *def.Model
	}
	if def.Thinking != nil {
		r.Thinking = *def.Thinking
	}
	if def.ThinkingLevels != nil {
		r.ThinkingLevels = slices.Clone(def.ThinkingLevels)
	}
}

func setp[T any](v *Value[T], p *T, src string) {
	if p != nil {
		*v = Value[T]{*p, src}
	}
}

func sets(v *Value[[]string], s []string, src string) {
	if s != nil {
		*v = Value[[]string]{slices.Clone(s), src}
	}
}

// widest is the ceiling's grant: the configured one, else the user's own
// authority.
func (e *Effective) ceilingBound() grant.Bound {
	if e.Ceiling.V == "" {
		return grant.DefaultBound().Union(mustParse(e.Grant.V))
	}
	return mustParseBound(e.Ceiling.V)
}

// CeilingGrant is the fields of the configured ceiling, else the user's
// own authority.
func (e *Effective) CeilingGrant() grant.Grant { return e.ceilingBound().Grant }

func mustParseBound(spec string) grant.Bound {
	b, err := grant.ParseBound(spec)
	if err != nil {
		return grant.Bound{Write: []string{}} // the narrowest: specs are checked when read
	}
	return b
}

func mustParse(spec string) grant.Grant {
	g, err := grant.Parse(spec)
	if err != nil {
		return grant.Grant{} // the narrowest: specs are checked when read
	}
	return g
}

// applyRepo applies a repository's file: it may narrow the default grant
// and ceiling, hide more paths, narrow the roles there are and define new
// ones no wider than the default grant, and choose models and thinking.
// It may not set what widens (kept variables, readable paths, the
// approver, the conductor's directory, the receipts' rotation).
func (e *Effective) applyRepo(f *File) error {
	src := repoSource(f) + " (narrowing)"
	d := f.Defaults
	untrusted := func(key string) error {
		return f.errAt(key, "a repository's .wrun.toml may not set this (it is untrusted input and may only narrow); set it in your user config")
	}
	switch {
	case d.Approver != nil:
		return untrusted("defaults.approver")
	case d.ApproverTimeout != nil:
		return untrusted("defaults.approver_timeout")
	case d.KeepEnv != nil:
		return untrusted("defaults.keep_env")
	case d.AllowRead != nil:
		return untrusted("defaults.allow_read")
	case d.ConductorDir != nil:
		return untrusted("defaults.conductor_dir")
	case d.ReceiptsMaxBytes != nil:
		return untrusted("defaults.receipts_max_bytes")
	case f.Cache.MaxSize != nil:
		return untrusted("cache.max_size")
	}
	if d.Ceiling != nil {
		g := mustParseBound(*d.Ceiling)
		if ex := g.Exceeds(e.ceilingBound()); len(ex) > 0 {
			return f.errAt("defaults.ceiling", "%s would widen the ceiling (%s, %s): a repository may only narrow it: %s",
				g.Compact(), e.ceilingBound().Compact(), e.Ceiling.Source, strings.Join(ex, "; "))
		}
		e.Ceiling = Value[string]{g.String(), src}
		e.CeilingPlace = grant.CeilingRepoConfig
	}
	if d.Grant != nil {
		g := mustParse(*d.Grant)
		cur := mustParse(e.Grant.V)
		if ex := g.Exceeds(cur); len(ex) > 0 {
			return f.errAt("defaults.grant", "%s would widen the default grant (%s, %s): a repository may only narrow it: %s",
				g.Compact(), cur.Compact(), e.Grant.Source, strings.Join(wordsOf(ex), "; "))
		}
		e.Grant = Value[string]{g.String(), src}
	}
	if d.Hide != nil {
		e.Hide = Value[[]string]{append(slices.Clone(e.Hide.V), d.Hide...), src}
	}
	if d.Tools != nil {
		if e.Tools.V != nil {
			for _, t := range d.Tools {
				if !slices.Contains(e.Tools.V, t) {
					return f.errAt("defaults.tools", "%q is not among your config's tools (%s): a repository may only narrow them", t, strings.Join(e.Tools.V, ", "))
				}
			}
		}
		e.Tools = Value[[]string]{slices.Clone(d.Tools), src}
	}
	for _, name := range sortedKeys(f.Models) {
		levels := f.Models[name].Thinking
		if cur, ok := e.Models[name]; ok {
			for _, l := range levels {
				if !slices.Contains(cur.V, l) {
					return f.errAt("models."+name+".thinking", "%q: %s supports %s (%s): a repository may only narrow that", l, name, strings.Join(cur.V, ", "), cur.Source)
				}
			}
		}
		e.Models[name] = Value[[]string]{slices.Clone(levels), src}
	}
	for _, name := range sortedKeys(f.Roles) {
		def := f.Roles[name]
		r, exists := e.Roles[name]
		bound, boundWhat := mustParse(r.Grant), fmt.Sprintf("the role's grant (%s, %s)", mustParse(r.Grant).Compact(), r.Source)
		if !exists {
			r = Role{Name: name, Grant: e.Grant.V, Thinking: "medium"}
			bound, boundWhat = mustParse(e.Grant.V), fmt.Sprintf("the default grant (%s, %s)", mustParse(e.Grant.V).Compact(), e.Grant.Source)
		}
		if def.Grant != nil {
			g := mustParse(*def.Grant)
			if ex := g.Exceeds(bound); len(ex) > 0 {
				return f.errAt("roles."+name+".grant", "%s would widen %s: a repository may only narrow it: %s",
					g.Compact(), boundWhat, strings.Join(wordsOf(ex), "; "))
			}
		}
		applyRoleDef(&r, def)
		r.Source = src
		e.Roles[name] = r
	}
	return nil
}

// wordsOf turns "X exceeds the ceiling's Y" into "X exceeds Y".
func wordsOf(ex []string) []string {
	out := make([]string, len(ex))
	for i, s := range ex {
		out[i] = strings.Replace(s, "the ceiling's ", "", 1)
	}
	return out
}

// ExpandHome expands a leading ~/ with home.
func ExpandHome(p, home string) string {
	if strings.HasPrefix(p, "~/") && home != "" {
		return filepath.Join(home, p[2:])
	}
	return p
}

// Load reads the user's config (unless paths.UserConfig is "") and the
// repository file of workdir (RepoFile) and merges them over the
// built-ins.
func Load(paths Paths, workdir string) (Effective, error) {
	var user, repo *File
	var err error
	var notes []string
	if paths.UserConfig != "" {
		user, err = ReadFile(paths.UserConfig)
		var pe *os.PathError
		switch {
		case errors.As(err, &pe) && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR)):
			// Not this user's to read (another account's HOME, say): it
			// is not this user's config.
			notes = append(notes, fmt.Sprintf("the user config %s is not readable by this user (%v): not applied", paths.UserConfig, pe.Err))
			user = nil
		case err != nil:
			return Effective{}, err
		}
	}
	if workdir != "" {
		if path := RepoFile(workdir); path != "" {
			fi, err := os.Lstat(path)
			if err != nil {
				return Effective{}, &Error{File: path, Msg: oneLine(err.Error())}
			}
			if !fi.Mode().IsRegular() {
				return Effective{}, &Error{File: path, Msg: "not a regular file (a repository's .wrun.toml may not be a link): refused"}
			}
			if repo, err = ReadFile(path); err != nil {
				return Effective{}, err
			}
		}
	}
	e, err := Merge(Builtin(paths.State), user, repo)
	e.Notes = append(e.Notes, notes...)
	return e, err
}

// RepoFile returns the .wrun.toml that applies to workdir: the nearest
// one from workdir up to the root of the git repository it lies in
// (workdir alone outside a repository); "" when there is none.
func RepoFile(workdir string) string {
	d, err := filepath.Abs(workdir)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	top := d
	for p := d; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			top = p
			break
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	for p := d; ; p = filepath.Dir(p) {
		f := filepath.Join(p, ".wrun.toml")
		if _, err := os.Lstat(f); err == nil {
			return f
		}
		if p == top || p == filepath.Dir(p) {
			return ""
		}
	}
}

// Paths are where wrun keeps its files, from the XDG variables with their
// fallbacks.
type Paths struct {
	// UserConfig is $XDG_CONFIG_HOME/wrun/config.toml.
	UserConfig string
	// State is $XDG_STATE_HOME/wrun (else ~/.local/state/wrun): the
	// receipts and, without a runtime directory, the roster.
	State string
	// Receipts is State/receipts.jsonl.
	Receipts string
	// Roster is $XDG_RUNTIME_DIR/wrun, else State/roster.
	Roster string
	// Home is the home directory used for ~/ and the fallbacks.
	Home string
}

// PathsFrom computes Paths from an environment lookup and the home
// directory (used when a variable is unset or not absolute).
func PathsFrom(getenv func(string) string, home string) Paths {
	xdg := func(name, def string) string {
		if v := getenv(name); filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		return filepath.Join(home, def)
	}
	p := Paths{Home: home}
	p.UserConfig = filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "wrun", "config.toml")
	p.State = filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "wrun")
	p.Receipts = filepath.Join(p.State, "receipts.jsonl")
	p.Roster = filepath.Join(p.State, "roster")
	if v := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(v) && v != "/" {
		if fi, err := os.Stat(v); err == nil && fi.IsDir() {
			p.Roster = filepath.Join(filepath.Clean(v), "wrun")
		}
	}
	return p
}
