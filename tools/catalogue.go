package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// The shapes of catalogue Parse reads, as Catalogue.Shape names them.
const (
	// ShapeArray: a JSON array of tools. Each tool is an object with
	// "name" (wrun's own form, Anthropic's tools, OpenAI Responses'
	// function and custom tools) and, for an MCP tool, "server"; an
	// OpenAI chat-completions tool {"type": "function", "function":
	// {"name": ...}}; a hosted tool named by its "type" alone (OpenAI
	// Responses' {"type": "web_search_preview"}, {"type": "mcp",
	// "server_label": ...}); or a Gemini tool {"functionDeclarations":
	// [...]} whose declarations are the tools and whose other members
	// ({"googleSearch": {}}) are tools named by their key.
	ShapeArray = "array"
	// ShapeTools: an object with such an array in "tools" (a request
	// body of Anthropic's or OpenAI's APIs, the result of MCP's
	// tools/list); its other members pass through.
	ShapeTools = "tools"
	// ShapeMCPResponse: a JSON-RPC response to MCP's tools/list,
	// {"jsonrpc": "2.0", "id": ..., "result": {"tools": [...]}}.
	ShapeMCPResponse = "mcp-response"
	// ShapeGemini: one Gemini tool object, {"functionDeclarations": [...]}
	// (or "function_declarations").
	ShapeGemini = "gemini"
)

// Catalogue is a tool catalogue as a harness wrote it: the tools found in
// it, in order, and what it takes to write the part of it a grant gives
// back in the same shape.
type Catalogue struct {
	// Shape is the outermost form: ShapeArray, ShapeTools,
	// ShapeMCPResponse or ShapeGemini.
	Shape string
	// Entries are the tools, in the order they appear.
	Entries []Entry
	emit    func(b *bytes.Buffer, keep []bool)
}

// Parse reads a catalogue in any of the shapes the main harnesses emit
// (see the Shape constants). Members are matched by their exact names,
// and a member that decides which tool an object is (name, server,
// type, function, tools, result, functionDeclarations) given twice is
// refused, so that wrun decides on the same name a harness reads.
//
// server names the MCP server every tool without a "server" member
// belongs to ("" for none). A catalogue whose tools are MCP's own
// (an MCP tools/list response, or tools carrying MCP's "inputSchema")
// needs it: those tools are a server's, and a server may call a tool
// "Read" or "Bash"; without server such a catalogue is refused rather
// than decided as a harness's own tools.
func Parse(data []byte, server string) (*Catalogue, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("catalogue: not UTF-8")
	}
	p := &parser{server: server}
	c := &Catalogue{}
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return nil, errors.New("catalogue: want a JSON array of tools, or an object holding one in \"tools\": not one JSON value")
	}
	switch {
	case bytes.HasPrefix(data, []byte("[")):
		c.Shape = ShapeArray
		emit, err := p.list(data)
		if err != nil {
			return nil, err
		}
		c.emit = emit
	case bytes.HasPrefix(data, []byte("{")):
		ms, err := members(data)
		if err != nil {
			return nil, fmt.Errorf("catalogue: %w", err)
		}
		emit, shape, err := p.container(ms)
		if err != nil {
			return nil, err
		}
		c.Shape, c.emit = shape, emit
	case bytes.Equal(data, []byte("null")):
		return nil, errors.New("catalogue: want a JSON array of tools, got null")
	default:
		return nil, errors.New("catalogue: want a JSON array of tools, or an object holding one in \"tools\"")
	}
	c.Entries = p.entries
	return c, nil
}

// Write writes the catalogue in its own shape with only the tools keep
// says (by index in Entries); every object and member is as given, but
// for the lists of tools. A Gemini tool left without declarations or
// members is left out.
func (c *Catalogue) Write(w io.Writer, keep []bool) error {
	if len(keep) != len(c.Entries) {
		return fmt.Errorf("catalogue: %d decisions for %d tools", len(keep), len(c.Entries))
	}
	var b bytes.Buffer
	c.emit(&b, keep)
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}

// parser collects the entries of one catalogue.
type parser struct {
	server  string
	entries []Entry
}

// member is one member of a JSON object, in order.
type member struct {
	key string
	val json.RawMessage
}

// members reads a JSON object's members in order.
func members(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		out = append(out, member{key, val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

// one returns the value of key, refusing a key given twice.
func one(ms []member, key string) (json.RawMessage, bool, error) {
	var val json.RawMessage
	found := false
	for _, m := range ms {
		if m.key == key {
			if found {
				return nil, false, fmt.Errorf("member %q given twice", key)
			}
			val, found = m.val, true
		}
	}
	return val, found, nil
}

// str returns the string value of key, if it has one.
func str(ms []member, key string) (string, bool, error) {
	val, ok, err := one(ms, key)
	if err != nil || !ok {
		return "", false, err
	}
	var s string
	if err := json.Unmarshal(val, &s); err != nil {
		return "", false, fmt.Errorf("member %q is not a string", key)
	}
	return s, true, nil
}

// writeObject writes ms as a JSON object, the value of key written by
// emit instead.
func writeObject(b *bytes.Buffer, ms []member, replace map[string]func(*bytes.Buffer)) {
	b.WriteString("{")
	first := true
	for _, m := range ms {
		f, repl := replace[m.key]
		if repl && f == nil {
			continue // left out
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteString(": ")
		if repl {
			f(b)
		} else {
			b.Write(bytes.TrimSpace(m.val))
		}
	}
	b.WriteString("}")
}

// container reads an object holding a list of tools.
func (p *parser) container(ms []member) (func(*bytes.Buffer, []bool), string, error) {
	tools, hasTools, err := one(ms, "tools")
	if err != nil {
		return nil, "", fmt.Errorf("catalogue: %w", err)
	}
	result, hasResult, err := one(ms, "result")
	if err != nil {
		return nil, "", fmt.Errorf("catalogue: %w", err)
	}
	switch {
	case hasTools:
		emit, err := p.list(tools)
		if err != nil {
			return nil, "", err
		}
		return func(b *bytes.Buffer, keep []bool) {
			writeObject(b, ms, map[string]func(*bytes.Buffer){"tools": func(b *bytes.Buffer) { emit(b, keep) }})
		}, ShapeTools, nil
	case hasResult:
		rms, err := members(result)
		if err != nil {
			return nil, "", fmt.Errorf("catalogue: \"result\": %w", err)
		}
		inner, ok, err := one(rms, "tools")
		if err != nil || !ok {
			return nil, "", errors.New("catalogue: a JSON-RPC response without result.tools is not MCP's tools/list")
		}
		if p.server == "" {
			return nil, "", errors.New("catalogue: an MCP tools/list response lists one server's tools: name the server (--server NAME)")
		}
		emit, err := p.list(inner)
		if err != nil {
			return nil, "", err
		}
		return func(b *bytes.Buffer, keep []bool) {
			writeObject(b, ms, map[string]func(*bytes.Buffer){"result": func(b *bytes.Buffer) {
				writeObject(b, rms, map[string]func(*bytes.Buffer){"tools": func(b *bytes.Buffer) { emit(b, keep) }})
			}})
		}, ShapeMCPResponse, nil
	}
	if isGemini(ms) {
		emit, err := p.gemini(ms)
		if err != nil {
			return nil, "", fmt.Errorf("catalogue: %w", err)
		}
		return func(b *bytes.Buffer, keep []bool) {
			if !emit(b, keep) {
				writeObject(b, nil, nil) // nothing left: {}
			}
		}, ShapeGemini, nil
	}
	return nil, "", errors.New("catalogue: want a JSON array of tools, or an object holding one in \"tools\" (a request body, MCP's tools/list result), MCP's JSON-RPC response, or a Gemini tool with functionDeclarations")
}

// list reads a JSON array of tools (or Gemini tool objects) and returns
// what writes the kept ones back.
func (p *parser) list(raw json.RawMessage) (func(*bytes.Buffer, []bool), error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("catalogue: want a JSON array of objects: %w", err)
	}
	if items == nil {
		return nil, errors.New("catalogue: want a JSON array of tools, got null")
	}
	type item struct {
		entry  int                              // the entry's index, or -1 for a group
		gemini func(*bytes.Buffer, []bool) bool // a Gemini tool's writer
	}
	var out []item
	for i, raw := range items {
		ms, err := members(raw)
		if err != nil {
			return nil, fmt.Errorf("catalogue entry %d: %w", i, err)
		}
		if isGemini(ms) {
			emit, err := p.gemini(ms)
			if err != nil {
				return nil, fmt.Errorf("catalogue entry %d: %w", i, err)
			}
			out = append(out, item{entry: -1, gemini: emit})
			continue
		}
		e, err := p.entry(raw, ms)
		if err != nil {
			return nil, fmt.Errorf("catalogue entry %d: %w", i, err)
		}
		out = append(out, item{entry: len(p.entries)})
		p.entries = append(p.entries, e)
	}
	entries := p.entries
	return func(b *bytes.Buffer, keep []bool) {
		b.WriteString("[")
		n := 0
		for _, it := range out {
			var one bytes.Buffer
			switch {
			case it.gemini != nil:
				if !it.gemini(&one, keep) {
					continue
				}
			case keep[it.entry]:
				one.Write(bytes.TrimSpace(entries[it.entry].Raw))
			default:
				continue
			}
			if n > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n  ")
			b.Write(one.Bytes())
			n++
		}
		if n > 0 {
			b.WriteString("\n")
		}
		b.WriteString("]")
	}, nil
}

// geminiTools are the members a Gemini tool object has besides its
// function declarations: each is a tool of Google's, named by its key.
var geminiTools = []string{"googleSearch", "google_search", "googleSearchRetrieval", "google_search_retrieval",
	"codeExecution", "code_execution", "urlContext", "url_context", "retrieval", "computerUse", "computer_use",
	"fileSearch", "file_search", "googleMaps", "google_maps", "enterpriseWebSearch", "enterprise_web_search"}

// isGemini says whether an object is a Gemini tool: it has function
// declarations, or, naming no tool itself (no name, type or function),
// one of Google's tools.
func isGemini(ms []member) bool {
	named := false
	google := false
	for _, m := range ms {
		switch {
		case m.key == "functionDeclarations" || m.key == "function_declarations":
			return true
		case m.key == "name" || m.key == "type" || m.key == "function":
			named = true
		case slices.Contains(geminiTools, m.key):
			google = true
		}
	}
	return google && !named
}

// gemini reads a Gemini tool object: each function declaration is a tool,
// and so is each other member (googleSearch, codeExecution, urlContext),
// named by its key. The writer reports whether anything was left.
func (p *parser) gemini(ms []member) (func(*bytes.Buffer, []bool) bool, error) {
	type decls struct {
		key   string
		first int // the index of its first entry
		n     int
	}
	var lists []decls
	keyed := map[string]int{} // a member that is a tool -> its entry
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.key] {
			return nil, fmt.Errorf("member %q given twice", m.key)
		}
		seen[m.key] = true
		switch m.key {
		case "functionDeclarations", "function_declarations":
			var items []json.RawMessage
			if err := json.Unmarshal(m.val, &items); err != nil {
				return nil, fmt.Errorf("%q: want an array of function declarations: %w", m.key, err)
			}
			d := decls{key: m.key, first: len(p.entries)}
			for i, raw := range items {
				dms, err := members(raw)
				if err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", m.key, i, err)
				}
				e, err := p.entry(raw, dms)
				if err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", m.key, i, err)
				}
				p.entries = append(p.entries, e)
				d.n++
			}
			lists = append(lists, d)
		default:
			keyed[m.key] = len(p.entries)
			p.entries = append(p.entries, Entry{Name: m.key, Server: p.server, Raw: m.val})
		}
	}
	if len(lists) > 1 {
		return nil, errors.New(`both "functionDeclarations" and "function_declarations": give one`)
	}
	entries := p.entries
	return func(b *bytes.Buffer, keep []bool) bool {
		replace := map[string]func(*bytes.Buffer){}
		left := 0
		for key, i := range keyed {
			if !keep[i] {
				replace[key] = nil
			} else {
				left++
			}
		}
		for _, d := range lists {
			var kept []int
			for i := d.first; i < d.first+d.n; i++ {
				if keep[i] {
					kept = append(kept, i)
				}
			}
			if len(kept) == 0 {
				replace[d.key] = nil
				continue
			}
			left++
			replace[d.key] = func(b *bytes.Buffer) {
				b.WriteString("[")
				for j, i := range kept {
					if j > 0 {
						b.WriteString(", ")
					}
					b.Write(bytes.TrimSpace(entries[i].Raw))
				}
				b.WriteString("]")
			}
		}
		if left == 0 {
			return false
		}
		writeObject(b, ms, replace)
		return true
	}, nil
}

// entry reads one tool object: its name (from "name", or an OpenAI
// chat-completions tool's function.name, or a hosted tool's "type") and
// its MCP server ("server", a Responses MCP tool's "server_label", else
// the parser's server).
func (p *parser) entry(raw json.RawMessage, ms []member) (Entry, error) {
	e := Entry{Raw: raw}
	name, haveName, err := str(ms, "name")
	if err != nil {
		return Entry{}, err
	}
	server, haveServer, err := str(ms, "server")
	if err != nil {
		return Entry{}, err
	}
	// "type" names a tool's kind where it is a string; a non-string one
	// decides nothing.
	var typ string
	rawType, haveType, err := one(ms, "type")
	if err != nil {
		return Entry{}, err
	}
	if haveType && json.Unmarshal(rawType, &typ) != nil {
		haveType = false
	}
	fn, haveFn, err := one(ms, "function")
	if err != nil {
		return Entry{}, err
	}
	switch {
	case haveType && typ == "function" && haveFn:
		fms, err := members(fn)
		if err != nil {
			return Entry{}, fmt.Errorf(`member "function": %w`, err)
		}
		inner, ok, err := str(fms, "name")
		if err != nil {
			return Entry{}, fmt.Errorf(`member "function": %w`, err)
		}
		if !ok || inner == "" {
			return Entry{}, errors.New(`no "function.name" (a non-empty string)`)
		}
		if haveName && name != inner {
			return Entry{}, fmt.Errorf(`"name" %q and "function.name" %q differ`, name, inner)
		}
		name, haveName = inner, true
	case !haveName && haveType && typ == "mcp":
		label, ok, err := str(ms, "server_label")
		if err != nil {
			return Entry{}, err
		}
		if !ok || label == "" {
			return Entry{}, errors.New(`an MCP tool of type "mcp" without "server_label"`)
		}
		// Every tool of that server: only a label on the server decides.
		name, haveName, server, haveServer = "*", true, label, true
	case !haveName && haveType && typ != "function" && typ != "custom":
		name, haveName = typ, true // a hosted tool: web_search_preview, local_shell, ...
	}
	if !haveName || name == "" {
		return Entry{}, errors.New(`no "name" member (a non-empty string)`)
	}
	if haveServer && server == "" {
		return Entry{}, errors.New(`member "server" is empty; leave it out for a harness's own tool`)
	}
	if !haveServer {
		if _, mcp, _ := one(ms, "inputSchema"); mcp && p.server == "" {
			return Entry{}, fmt.Errorf("tool %q carries MCP's inputSchema but no server: an MCP server's tools are decided by the server's label; give \"server\" or name the server (--server NAME)", name)
		}
		server = p.server
	}
	e.Name, e.Server = name, server
	return e, nil
}
