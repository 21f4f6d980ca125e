package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestParseShapes: each shape the main harnesses emit is read to the
// tools it holds, and what the grant gives is written back in the same
// shape, the rest of the document untouched. The grant: read and control,
// the docs MCP server labelled read.
func TestParseShapes(t *testing.T) {
	g := Grant{Families: []Family{Read, Search, MCP, Control}}
	l := Labels{Servers: map[string]Family{"docs": Read}}
	tests := []struct {
		name, shape, in, server string
		tools                   string // name@server, in order
		out                     string
	}{
		{name: "wrun's own", shape: ShapeArray,
			in:    `[{"name": "Read"}, {"name": "get", "server": "docs"}, {"name": "Bash"}]`,
			tools: "Read@ get@docs Bash@",
			out:   "[\n  {\"name\": \"Read\"},\n  {\"name\": \"get\", \"server\": \"docs\"}\n]\n"},
		{name: "Anthropic request body", shape: ShapeTools,
			in:    `{"model": "m", "tools": [{"name": "TodoWrite", "input_schema": {"type": "object"}}, {"name": "Edit", "input_schema": {}}], "max_tokens": 5}`,
			tools: "TodoWrite@ Edit@",
			out:   "{\"model\": \"m\", \"tools\": [\n  {\"name\": \"TodoWrite\", \"input_schema\": {\"type\": \"object\"}}\n], \"max_tokens\": 5}\n"},
		{name: "OpenAI chat completions", shape: ShapeArray,
			in:    `[{"type": "function", "function": {"name": "update_plan", "parameters": {"type": "object"}}}, {"type": "function", "function": {"name": "shell"}}]`,
			tools: "update_plan@ shell@",
			out:   "[\n  {\"type\": \"function\", \"function\": {\"name\": \"update_plan\", \"parameters\": {\"type\": \"object\"}}}\n]\n"},
		{name: "OpenAI chat completions request body", shape: ShapeTools,
			in:    `{"tools": [{"type": "function", "function": {"name": "read_file"}}], "tool_choice": "auto"}`,
			tools: "read_file@",
			out:   "{\"tools\": [\n  {\"type\": \"function\", \"function\": {\"name\": \"read_file\"}}\n], \"tool_choice\": \"auto\"}\n"},
		{name: "OpenAI Responses", shape: ShapeArray,
			in:    `[{"type": "function", "name": "read_file", "parameters": {}}, {"type": "web_search_preview"}, {"type": "file_search", "vector_store_ids": ["v"]}, {"type": "mcp", "server_label": "docs", "server_url": "https://x"}, {"type": "custom", "name": "apply_patch"}]`,
			tools: "read_file@ web_search_preview@ file_search@ *@docs apply_patch@",
			out:   "[\n  {\"type\": \"function\", \"name\": \"read_file\", \"parameters\": {}},\n  {\"type\": \"file_search\", \"vector_store_ids\": [\"v\"]},\n  {\"type\": \"mcp\", \"server_label\": \"docs\", \"server_url\": \"https://x\"}\n]\n"},
		{name: "MCP tools/list result", shape: ShapeTools, server: "docs",
			in:    `{"tools": [{"name": "Read", "inputSchema": {}}, {"name": "search", "inputSchema": {}}], "nextCursor": "c"}`,
			tools: "Read@docs search@docs",
			out:   "{\"tools\": [\n  {\"name\": \"Read\", \"inputSchema\": {}},\n  {\"name\": \"search\", \"inputSchema\": {}}\n], \"nextCursor\": \"c\"}\n"},
		{name: "MCP tools/list response", shape: ShapeMCPResponse, server: "github",
			in:    `{"jsonrpc": "2.0", "id": 7, "result": {"tools": [{"name": "list_issues", "inputSchema": {}}]}}`,
			tools: "list_issues@github",
			out:   "{\"jsonrpc\": \"2.0\", \"id\": 7, \"result\": {\"tools\": []}}\n"},
		{name: "Gemini tools", shape: ShapeArray,
			in:    `[{"functionDeclarations": [{"name": "read_file", "parameters": {}}, {"name": "save_memory"}, {"name": "write_todos"}]}, {"googleSearch": {}}, {"codeExecution": {}}]`,
			tools: "read_file@ save_memory@ write_todos@ googleSearch@ codeExecution@",
			out:   "[\n  {\"functionDeclarations\": [{\"name\": \"read_file\", \"parameters\": {}}, {\"name\": \"write_todos\"}]}\n]\n"},
		{name: "one Gemini tool, snake case", shape: ShapeGemini,
			in:    `{"function_declarations": [{"name": "glob"}, {"name": "run_shell_command"}], "google_search": {}}`,
			tools: "glob@ run_shell_command@ google_search@",
			out:   "{\"function_declarations\": [{\"name\": \"glob\"}]}\n"},
		{name: "nothing left of a Gemini tool", shape: ShapeGemini,
			in:    `{"functionDeclarations": [{"name": "run_shell_command"}]}`,
			tools: "run_shell_command@",
			out:   "{}\n"},
	}
	for _, tc := range tests {
		c, err := Parse([]byte(tc.in), tc.server)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, e := range c.Entries {
			got = append(got, e.Name+"@"+e.Server)
		}
		if c.Shape != tc.shape || strings.Join(got, " ") != tc.tools {
			t.Errorf("%s: shape %s, tools %q; want %s, %q", tc.name, c.Shape, got, tc.shape, tc.tools)
			continue
		}
		_, ds := Filter(g, l, c.Entries, "")
		keep := make([]bool, len(ds))
		for i, d := range ds {
			keep[i] = d.Allowed
		}
		var b bytes.Buffer
		if err := c.Write(&b, keep); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.out {
			t.Errorf("%s: written\n%s\nwant\n%s", tc.name, b.String(), tc.out)
		}
		if !json.Valid(b.Bytes()) {
			t.Errorf("%s: not JSON: %s", tc.name, b.String())
		}
		// Written back whole, it reads the same tools (the control: the
		// writer changes nothing but the lists).
		all := make([]bool, len(c.Entries))
		for i := range all {
			all[i] = true
		}
		b.Reset()
		c.Write(&b, all)
		again, err := Parse(b.Bytes(), tc.server)
		if err != nil || len(again.Entries) != len(c.Entries) || again.Shape != c.Shape {
			t.Errorf("%s: written whole, it reads back as %v, %v", tc.name, again, err)
		}
	}
}

// TestParseShapesRefuses: what could make wrun decide on another tool
// than the harness shows, or on an MCP server's tools as a harness's own.
func TestParseShapesRefuses(t *testing.T) {
	tests := []struct{ in, server, err string }{
		{`{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "Read", "inputSchema": {}}]}}`, "", "name the server"},
		{`[{"name": "Read", "inputSchema": {}}]`, "", "MCP's inputSchema but no server"},
		{`{"tools": [{"name": "Bash", "inputSchema": {}}]}`, "", "MCP's inputSchema but no server"},
		{`[{"type": "function", "name": "Read", "function": {"name": "Bash"}}]`, "", "differ"},
		{`[{"type": "function", "function": {"description": "x"}}]`, "", `no "function.name"`},
		{`[{"type": "function", "function": {"name": "a"}, "function": {"name": "b"}}]`, "", `"function" given twice`},
		{`[{"type": "function", "type": "mcp", "name": "x"}]`, "", `"type" given twice`},
		{`{"tools": [], "tools": [{"name": "Bash"}]}`, "", `"tools" given twice`},
		{`[{"functionDeclarations": [{"name": "a"}], "function_declarations": [{"name": "b"}]}]`, "", "give one"},
		{`[{"functionDeclarations": [{"name": "a"}], "functionDeclarations": []}]`, "", "given twice"},
		{`[{"type": "mcp"}]`, "", "server_label"},
		{`[{"type": "function"}]`, "", `no "name"`},
		{`{"model": "m"}`, "", "want a JSON array"},
		{`{"result": {"content": []}}`, "docs", "not MCP's tools/list"},
		{`"Read"`, "", "want a JSON array"},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.in), tc.server)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Parse(%s) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestMCPServerToolNamedLikeABuiltin: a server's tool called Read is the
// server's, decided by the server's label, never the built-in Read.
func TestMCPServerToolNamedLikeABuiltin(t *testing.T) {
	c, err := Parse([]byte(`{"tools": [{"name": "Read", "inputSchema": {}}]}`), "evil")
	if err != nil {
		t.Fatal(err)
	}
	d := Decide(Grant{Families: Families(), Desktop: true}, Labels{}, Call{Name: c.Entries[0].Name, Server: c.Entries[0].Server})
	if d.Allowed || d.Denial != Unknown {
		t.Errorf("an unlabelled server's Read: %+v", d)
	}
}
