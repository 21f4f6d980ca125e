package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Entry is one tool of a catalogue: its name and server as read, and the
// whole JSON object as given, to be passed on untouched.
type Entry struct {
	Name   string
	Server string
	Raw    json.RawMessage
}

// ParseCatalogue reads a catalogue: a JSON array of objects, each with a
// string member "name" and, for an MCP tool, a string member "server";
// other members are kept as they are. Members are matched by their exact
// names (not case-insensitively, as encoding/json would), and an object
// that gives "name" or "server" twice is refused, so that wrun decides on
// the same name a harness reads.
func ParseCatalogue(data []byte) ([]Entry, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("catalogue: not UTF-8")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("catalogue: want a JSON array of objects: %w", err)
	}
	if items == nil {
		return nil, errors.New("catalogue: want a JSON array of objects, got null")
	}
	out := make([]Entry, 0, len(items))
	for i, raw := range items {
		e, err := parseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("catalogue entry %d: %w", i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseEntry(raw json.RawMessage) (Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return Entry{}, err
	}
	if tok != json.Delim('{') {
		return Entry{}, errors.New("not a JSON object")
	}
	e := Entry{Raw: raw}
	var haveName, haveServer bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Entry{}, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return Entry{}, err
		}
		switch key {
		case "name", "server":
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return Entry{}, fmt.Errorf("member %q is not a string", key)
			}
			if key == "name" {
				if haveName {
					return Entry{}, errors.New(`member "name" given twice`)
				}
				e.Name, haveName = s, true
			} else {
				if haveServer {
					return Entry{}, errors.New(`member "server" given twice`)
				}
				e.Server, haveServer = s, true
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return Entry{}, err
	}
	if !haveName || e.Name == "" {
		return Entry{}, errors.New(`no "name" member (a non-empty string)`)
	}
	if haveServer && e.Server == "" {
		return Entry{}, errors.New(`member "server" is empty; leave it out for a harness's own tool`)
	}
	return e, nil
}

// Filter decides every entry of a catalogue with one reason (for desktop
// tools) and returns the entries the grant gives, in their order, with
// every decision.
func Filter(g Grant, l Labels, entries []Entry, reason string) ([]Entry, []Decision) {
	var visible []Entry
	decisions := make([]Decision, 0, len(entries))
	for _, e := range entries {
		d := Decide(g, l, Call{Name: e.Name, Server: e.Server, Reason: reason})
		decisions = append(decisions, d)
		if d.Allowed {
			visible = append(visible, e)
		}
	}
	return visible, decisions
}

// WriteCatalogue writes entries as a JSON array, each object byte for byte
// as it was read.
func WriteCatalogue(w io.Writer, entries []Entry) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, e := range entries {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(bytes.TrimSpace(e.Raw))
	}
	if len(entries) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}
