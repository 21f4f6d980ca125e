package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validate checks doc against the JSON Schema schema: the schema is
// compiled under its own $id (draft 2020-12 unless it names another),
// with formats such as date-time asserted. The error lists every
// violation, each with its JSON pointer.
func Validate(schema, doc []byte) error {
	s, err := Compile(schema)
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

// Schema is a compiled JSON Schema.
type Schema struct{ s *jsonschema.Schema }

// Compile parses and compiles a schema. A $ref to another of wrun's
// published schemas (PATH/schema/*.json in this module, by its $id)
// resolves to that file; nothing is fetched from anywhere.
func Compile(b []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	id := "wrun-schema.json"
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["$id"].(string); ok && s != "" {
			id = s
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := addPublished(c, id); err != nil {
		return nil, err
	}
	if err := c.AddResource(id, v); err != nil {
		return nil, fmt.Errorf("schema %s: %w", id, err)
	}
	s, err := c.Compile(id)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", id, err)
	}
	return &Schema{s}, nil
}

// Validate checks one JSON document (exactly one value) against s.
func (s *Schema) Validate(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("the document is not JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("the document holds more than one JSON value")
	}
	if err := s.s.Validate(v); err != nil {
		return fmt.Errorf("%v", err)
	}
	return nil
}

// noLoader refuses every URL: the schemas are all added as resources.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is not one of wrun's published schemas", url)
}

// addPublished adds every schema this module publishes, under its $id,
// except the one with id skip.
func addPublished(c *jsonschema.Compiler, skip string) error {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return fmt.Errorf("schematest: cannot locate the module")
	}
	files, err := Published(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		m, _ := v.(map[string]any)
		id, _ := m["$id"].(string)
		if id == "" || id == skip {
			continue
		}
		if err := c.AddResource(id, v); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// Published lists the schema files of the module at root: every *.json
// in a directory named schema.
func Published(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || d.Name()[0] == '.') {
			return filepath.SkipDir
		}
		if !d.IsDir() && filepath.Base(filepath.Dir(path)) == "schema" && filepath.Ext(path) == ".json" {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}
