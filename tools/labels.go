package tools

import (
	"fmt"
	"sort"
	"strings"
)

// Labels classify tools the built-in table does not: the user's labels
// give an MCP server, an MCP tool or another tool its family; a
// repository's labels can only add families a tool also needs.
//
// An MCP tool is named in Tools by its canonical name "mcp__SERVER__TOOL",
// whatever name the harness shows it under.
type Labels struct {
	// Tools maps a tool name to its family (the user's labels).
	Tools map[string]Family
	// Servers maps an MCP server to the family of all its tools (the
	// user's labels); a label on the tool itself takes precedence.
	Servers map[string]Family
	// NarrowTools and NarrowServers are a repository's labels: families a
	// tool, or every tool of a server, needs in addition to its own.
	// They never classify a tool that is otherwise unclassified.
	NarrowTools   map[string][]Family
	NarrowServers map[string][]Family
}

// Check reports the first thing wrong with the labels: an unknown family
// or an empty name. A user label on a name the built-in table classifies
// is not wrong but has no effect (the table is not relabelled: a
// repository's narrowing is the way to require more of a built-in tool):
// Shadowed names them, since the table grows and a label written for a
// tool it did not know yet must not make every decision fail.
func (l Labels) Check() error {
	for _, name := range sortedKeys(l.Tools) {
		if err := checkName("tool", name); err != nil {
			return err
		}
		if _, err := ParseFamily(string(l.Tools[name])); err != nil {
			return fmt.Errorf("tool %q: %w", name, err)
		}
	}
	for _, name := range sortedKeys(l.Servers) {
		if err := checkServer(name); err != nil {
			return err
		}
		if _, err := ParseFamily(string(l.Servers[name])); err != nil {
			return fmt.Errorf("server %q: %w", name, err)
		}
	}
	for _, m := range []map[string][]Family{l.NarrowTools, l.NarrowServers} {
		for _, name := range sortedKeys(m) {
			if err := checkName("tool or server", name); err != nil {
				return err
			}
			for _, f := range m[name] {
				if _, err := ParseFamily(string(f)); err != nil {
					return fmt.Errorf("%q: %w", name, err)
				}
			}
		}
	}
	return nil
}

// Shadowed says, for each user label on a name the built-in table
// classifies, that the label has no effect and what the table says.
func (l Labels) Shadowed() []string {
	var out []string
	for _, name := range sortedKeys(l.Tools) {
		if f, ok := Builtin(name); ok {
			out = append(out, fmt.Sprintf("the label %s = %q has no effect: %s is built in as %s, and a label cannot change a built-in tool's family", name, l.Tools[name], name, f))
		}
	}
	return out
}

func checkName(what, name string) error {
	if strings.TrimSpace(name) == "" || strings.ContainsFunc(name, isControl) {
		return fmt.Errorf("%s name %q: a name is non-empty and has no control characters", what, name)
	}
	return nil
}

func checkServer(name string) error {
	if err := checkName("server", name); err != nil {
		return err
	}
	if strings.Contains(name, "__") {
		return fmt.Errorf("server name %q: it contains \"__\", which separates server from tool in mcp__SERVER__TOOL", name)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
