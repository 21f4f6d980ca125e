package schematest

import (
	"os"
	"strings"
	"testing"
)

// TestValidate shows the validator refuses what the schema refuses, with
// the place named, and accepts what it allows: a control for every test
// that validates wrun's output with it.
func TestValidate(t *testing.T) {
	schema := []byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id": "https://wrun.dev/schema/test.v1.json",
		"$defs": {"n": {"type": "integer", "minimum": 1, "maximum": 3}},
		"type": "object", "additionalProperties": false, "required": ["n"],
		"properties": {"n": {"$ref": "#/$defs/n"}, "t": {"type": "string", "format": "date-time"}}}`)
	tests := []struct{ doc, err string }{
		{`{"n": 2}`, ""},
		{`{"n": 2, "t": "2026-12-01T10:00:00Z"}`, ""},
		{`{"n": 4}`, "/n"},
		{`{"n": 2, "x": 1}`, "additional properties"},
		{`{}`, "missing property"},
		{`{"n": 2, "t": "yesterday"}`, "date-time"},
		{`{"n": 2} {"n": 2}`, "more than one"},
		{`{"n": `, "not JSON"},
	}
	for _, tc := range tests {
		err := Validate(schema, []byte(tc.doc))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Validate(%s) = %v, want nil", tc.doc, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Validate(%s) = %v, want an error with %q", tc.doc, err, tc.err)
		}
	}
	if _, err := Compile([]byte(`{"type": "thing"}`)); err == nil {
		t.Error("a schema with an unknown type compiled")
	}
}

// TestPublishedSchemasCompile compiles every schema wrun publishes.
func TestPublishedSchemasCompile(t *testing.T) {
	files, err := Published(moduleRoot(t))
	if err != nil || len(files) < 8 {
		t.Fatalf("no schemas found: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
