package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"
)

// fakeTree is a directory tree for Carve: dir -> entries; a trailing "@"
// marks a symlink.
type fakeTree map[string][]string

func (t fakeTree) list(dir string) ([]Entry, error) {
	names, ok := t[dir]
	if !ok {
		return nil, fmt.Errorf("list %s: %w", dir, fs.ErrNotExist)
	}
	var out []Entry
	for _, n := range names {
		out = append(out, Entry{Name: strings.TrimSuffix(n, "@"), Symlink: strings.HasSuffix(n, "@")})
	}
	return out, nil
}

func render(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Path+" "+r.Access.String())
	}
	sort.Strings(out)
	return out
}

func TestCarve(t *testing.T) {
	tree := fakeTree{
		"/":                 {"bin@", "dev", "etc", "home", "usr"},
		"/home":             {"u", "v"},
		"/home/u":           {".bashrc", ".ssh", ".config", "proj", "link@"},
		"/home/u/.ssh":      {"id_ed25519"},
		"/home/u/proj":      {".git", "src"},
		"/home/u/proj/.git": {"config", "hooks", "objects"},
		"/home/u/.config":   {"gh", "nvim"},
		"/dev":              {"null", "pts", "shm"},
	}
	secret := All &^ ReadDir
	tests := []struct {
		name  string
		rules []Rule
		holes []Hole
		want  []string
	}{
		{
			name:  "no holes keeps rules",
			rules: []Rule{{Path: "/", Access: ReadExec}},
			want:  []string{"/ execute,read_file,read_dir"},
		},
		{
			name:  "hole elsewhere keeps rules",
			rules: []Rule{{Path: "/home/u/proj", Access: ReadWrite}},
			holes: []Hole{{Path: "/home/u/.ssh", Withheld: secret}},
			want:  []string{"/home/u/proj " + ReadWrite.String()},
		},
		{
			name:  "hole below a read rule opens its siblings; listing stays on the ancestors",
			rules: []Rule{{Path: "/", Access: ReadExec}},
			holes: []Hole{{Path: "/home/u/.ssh", Withheld: secret}},
			want: []string{
				"/ read_dir",
				"/dev execute,read_file",
				"/etc execute,read_file",
				"/home/u/.bashrc execute,read_file",
				"/home/u/.config execute,read_file",
				"/home/u/proj execute,read_file",
				"/home/v execute,read_file",
				"/usr execute,read_file",
			},
		},
		{
			name:  "two holes in one directory and a nested one",
			rules: []Rule{{Path: "/home/u", Access: ReadExec}},
			holes: []Hole{
				{Path: "/home/u/.ssh", Withheld: secret},
				{Path: "/home/u/.config/gh", Withheld: secret},
			},
			want: []string{
				"/home/u read_dir",
				"/home/u/.bashrc execute,read_file",
				"/home/u/.config/nvim execute,read_file",
				"/home/u/proj execute,read_file",
			},
		},
		{
			name:  "a hole that withholds listing too removes it from ancestors",
			rules: []Rule{{Path: "/home/u", Access: Read}},
			holes: []Hole{{Path: "/home/u/proj", Withheld: All}},
			want: []string{
				"/home/u/.bashrc read_file,read_dir",
				"/home/u/.config read_file,read_dir",
				"/home/u/.ssh read_file,read_dir",
			},
		},
		{
			name:  "write holes inside a writable workspace",
			rules: []Rule{{Path: "/home/u/proj", Access: ReadWrite}},
			holes: []Hole{
				{Path: "/home/u/proj/.git/config", Withheld: Write},
				{Path: "/home/u/proj/.git/hooks", Withheld: Write},
			},
			want: []string{
				"/home/u/proj execute,read_file,read_dir",
				"/home/u/proj/.git/objects " + Write.String(),
				"/home/u/proj/src " + Write.String(),
			},
		},
		{
			name:  "a hole exactly at a rule narrows it",
			rules: []Rule{{Path: "/home/u/.ssh", Access: ReadExec}},
			holes: []Hole{{Path: "/home/u/.ssh", Withheld: secret}},
			want:  []string{"/home/u/.ssh read_dir"},
		},
		{
			name:  "a rule inside a hole is explicit and kept",
			rules: []Rule{{Path: "/", Access: ReadExec}, {Path: "/dev/null", Access: ReadFile | WriteExisting}},
			holes: []Hole{{Path: "/dev", Withheld: secret}, {Path: "/dev/pts", Withheld: secret}},
			want: []string{
				"/ read_dir",
				"/dev/null write_file,read_file,truncate",
				"/etc execute,read_file",
				"/home execute,read_file",
				"/usr execute,read_file",
			},
		},
		{
			name:  "a hole under a missing directory leaves ancestors narrowed",
			rules: []Rule{{Path: "/home/v", Access: ReadExec}},
			holes: []Hole{{Path: "/home/v/.ssh", Withheld: secret}},
			want:  []string{"/home/v read_dir"},
		},
		{
			name:  "a hole whose withheld rights the rule lacks changes nothing",
			rules: []Rule{{Path: "/home/u", Access: ReadExec}},
			holes: []Hole{{Path: "/home/u/proj/.git/hooks", Withheld: Write}},
			want:  []string{"/home/u execute,read_file,read_dir"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := Carve(tc.rules, tc.holes, tree.list)
			if len(notes) != 0 {
				t.Errorf("notes: %q", notes)
			}
			if g, w := strings.Join(render(got), "\n"), strings.Join(tc.want, "\n"); g != w {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// TestCarveNeverCoversAHole checks the property Carve exists for, on every
// path of the tree: no resulting rule grants a withheld right on a hole or
// beneath it, and every path outside holes keeps all its rights.
func TestCarveNeverCoversAHole(t *testing.T) {
	tree := fakeTree{
		"/":      {"a", "b", "c"},
		"/a":     {"x", "y", "z"},
		"/a/x":   {"1", "2"},
		"/a/x/1": {"deep"},
		"/b":     {"q"},
		"/c":     {},
	}
	var all []string
	var walk func(string)
	walk = func(d string) {
		all = append(all, d)
		ents, _ := tree.list(d)
		for _, e := range ents {
			c := d + "/" + e.Name
			if d == "/" {
				c = "/" + e.Name
			}
			walk(c)
		}
	}
	walk("/")
	holeSets := [][]Hole{
		{{Path: "/a/x/1", Withheld: ReadFile}},
		{{Path: "/a/x", Withheld: All}, {Path: "/b/q", Withheld: Write}},
		{{Path: "/a", Withheld: ReadFile | Execute}, {Path: "/a/x/1/deep", Withheld: All}},
		{{Path: "/c", Withheld: All &^ ReadDir}, {Path: "/a/y", Withheld: All &^ ReadDir}},
	}
	for i, holes := range holeSets {
		rules, _ := Carve([]Rule{{Path: "/", Access: All}}, holes, tree.list)
		effective := func(p string) Access {
			var a Access
			for _, r := range rules {
				if Within(p, r.Path) {
					a |= r.Access
				}
			}
			return a
		}
		for _, p := range all {
			want := All
			for _, h := range holes {
				if Within(p, h.Path) {
					want &^= h.Withheld
				}
			}
			got := effective(p)
			// Ancestors of holes may lose rights; nothing may gain any.
			if got&^want != 0 {
				t.Errorf("set %d: %s gets %v beyond %v", i, p, got&^want, want)
			}
			onHolePath := false
			for _, h := range holes {
				if Within(h.Path, p) {
					onHolePath = true
				}
			}
			if !onHolePath && got != want {
				t.Errorf("set %d: %s lost %v", i, p, want&^got)
			}
		}
	}
}

func TestCarveReportsUnlistable(t *testing.T) {
	list := func(dir string) ([]Entry, error) { return nil, errors.New("permission denied") }
	rules, notes := Carve([]Rule{{Path: "/", Access: ReadExec}}, []Hole{{Path: "/x/y", Withheld: ReadFile}}, list)
	if len(notes) != 1 || !strings.Contains(notes[0], "could not list /") {
		t.Errorf("notes = %q", notes)
	}
	if got := render(rules); len(got) != 1 || got[0] != "/ execute,read_dir" {
		t.Errorf("rules = %q", got)
	}
}
