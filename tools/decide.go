package tools

import (
	"slices"
	"strings"
)

// Grant is what the decision needs of a grant: the families it has and
// whether its desktop field is on.
type Grant struct {
	Families []Family
	Desktop  bool
}

// Call is one tool, as a harness names it: its name, the MCP server it
// belongs to ("" for a harness's own tool) and, for a desktop tool, the
// reason recorded for using it.
type Call struct {
	Name   string
	Server string
	Reason string
}

// Denial says why a tool is denied.
type Denial string

// The denials.
const (
	// Unknown: neither the built-in table nor a label classifies the tool.
	Unknown Denial = "unknown"
	// NotGranted: the tool needs a family the grant does not have.
	NotGranted Denial = "not-granted"
	// DesktopRequiresReason: a desktop tool was asked for without a reason.
	DesktopRequiresReason Denial = "desktop-requires-reason"
)

// Decision is the answer for one tool.
type Decision struct {
	Name    string
	Server  string   // the MCP server, "" for a harness's own tool
	Allowed bool     // the grant gives the tool
	Needs   []Family // every family the tool needs (nil when unknown)
	// From says what classified the tool: "built-in", "label:tool",
	// "label:server", each with "+repository" when a repository's file
	// added families.
	From    string
	Denial  Denial   // "" when allowed
	Missing []Family // for NotGranted: the families the grant lacks
	// DesktopOff is set with NotGranted when the grant's desktop field is
	// off: no tools= alone can give a desktop tool.
	DesktopOff bool
	Reason     string // the recorded reason, for a desktop tool
}

// Decide is the one decision: whether grant g gives the tool c, with the
// labels l. It is fail closed: a tool nothing classifies is denied.
func Decide(g Grant, l Labels, c Call) Decision {
	d := Decision{Name: c.Name, Server: c.Server}
	needs, from, ok := classify(l, c)
	if !ok {
		d.Denial = Unknown
		return d
	}
	d.Needs, d.From = needs, from
	have := g.Families
	if !g.Desktop {
		// desktop=off: the desktop family is not held, whatever the list says.
		have = slices.DeleteFunc(slices.Clone(have), func(f Family) bool { return f == Desktop })
	}
	for _, f := range needs {
		if !slices.Contains(have, f) {
			d.Missing = append(d.Missing, f)
		}
	}
	if len(d.Missing) > 0 {
		d.Denial = NotGranted
		d.DesktopOff = slices.Contains(needs, Desktop) && !g.Desktop
		return d
	}
	if slices.Contains(needs, Desktop) {
		if !validReason(c.Reason) {
			d.Denial = DesktopRequiresReason
			return d
		}
		d.Reason = c.Reason
	}
	d.Allowed = true
	return d
}

// validReason: a recorded reason says something, on one line.
func validReason(r string) bool {
	return strings.TrimSpace(r) != "" && !strings.ContainsFunc(r, isControl)
}

// MCPName returns the canonical name of MCP server's tool:
// "mcp__SERVER__TOOL".
func MCPName(server, tool string) string {
	return "mcp__" + server + "__" + tool
}

// splitMCP reads "mcp__SERVER__TOOL". The server is what comes before the
// first "__" after the prefix (a server name never contains "__").
func splitMCP(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "__")
	if !found || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// classify returns the families tool c needs, what classified it, and
// whether anything did.
func classify(l Labels, c Call) ([]Family, string, bool) {
	if strings.ContainsFunc(c.Name, isControl) || strings.ContainsFunc(c.Server, isControl) || c.Name == "" {
		return nil, "", false
	}
	server, tool, isMCP := splitMCP(c.Name)
	switch {
	case isMCP && c.Server != "" && c.Server != server:
		// The name says one server, the catalogue another: trust neither.
		return nil, "", false
	case !isMCP && c.Server != "":
		server, tool, isMCP = c.Server, c.Name, true
	case !isMCP && strings.HasPrefix(c.Name, "mcp__"):
		// Looks like an MCP name but does not parse: not classified.
		return nil, "", false
	}
	if !isMCP {
		f, ok := Builtin(c.Name)
		from := "built-in"
		if !ok {
			f, ok = l.Tools[c.Name]
			from = "label:tool"
		}
		if !ok || !validFamily(f) {
			return nil, "", false
		}
		needs := []Family{f}
		if extra, ok := l.NarrowTools[c.Name]; ok {
			needs = append(needs, extra...)
			from += "+repository"
		}
		if !allValid(needs) {
			return nil, "", false
		}
		return sortFamilies(needs), from, true
	}
	if strings.Contains(server, "__") {
		return nil, "", false
	}
	canon := MCPName(server, tool)
	f, ok := l.Tools[canon]
	from := "label:tool"
	if !ok {
		f, ok = l.Servers[server]
		from = "label:server"
	}
	if !ok || !validFamily(f) {
		return nil, "", false
	}
	needs := []Family{MCP, f}
	narrowed := false
	if extra, ok := l.NarrowServers[server]; ok {
		needs, narrowed = append(needs, extra...), true
	}
	if extra, ok := l.NarrowTools[canon]; ok {
		needs, narrowed = append(needs, extra...), true
	}
	if narrowed {
		from += "+repository"
	}
	if !allValid(needs) {
		return nil, "", false
	}
	return sortFamilies(needs), from, true
}

func validFamily(f Family) bool { return slices.Contains(Families(), f) }

func allValid(fs []Family) bool {
	for _, f := range fs {
		if !validFamily(f) {
			return false
		}
	}
	return true
}
