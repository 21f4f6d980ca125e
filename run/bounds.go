package run

import (
	"fmt"
	"strings"

	"github.com/wrun-dev/wrun/escalate"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/internal/envlist"
)

// Bounds is the authority of a run: its grant, narrowed by everything
// above it, and the ceiling every approved widening must stay inside.
// Resolve is the one place a grant is narrowed to its bounds.
type Bounds struct {
	// Grant is the grant the command runs under.
	Grant grant.Grant
	// Ceiling bounds the alternatives offered and the widenings approved.
	Ceiling escalate.Ceiling
	// Notes say, in words, what was narrowed and why.
	Notes []string
}

// Resolve computes the bounds of a run from the requested grant (a grant
// spec), the requested ceiling ("" when not given) and where it came from
// (a grant.Ceiling* place; "" means grant.CeilingFlag), and the invoking
// environment. A nested wrun can only narrow: the grant is narrowed to the
// grant and ceiling an enclosing wrun exported (WRUN_GRANT, WRUN_CEILING),
// and then to the ceiling; the ceiling never exceeds the enclosing run's
// grant. The kernel enforces that anyway, since sandboxes stack; narrowing
// here keeps what wrun says true.
func Resolve(grantSpec, ceilingSpec, ceilingSource string, env []string) (Bounds, error) {
	ceiling, cnotes, err := ceilingFrom(ceilingSpec, ceilingSource, env)
	if err != nil {
		return Bounds{}, err
	}
	g, notes, err := effectiveGrant(grantSpec, env)
	if err != nil {
		return Bounds{}, err
	}
	notes = append(notes, cnotes...)
	if ceiling.Source == grant.CeilingDefault {
		// Nobody set a ceiling: it is the user's own authority, which
		// includes whatever the user granted explicitly (desktop=on).
		ceiling.Grant = ceiling.Grant.Union(g)
	}
	if n, ex := g.Narrow(ceiling.Grant); len(ex) > 0 {
		notes = append(notes, "grant narrowed to the ceiling ("+ceiling.String()+"): "+strings.Join(ex, "; "))
		g = n
	}
	return Bounds{Grant: g, Ceiling: ceiling, Notes: notes}, nil
}

// effectiveGrant parses the requested grant and narrows it to any grant or
// ceiling an enclosing wrun exported (WRUN_GRANT, WRUN_CEILING). It
// returns notes on any narrowing.
func effectiveGrant(spec string, env []string) (grant.Grant, []string, error) {
	g, err := grant.Parse(spec)
	if err != nil {
		return grant.Grant{}, nil, fmt.Errorf("--grant: %w", err)
	}
	var notes []string
	for _, name := range []string{grant.EnvGrant, grant.EnvCeiling} {
		v, ok := envlist.Lookup(env, name)
		if !ok || v == "" {
			continue
		}
		limit, err := grant.Parse(v)
		if err != nil {
			return grant.Grant{}, nil, fmt.Errorf("%s (set by an enclosing wrun) is not a grant: %w", name, err)
		}
		if n, ex := g.Narrow(limit); len(ex) > 0 {
			notes = append(notes, fmt.Sprintf("grant narrowed to the enclosing wrun's %s: %s", name, strings.Join(ex, "; ")))
			g = n
		}
	}
	return g, notes, nil
}

// ceilingFrom computes the ceiling: the requested one (spec, "" when not
// given, set at source: grant.CeilingFlag when ""), else WRUN_CEILING
// from env, else grant.DefaultBound(). A requested ceiling can only
// narrow an inherited WRUN_CEILING, and inside another wrun (WRUN_GRANT
// set) the ceiling never exceeds the enclosing run's grant. The notes say
// what was narrowed; the source says it too.
func ceilingFrom(spec, source string, env []string) (escalate.Ceiling, []string, error) {
	c := grant.DefaultBound()
	src := grant.CeilingDefault
	var notes []string
	inherited := false
	if v, ok := envlist.Lookup(env, grant.EnvCeiling); ok && v != "" {
		b, err := grant.ParseBound(v)
		if err != nil {
			return escalate.Ceiling{}, nil, fmt.Errorf("%s (set by an enclosing wrun) is not a ceiling: %w", grant.EnvCeiling, err)
		}
		c, src, inherited = b, grant.EnvCeiling, true
	}
	if spec != "" {
		if source == "" {
			source = grant.CeilingFlag
		}
		b, err := grant.ParseBound(spec)
		if err != nil {
			return escalate.Ceiling{}, nil, fmt.Errorf("ceiling (%s): %w", source, err)
		}
		src = source
		if n, ex := b.Narrow(c); inherited && len(ex) > 0 {
			notes = append(notes, "the ceiling ("+source+") narrowed to the inherited "+grant.EnvCeiling+": "+strings.Join(ex, "; "))
			b, src = n, grant.NarrowedBy(src, grant.EnvCeiling)
		}
		c = b
	}
	if v, ok := envlist.Lookup(env, grant.EnvGrant); ok && v != "" {
		parent, err := grant.Parse(v)
		if err != nil {
			return escalate.Ceiling{}, nil, fmt.Errorf("%s (set by an enclosing wrun) is not a grant: %w", grant.EnvGrant, err)
		}
		if n, ex := c.Grant.Narrow(parent); len(ex) > 0 {
			notes = append(notes, "ceiling narrowed to the enclosing wrun's grant: "+strings.Join(ex, "; "))
			c.Grant = n
			src = grant.NarrowedBy(src, grant.EnvGrant)
		}
	}
	return escalate.Ceiling{Grant: c.Grant, Write: c.Write, Source: src}, notes, nil
}
