package grant

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// BoundWriteKey is the part of a ceiling spec that bounds paths: the
// directories an approved --allow-write may lie in.
const BoundWriteKey = "allow-write"

// Bound is a ceiling: the widest authority any grant or approved widening
// of a run may reach. Grant bounds the grant's fields; Write, when not
// nil, bounds the paths an approved --allow-write may open: each must be
// one of them or lie inside one (an empty, non-nil Write lets none
// through).
//
// Its spec is the one syntax of a ceiling everywhere: --ceiling,
// defaults.ceiling in a config file, WRUN_CEILING, and a request's
// ceiling (the fields) and ceiling_write (the paths):
//
//	GRANT-SPEC[,allow-write=DIR[:DIR...]]
//
// GRANT-SPEC is what Parse reads; each DIR is absolute (a config file may
// write ~/), cleaned, and can hold neither "," nor ":". Without
// allow-write= the ceiling bounds no path beyond those no approval ever
// opens, whatever the ceiling (system start-up locations and directories
// above a hidden or protected path: see package escalate).
type Bound struct {
	Grant Grant
	Write []string
}

// DefaultBound is the ceiling when nobody set one: the user's own
// authority (Ceiling), no bound on paths.
func DefaultBound() Bound { return Bound{Grant: Ceiling()} }

// ParseBound reads a ceiling spec (see Bound).
func ParseBound(spec string) (Bound, error) {
	var fields []string
	var b Bound
	seen := false
	for part := range strings.SplitSeq(spec, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || strings.TrimSpace(key) != BoundWriteKey {
			fields = append(fields, part)
			continue
		}
		if seen {
			return Bound{}, &ParseError{Spec: spec, Part: part, Msg: BoundWriteKey + " given twice; list its directories separated by ':'"}
		}
		seen = true
		b.Write = []string{}
		for p := range strings.SplitSeq(strings.TrimSpace(val), ":") {
			if p == "" {
				continue
			}
			if !filepath.IsAbs(p) {
				return Bound{}, &ParseError{Spec: spec, Part: part, Msg: fmt.Sprintf("%s: %q is not an absolute directory", BoundWriteKey, p)}
			}
			b.Write = appendDir(b.Write, filepath.Clean(p))
		}
	}
	if len(fields) == 0 {
		return Bound{}, &ParseError{Spec: spec, Msg: "a ceiling is a grant spec first (" + strings.Join(presetNames(), ", ") + " and/or fields), then optionally " + BoundWriteKey + "=DIR:DIR"}
	}
	g, err := Parse(strings.Join(fields, ","))
	if err != nil {
		return Bound{}, err
	}
	b.Grant = g
	return b, nil
}

// appendDir adds dir to dirs unless a directory of dirs already holds it;
// directories inside dir are dropped. The result is sorted.
func appendDir(dirs []string, dir string) []string {
	for _, d := range dirs {
		if within(dir, d) {
			return dirs
		}
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return within(d, dir) })
	dirs = append(dirs, dir)
	slices.Sort(dirs)
	return dirs
}

// within reports whether path is dir or lies inside it (both clean and
// absolute).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// String renders the ceiling in canonical form, which ParseBound reads
// back: the grant's canonical fields, then allow-write= when it bounds
// paths.
func (b Bound) String() string { return b.render(b.Grant.String()) }

// Compact renders the ceiling with the grant's shortest spec.
func (b Bound) Compact() string { return b.render(b.Grant.Compact()) }

func (b Bound) render(fields string) string {
	if b.Write == nil {
		return fields
	}
	return fields + "," + BoundWriteKey + "=" + strings.Join(b.Write, ":")
}

// WriteAllowed reports whether an approved --allow-write of path (clean,
// absolute) stays inside the ceiling's paths.
func (b Bound) WriteAllowed(path string) bool {
	if b.Write == nil {
		return true
	}
	for _, d := range b.Write {
		if within(path, d) {
			return true
		}
	}
	return false
}

// Exceeds lists, in words, how b is wider than limit: each field, and the
// paths b lets an approval open that limit does not.
func (b Bound) Exceeds(limit Bound) []string {
	out := b.Grant.Exceeds(limit.Grant)
	switch {
	case limit.Write == nil:
	case b.Write == nil:
		out = append(out, fmt.Sprintf("any %s path exceeds the ceiling's %s=%s", BoundWriteKey, BoundWriteKey, strings.Join(limit.Write, ":")))
	default:
		for _, p := range b.Write {
			if !limit.WriteAllowed(p) {
				out = append(out, fmt.Sprintf("%s=%s exceeds the ceiling's %s=%s", BoundWriteKey, p, BoundWriteKey, strings.Join(limit.Write, ":")))
			}
		}
	}
	return out
}

// Narrow returns b narrowed to limit (the fields intersected, the paths
// those inside both) and, when that changed anything, how b exceeded it.
func (b Bound) Narrow(limit Bound) (Bound, []string) {
	ex := b.Exceeds(limit)
	if len(ex) == 0 {
		return b, nil
	}
	out := Bound{Grant: b.Grant.Intersect(limit.Grant)}
	switch {
	case limit.Write == nil:
		out.Write = slices.Clone(b.Write)
	case b.Write == nil:
		out.Write = slices.Clone(limit.Write)
	default:
		out.Write = []string{}
		for _, p := range b.Write {
			for _, q := range limit.Write {
				switch {
				case within(p, q):
					out.Write = appendDir(out.Write, p)
				case within(q, p):
					out.Write = appendDir(out.Write, q)
				}
			}
		}
	}
	return out, ex
}

// Union returns the ceiling widened by g's fields (a ceiling nobody set
// takes what the user granted explicitly); the paths stay b's.
func (b Bound) Union(g Grant) Bound {
	return Bound{Grant: b.Grant.Union(g), Write: slices.Clone(b.Write)}
}

// Where a ceiling came from, as a request's ceiling_source says it: the
// place that set it, then " narrowed by PLACE" for each place that
// narrowed it after ("--ceiling narrowed by config.toml",
// "WRUN_CEILING narrowed by WRUN_GRANT").
const (
	// CeilingDefault: nobody set one; the user's own authority
	// (DefaultBound, widened by what the user granted explicitly).
	CeilingDefault = "default"
	// CeilingFlag: the --ceiling flag.
	CeilingFlag = "--ceiling"
	// CeilingUserConfig: defaults.ceiling in the user's config.toml.
	CeilingUserConfig = "config.toml"
	// CeilingRepoConfig: defaults.ceiling in the repository's .wrun.toml
	// (which may only narrow).
	CeilingRepoConfig = ".wrun.toml"
	// EnvCeiling: inherited from an enclosing wrun, which exports its
	// ceiling to every child in this variable.
	EnvCeiling = "WRUN_CEILING"
	// EnvGrant: an enclosing wrun's grant, which it exports to every
	// child; a nested wrun's ceiling never exceeds it.
	EnvGrant = "WRUN_GRANT"
)

// NarrowedBy is source with place added as a narrowing.
func NarrowedBy(source, place string) string { return source + " narrowed by " + place }
