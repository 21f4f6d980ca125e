package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecide: whatever the name, server, reason and grant (every family,
// desktop=on), a tool is allowed only if the built-in table or a label
// classifies it. The labels are fixed; the fuzzer also chooses one more
// label key, and a tool named by no label key is never allowed unless
// built in.
func FuzzDecide(f *testing.F) {
	for _, s := range [][4]string{
		{"Read", "", "", ""}, {"mcp__docs__get", "", "", ""}, {"get", "docs", "", ""},
		{"mcp__docs__get", "github", "", ""}, {"x", "", "", "x"}, {"mcp__a__b", "", "r", "mcp__a__b"},
		{"computer", "", "why", ""}, {"mcp__docs____x", "", "", ""}, {"mcp__d__o__c", "d", "", "d"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, name, server, reason, key string) {
		l := Labels{
			Tools:   map[string]Family{"mcp__github__pr": Edit},
			Servers: map[string]Family{"docs": Read},
		}
		if _, builtin := Builtin(key); !builtin && key != "" {
			l.Tools[key] = Web
		}
		g := Grant{Families: Families(), Desktop: true}
		for _, e := range []string{"", "x"} {
			d := Decide(g, l, Call{Name: name, Server: server, Reason: reason + e})
			if !d.Allowed {
				continue
			}
			_, builtin := Builtin(name)
			canon := name
			if server != "" && !strings.HasPrefix(name, "mcp__") {
				canon = MCPName(server, name)
				builtin = false
			}
			s, _, isMCP := splitMCP(canon)
			labelled := l.Tools[canon] != "" || isMCP && l.Servers[s] != ""
			if !builtin && !labelled {
				t.Fatalf("Decide(%q, server %q) allowed an unclassified tool: %+v", name, server, d)
			}
			if server != "" && isMCP && s != server {
				t.Fatalf("Decide(%q, server %q) allowed a tool whose name names another server", name, server)
			}
		}
		// Under a grant with no families nothing at all is allowed.
		if d := Decide(Grant{Desktop: true}, l, Call{Name: name, Server: server, Reason: reason}); d.Allowed {
			t.Fatalf("Decide(%q) allowed with no families", name)
		}
	})
}

// FuzzFilter: whatever catalogue a harness hands over, the visible part
// under every family and no labels holds only built-in tools of no
// server; the name decided on is the one a strict reader sees; and what
// is written back reads as exactly the visible tools, in the same shape.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{`[{"name":"Read"}]`, `[{"name":"mcp__a__b","Name":"Read"}]`, `[{"name":"x","server":"s"}]`, `[{"name":"\u0052ead"}]`, `[]`, `[{"name":"Bash","name":"x"}]`,
		`{"tools":[{"type":"function","function":{"name":"Read"}}],"x":1}`, `[{"functionDeclarations":[{"name":"glob"},{"name":"x"}],"googleSearch":{}}]`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"Read","inputSchema":{}}]}}`, `[{"type":"web_search_preview"},{"type":"mcp","server_label":"s"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "")
		if err != nil {
			return
		}
		vis, ds := Filter(Grant{Families: Families(), Desktop: true}, Labels{}, c.Entries, "r")
		if len(ds) != len(c.Entries) {
			t.Fatalf("%d decisions for %d entries", len(ds), len(c.Entries))
		}
		keep := make([]bool, len(ds))
		for i, d := range ds {
			keep[i] = d.Allowed
		}
		for _, e := range vis {
			if _, ok := Builtin(e.Name); !ok || e.Server != "" {
				t.Fatalf("visible without a classification: %+v", e)
			}
			var m map[string]any
			if json.Unmarshal(e.Raw, &m) != nil || m["name"] == nil && m["type"] == nil && m["function"] == nil {
				continue // a Gemini member's value, named by its key
			}
			seen := m["name"]
			if fn, ok := m["function"].(map[string]any); ok && m["type"] == "function" {
				seen = fn["name"]
			} else if seen == nil {
				seen = m["type"]
			}
			if seen != e.Name {
				t.Fatalf("decided on %q, a reader sees %v", e.Name, seen)
			}
		}
		var b bytes.Buffer
		if err := c.Write(&b, keep); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b.Bytes(), "")
		if err != nil {
			t.Fatalf("the written catalogue does not read back: %v\n%s", err, b.String())
		}
		if again.Shape != c.Shape || len(again.Entries) != len(vis) {
			t.Fatalf("written back: shape %s, %d tools; want %s, %d\n%s", again.Shape, len(again.Entries), c.Shape, len(vis), b.String())
		}
		for i, e := range again.Entries {
			if e.Name != vis[i].Name || e.Server != vis[i].Server {
				t.Fatalf("tool %d written back as %s@%s, want %s@%s", i, e.Name, e.Server, vis[i].Name, vis[i].Server)
			}
		}
	})
}
