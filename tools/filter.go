package tools

import (
	"bytes"
	"encoding/json"
	"io"
)

// Entry is one tool of a catalogue: its name and server as read, and the
// whole JSON object as given, to be passed on untouched (for a Gemini
// tool's member such as googleSearch, the member's value).
type Entry struct {
	Name   string
	Server string
	Raw    json.RawMessage
}

// ParseCatalogue reads a catalogue of any shape Parse reads, with no
// server named, and returns its tools.
func ParseCatalogue(data []byte) ([]Entry, error) {
	c, err := Parse(data, "")
	if err != nil {
		return nil, err
	}
	return c.Entries, nil
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
