package tools

import (
	"fmt"
	"slices"
	"strings"
)

// Family is a kind of tool a grant may give a child.
type Family string

// The tool families.
const (
	Read    Family = "read"    // read files, list directories
	Search  Family = "search"  // search file names and contents
	Edit    Family = "edit"    // create, change or delete files
	Shell   Family = "shell"   // run commands
	Web     Family = "web"     // fetch pages, search the web
	Spawn   Family = "spawn"   // start sub-agents
	MCP     Family = "mcp"     // call MCP servers' tools
	Desktop Family = "desktop" // see or drive the screen, keyboard and mouse
	// Control: the harness's own control of the session (a to-do list, a
	// plan, a question to the user, saying the task is done). Such a tool
	// reads and writes nothing the grant governs, so every preset carries
	// the family.
	Control Family = "control"
)

// Families returns every family, in a fixed order.
func Families() []Family {
	return []Family{Read, Search, Edit, Shell, Web, Spawn, MCP, Desktop, Control}
}

// FamilyNames returns every family's name, in Families' order.
func FamilyNames() []string {
	var out []string
	for _, f := range Families() {
		out = append(out, string(f))
	}
	return out
}

// ParseFamily returns the family named s.
func ParseFamily(s string) (Family, error) {
	if slices.Contains(Families(), Family(s)) {
		return Family(s), nil
	}
	return "", fmt.Errorf("%q is not a tool family; families are %s", s, strings.Join(FamilyNames(), ", "))
}

// sortFamilies sorts fs in Families' order and drops duplicates.
func sortFamilies(fs []Family) []Family {
	out := slices.Clone(fs)
	slices.SortFunc(out, func(a, b Family) int {
		return slices.Index(Families(), a) - slices.Index(Families(), b)
	})
	return slices.Compact(out)
}
