package schematest

import (
	"strings"
	"testing"
)

func TestCompile(t *testing.T) {
	tests := []struct{ schema, err string }{
		{`{"type": "object", "if": {}}`, `keyword "if" is not supported`},
		{`{"$ref": "#/definitions/x"}`, `only "#" and "#/$defs/NAME"`},
		{`{"$ref": "#/$defs/x"}`, "no such definition"},
		{`{"pattern": "("}`, "missing closing )"},
		{`{"type": "thing"}`, `unknown type "thing"`},
		{`{"properties": {"a": 3}}`, "must be an object or a boolean"},
		{`[]`, "root is not an object"},
		{`{} {}`, "more follows"},
	}
	for _, tc := range tests {
		_, err := Compile([]byte(tc.schema))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Compile(%s) = %v, want %q", tc.schema, err, tc.err)
		}
	}
}

func TestValidate(t *testing.T) {
	s, err := Compile([]byte(`{
		"$defs": {"n": {"type": "integer", "minimum": 1, "maximum": 3}},
		"type": "object",
		"properties": {
			"n": {"$ref": "#/$defs/n"},
			"list": {"type": "array", "prefixItems": [{"const": "a"}], "items": {"type": "string", "minLength": 2}, "maxItems": 3},
			"either": {"type": ["string", "null"]},
			"one": {"oneOf": [{"type": "string"}, {"type": "string", "pattern": "^x"}]},
			"not": {"not": {"const": 0}},
			"all": {"allOf": [{"type": "number"}, {"minimum": 0.5}]}
		},
		"additionalProperties": {"type": "boolean"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ doc, err string }{
		{`{"n": 2, "list": ["a", "bc"], "either": null, "one": "y", "not": 1, "all": 0.75, "extra": true}`, ""},
		{`{"n": 2.0}`, ""},
		{`{"n": 4}`, "/n: is 4, above the maximum 3"},
		{`{"n": 0}`, "/n: is 0, below the minimum 1"},
		{`{"n": "2"}`, "/n: is a string, want integer"},
		{`{"list": ["b"]}`, `/list/0: is "b", want "a"`},
		{`{"list": ["a", "b"]}`, "/list/1: is shorter than 2 characters"},
		{`{"list": ["a", "bb", "cc", "dd"]}`, "/list: has 4 items, want at most 3"},
		{`{"either": 1}`, "/either: is a number, want string or null"},
		{`{"one": "xy"}`, "/one: matches 2 of oneOf"},
		{`{"not": 0}`, "/not: matches a schema it must not match"},
		{`{"all": 0.25}`, "/all: is 0.25, below the minimum 0.5"},
		{`{"extra": "yes"}`, "/extra: is a string, want boolean"},
		{`[`, "not JSON"},
	}
	for _, tc := range tests {
		err := s.Validate([]byte(tc.doc))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Validate(%s) = %v", tc.doc, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Validate(%s) = %v, want %q", tc.doc, err, tc.err)
		}
	}
}
