package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// Entry is one directory entry as Carve needs it.
type Entry struct {
	Name    string
	Symlink bool
}

// Lister lists a directory. OSLister is the real one.
type Lister func(dir string) ([]Entry, error)

// OSLister lists a directory of the real file system.
func OSLister(dir string) ([]Entry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(ents))
	for i, e := range ents {
		out[i] = Entry{Name: e.Name(), Symlink: e.Type()&fs.ModeSymlink != 0}
	}
	return out, nil
}

// Carve expresses "rules, except holes" with allow-only rules, for
// platforms (Landlock) that have no deny rule and where a right granted on
// a directory holds for everything beneath it.
//
// A rule that covers a hole is replaced by: the rule's path with only the
// rights no hole beneath it withholds, and, for each directory on the way
// down to the hole, a rule with the full rights on every sibling entry that
// does not lead to a hole. Symbolic links among the siblings get no rule
// (a rule would land on their target, which has rules of its own). Rules at
// inside a hole are explicit grants and are kept as they are.
//
// Carve reads directories when it runs, so entries created later in a
// carved directory get only the narrowed rights. A directory it cannot list
// gets no sibling rules (fail closed) and is reported in the notes.
func Carve(rules []Rule, holes []Hole, list Lister) ([]Rule, []string) {
	c := carver{list: list, out: map[string]*Rule{}}
	for _, r := range rules {
		var relevant []Hole
		for _, h := range holes {
			if h.Withheld&r.Access != 0 && Within(h.Path, r.Path) {
				relevant = append(relevant, h)
			}
		}
		c.carve(r, r.Access, relevant)
	}
	out := make([]Rule, 0, len(c.out))
	for _, r := range c.out {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, c.notes
}

type carver struct {
	list  Lister
	out   map[string]*Rule
	notes []string
}

func (c *carver) emit(tmpl Rule, path string, acc Access) {
	if acc == 0 {
		return
	}
	if r, ok := c.out[path]; ok {
		r.Access |= acc
		return
	}
	r := tmpl
	r.Path, r.Access = path, acc
	if path != tmpl.Path {
		r.Optional = true // a sibling may vanish before enforcement
		r.NoFollow = true
		r.Create = CreateNone
	}
	c.out[path] = &r
}

func (c *carver) carve(tmpl Rule, acc Access, holes []Hole) {
	path := tmpl.Path
	if len(holes) == 0 {
		c.emit(tmpl, path, acc)
		return
	}
	// A hole exactly here narrows what this path and everything below get.
	var below []Hole
	for _, h := range holes {
		if h.Path == path {
			acc &^= h.Withheld
		} else {
			below = append(below, h)
		}
	}
	if len(below) == 0 {
		c.emit(tmpl, path, acc)
		return
	}
	var withheld Access
	for _, h := range below {
		withheld |= h.Withheld
	}
	here := acc &^ withheld
	c.emit(tmpl, path, here)
	rest := acc &^ here
	if rest == 0 {
		return
	}
	ents, err := c.list(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.notes = append(c.notes, "could not list "+path+" to open its entries around a hidden path: "+err.Error())
		}
		return
	}
	// Group the holes by the child entry they lie under.
	byChild := map[string][]Hole{}
	for _, h := range below {
		rel, err := filepath.Rel(path, h.Path)
		if err != nil {
			continue
		}
		first := rel
		if i := indexSep(rel); i >= 0 {
			first = rel[:i]
		}
		byChild[first] = append(byChild[first], h)
	}
	for _, e := range ents {
		child := filepath.Join(path, e.Name)
		if hs, ok := byChild[e.Name]; ok {
			if e.Symlink {
				continue // a hole's path through a link: the link itself holds nothing
			}
			sub := tmpl
			sub.Path = child
			c.carve(sub, rest, slices.Clone(hs))
			continue
		}
		if e.Symlink {
			continue
		}
		c.emit(tmpl, child, rest)
	}
}

func indexSep(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
