package tools

import (
	"bytes"
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	in := `[
  {"name": "Read", "description": "reads", "input_schema": {"type": "object"}},
  {"name": "Bash", "x-extra": [1, 2, {"k": "\u00e9"}]},
  {"name": "mcp__docs__get"},
  {"name": "get", "server": "docs", "annotations": {"readOnlyHint": true}},
  {"name": "computer"},
  {"name": "frobnicate"}
]`
	entries, err := ParseCatalogue([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	g := Grant{Families: []Family{Read, Search, MCP}}
	vis, ds := Filter(g, Labels{Servers: map[string]Family{"docs": Read}}, entries, "")
	if len(ds) != 6 {
		t.Fatalf("%d decisions, want 6", len(ds))
	}
	var b bytes.Buffer
	if err := WriteCatalogue(&b, vis); err != nil {
		t.Fatal(err)
	}
	want := `[
  {"name": "Read", "description": "reads", "input_schema": {"type": "object"}},
  {"name": "mcp__docs__get"},
  {"name": "get", "server": "docs", "annotations": {"readOnlyHint": true}}
]
`
	if b.String() != want {
		t.Fatalf("filtered catalogue:\n%s\nwant:\n%s", b.String(), want)
	}
	for i, d := range ds {
		if d.Allowed != (i == 0 || i == 2 || i == 3) {
			t.Errorf("entry %d (%s): allowed=%v denial=%s", i, d.Name, d.Allowed, d.Denial)
		}
	}
	var empty bytes.Buffer
	if err := WriteCatalogue(&empty, nil); err != nil || empty.String() != "[]\n" {
		t.Errorf("empty catalogue written as %q, %v", empty.String(), err)
	}
}

func TestParseCatalogueRefuses(t *testing.T) {
	tests := []struct{ in, err string }{
		{`{"name": "Read"}`, "want a JSON array"},
		{`null`, "got null"},
		{`[1]`, "not a JSON object"},
		{`[{"description": "x"}]`, `no "name"`},
		{`[{"name": ""}]`, `no "name"`},
		{`[{"name": 3}]`, `"name" is not a string`},
		{`[{"name": "Read", "server": ""}]`, `"server" is empty`},
		{`[{"name": "mcp__evil__x", "name": "Read"}]`, `"name" given twice`},
		{`[{"name": "Read", "server": "a", "server": "b"}]`, `"server" given twice`},
		{"[{\"name\": \"Read\xff\"}]", "not UTF-8"},
		{`[{"name": "Read"}] [1]`, "want a JSON array"},
	}
	for _, tc := range tests {
		_, err := ParseCatalogue([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseCatalogue(%s) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestCatalogueNamesAreExact: a member spelt "Name" or "NAME" is not the
// name (encoding/json would match it case-insensitively and decide on a
// different name than the harness shows).
func TestCatalogueNamesAreExact(t *testing.T) {
	entries, err := ParseCatalogue([]byte(`[{"name": "mcp__evil__x", "Name": "Read", "NAME": "Read", "Server": "docs"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if entries[0].Name != "mcp__evil__x" || entries[0].Server != "" {
		t.Fatalf("read %+v", entries[0])
	}
	vis, _ := Filter(Grant{Families: Families(), Desktop: true}, Labels{Servers: map[string]Family{"docs": Read}}, entries, "r")
	if len(vis) != 0 {
		t.Fatal("an unlabelled MCP tool is visible through a case-folded member")
	}
}
