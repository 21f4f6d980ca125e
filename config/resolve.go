package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
)

// Flags are the command line's say in a run's settings.
type Flags struct {
	// Grant is --grant ("" when not given).
	Grant string
	// Ceiling is --ceiling ("" when not given).
	Ceiling string
	// Role, Model and Thinking are --role, --model and --thinking.
	Role, Model, Thinking string
}

// Request is what one run asks for, each part with its source: the grant
// spec and ceiling spec go to run.Resolve, which narrows the grant to its
// bounds.
type Request struct {
	Grant   Value[string]
	Ceiling Value[string] // V "" means none set: the user's own authority
	// CeilingPlace says where Ceiling came from as a request's
	// ceiling_source says it: grant.CeilingFlag, grant.CeilingUserConfig,
	// grant.CeilingRepoConfig, with " narrowed by ..." for a --ceiling the
	// configured one narrowed; "" when none was set.
	CeilingPlace string
	// Role is the role's name ("" without --role).
	Role     string
	Model    Value[string]
	Thinking Value[string]
	// ConductorDir is set for the conductor role: the directory it writes
	// without asking.
	ConductorDir string
	// Notes say what was narrowed.
	Notes []string
}

// Resolve applies the flags to the effective settings: built-in < user
// config < repository < flags. --role picks a role's grant, model and
// thinking; --grant then narrows the role's grant (with no role it
// replaces the default grant); --ceiling narrows the configured ceiling;
// --model and --thinking replace the role's. The thinking level must be
// one the model supports (the role's thinking_levels, else the model's
// in [models]).
func (e *Effective) Resolve(f Flags) (Request, error) {
	var r Request
	r.Grant = e.Grant
	r.Ceiling, r.CeilingPlace = e.Ceiling, e.CeilingPlace
	r.Thinking = Value[string]{"", SourceBuiltin}
	r.Model = Value[string]{"", SourceBuiltin}
	var levels []string
	levelsFrom := ""
	if f.Role != "" {
		role, ok := e.Roles[f.Role]
		if !ok {
			return Request{}, fmt.Errorf("--role %q: no such role; roles are %s (wrun roles lists them)", f.Role, strings.Join(e.RoleNames(), ", "))
		}
		r.Role = role.Name
		r.Grant = Value[string]{role.Grant, "role " + role.Name + " (" + role.Source + ")"}
		r.Model = Value[string]{role.Model, "role " + role.Name + " (" + role.Source + ")"}
		r.Thinking = Value[string]{role.Thinking, "role " + role.Name + " (" + role.Source + ")"}
		if role.ThinkingLevels != nil {
			levels, levelsFrom = role.ThinkingLevels, "role "+role.Name
		}
		if role.Name == Conductor {
			r.ConductorDir = e.ConductorDir.V
		}
	}
	if f.Grant != "" {
		g, err := grant.Parse(f.Grant)
		if err != nil {
			return Request{}, fmt.Errorf("--grant: %w", err)
		}
		if r.Role != "" {
			base := mustParse(r.Grant.V)
			n, ex := g.Narrow(base)
			if len(ex) > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("--grant narrowed to role %s's grant (%s): %s", r.Role, base.Compact(), strings.Join(wordsOf(ex), "; ")))
			}
			r.Grant = Value[string]{n.String(), r.Grant.Source + " narrowed by --grant"}
		} else {
			r.Grant = Value[string]{f.Grant, SourceFlag + " --grant"}
		}
	}
	if f.Ceiling != "" {
		g, err := grant.ParseBound(f.Ceiling)
		if err != nil {
			return Request{}, fmt.Errorf("--ceiling: %w", err)
		}
		r.CeilingPlace = grant.CeilingFlag
		if e.Ceiling.V != "" {
			limit := mustParseBound(e.Ceiling.V)
			if n, ex := g.Narrow(limit); len(ex) > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("--ceiling narrowed to the configured ceiling (%s, %s): %s", limit.Compact(), e.Ceiling.Source, strings.Join(wordsOf(ex), "; ")))
				g = n
				r.CeilingPlace = grant.NarrowedBy(grant.CeilingFlag, e.CeilingPlace)
			}
			r.Ceiling = Value[string]{g.String(), SourceFlag + " --ceiling within " + e.Ceiling.Source}
		} else {
			r.Ceiling = Value[string]{g.String(), SourceFlag + " --ceiling"}
		}
	}
	if f.Model != "" {
		if strings.ContainsAny(f.Model, " \t\n") {
			return Request{}, fmt.Errorf("--model %q: a model name has no spaces", f.Model)
		}
		r.Model = Value[string]{f.Model, SourceFlag + " --model"}
		if levelsFrom != "" && (r.Role == "" || e.Roles[r.Role].Model != f.Model) {
			levels, levelsFrom = nil, "" // the role's levels are its own model's
		}
	}
	if levels == nil && r.Model.V != "" {
		if m, ok := e.Models[r.Model.V]; ok {
			levels, levelsFrom = m.V, "model "+r.Model.V+" ("+m.Source+")"
		}
	}
	if f.Thinking != "" {
		r.Thinking = Value[string]{f.Thinking, SourceFlag + " --thinking"}
	}
	if t := r.Thinking.V; t != "" {
		if !slices.Contains(thinkingLevels, t) {
			return Request{}, fmt.Errorf("thinking %q (%s): want one of %s", t, r.Thinking.Source, strings.Join(thinkingLevels, ", "))
		}
		if levels != nil && !slices.Contains(levels, t) {
			model := r.Model.V
			if model == "" {
				model = "the role's model"
			}
			return Request{}, fmt.Errorf("thinking %q (%s): %s supports only %s (%s)", t, r.Thinking.Source, model, strings.Join(levels, ", "), levelsFrom)
		}
	}
	return r, nil
}

// RoleNames lists the roles, sorted.
func (e *Effective) RoleNames() []string {
	names := make([]string, 0, len(e.Roles))
	for n := range e.Roles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
