package schematest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Validate checks doc against the JSON Schema schema. The error lists every
// violation, each with its JSON pointer.
func Validate(schema, doc []byte) error {
	s, err := Compile(schema)
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

// Schema is a compiled JSON Schema. It implements the subset of draft
// 2020-12 that wrun's schemas use, and refuses to compile a schema that
// uses any other keyword, so nothing is silently ignored: type, enum,
// const, properties, required, additionalProperties, items, prefixItems,
// minItems, maxItems, minLength, pattern, minimum, maximum, format
// (date-time is checked), allOf, anyOf, oneOf, not, and $ref to "#" or
// "#/$defs/NAME". Annotations ($schema, $id, $comment, title, description)
// are accepted.
type Schema struct {
	root  map[string]any
	defs  map[string]any
	regex map[string]*regexp.Regexp
}

// isKeyword reports whether k is a keyword this validator knows.
func isKeyword(k string) bool {
	switch k {
	case "$schema", "$id", "$comment", "title", "description", "$defs", "$ref",
		"type", "enum", "const", "properties", "required", "additionalProperties",
		"items", "prefixItems", "minItems", "maxItems", "minLength", "pattern",
		"minimum", "maximum", "format", "allOf", "anyOf", "oneOf", "not":
		return true
	}
	return false
}

// Compile parses and checks a schema.
func Compile(b []byte) (*Schema, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("schema: the root is not an object")
	}
	s := &Schema{root: root, regex: map[string]*regexp.Regexp{}}
	if d, ok := root["$defs"]; ok {
		if s.defs, ok = d.(map[string]any); !ok {
			return nil, errors.New("schema: $defs is not an object")
		}
	}
	if err := s.check(root, "#"); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return s, nil
}

// check walks a schema, refusing unknown keywords and malformed values.
func (s *Schema) check(node any, at string) error {
	if _, ok := node.(bool); ok {
		return nil
	}
	m, ok := node.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be an object or a boolean", at)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		where := at + "/" + k
		if !isKeyword(k) {
			return fmt.Errorf("%s: keyword %q is not supported by this validator", at, k)
		}
		switch k {
		case "$defs", "properties":
			sub, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: not an object", where)
			}
			for name, d := range sub {
				if err := s.check(d, where+"/"+name); err != nil {
					return err
				}
			}
		case "items", "additionalProperties", "not":
			if err := s.check(v, where); err != nil {
				return err
			}
		case "prefixItems", "allOf", "anyOf", "oneOf":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return fmt.Errorf("%s: not a non-empty array", where)
			}
			for i, d := range list {
				if err := s.check(d, fmt.Sprintf("%s/%d", where, i)); err != nil {
					return err
				}
			}
		case "$ref":
			ref, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: not a string", where)
			}
			if _, err := s.resolve(ref); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: not a string", where)
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			s.regex[p] = re
		case "required":
			list, ok := v.([]any)
			if !ok {
				return fmt.Errorf("%s: not an array", where)
			}
			for _, r := range list {
				if _, ok := r.(string); !ok {
					return fmt.Errorf("%s: not an array of strings", where)
				}
			}
		case "enum":
			if list, ok := v.([]any); !ok || len(list) == 0 {
				return fmt.Errorf("%s: not a non-empty array", where)
			}
		case "type":
			for _, t := range typeList(v) {
				if !slices.Contains([]string{"object", "array", "string", "integer", "number", "boolean", "null"}, t) {
					return fmt.Errorf("%s: unknown type %q", where, t)
				}
			}
			if len(typeList(v)) == 0 {
				return fmt.Errorf("%s: want a type name or a list of them", where)
			}
		case "minItems", "maxItems", "minLength", "minimum", "maximum":
			if _, ok := v.(json.Number); !ok {
				return fmt.Errorf("%s: not a number", where)
			}
		case "format":
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s: not a string", where)
			}
		}
	}
	return nil
}

func (s *Schema) resolve(ref string) (any, error) {
	if ref == "#" {
		return s.root, nil
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only \"#\" and \"#/$defs/NAME\" are supported", ref)
	}
	d, ok := s.defs[name]
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	return d, nil
}

func typeList(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

// ValidationError lists every violation of a schema.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string {
	return "does not match the schema: " + strings.Join(e.Problems, "; ")
}

// Validate checks one JSON document.
func (s *Schema) Validate(doc []byte) error {
	v, err := decodeJSON(doc)
	if err != nil {
		return err
	}
	var problems []string
	s.validate(s.root, v, "", &problems)
	if len(problems) > 0 {
		return &ValidationError{Problems: problems}
	}
	return nil
}

// decodeJSON reads exactly one JSON value, numbers kept exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not JSON: more follows the first value")
	}
	return v, nil
}

func (s *Schema) validate(node, v any, at string, problems *[]string) {
	fail := func(format string, args ...any) {
		where := at
		if where == "" {
			where = "/"
		}
		*problems = append(*problems, where+": "+fmt.Sprintf(format, args...))
	}
	if b, ok := node.(bool); ok {
		if !b {
			fail("no value is allowed here")
		}
		return
	}
	m := node.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		target, _ := s.resolve(ref)
		s.validate(target, v, at, problems)
	}
	if t, ok := m["type"]; ok {
		types := typeList(t)
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			fail("is %s, want %s", typeOf(v), strings.Join(types, " or "))
			return
		}
	}
	if c, ok := m["const"]; ok && !jsonEqual(c, v) {
		fail("is %s, want %s", show(v), show(c))
	}
	if e, ok := m["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return jsonEqual(x, v) }) {
		fail("is %s, want one of %s", show(v), show(e))
	}
	switch x := v.(type) {
	case map[string]any:
		s.validateObject(m, x, at, problems)
	case []any:
		s.validateArray(m, x, at, problems)
	case string:
		if n, ok := m["minLength"].(json.Number); ok && int64(len([]rune(x))) < intOf(n) {
			fail("is shorter than %s characters", n)
		}
		if p, ok := m["pattern"].(string); ok && !s.regex[p].MatchString(x) {
			fail("%s does not match %s", show(x), p)
		}
		if f, _ := m["format"].(string); f == "date-time" {
			if _, err := time.Parse(time.RFC3339, x); err != nil {
				fail("%s is not an RFC 3339 date-time", show(x))
			}
		}
	case json.Number:
		if n, ok := m["minimum"].(json.Number); ok && cmpNumber(x, n) < 0 {
			fail("is %s, below the minimum %s", x, n)
		}
		if n, ok := m["maximum"].(json.Number); ok && cmpNumber(x, n) > 0 {
			fail("is %s, above the maximum %s", x, n)
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, sub := range all {
			s.validate(sub, v, at, problems)
		}
	}
	if anyOf, ok := m["anyOf"].([]any); ok {
		if s.matches(anyOf, v, at) == 0 {
			fail("matches none of anyOf")
		}
	}
	if oneOf, ok := m["oneOf"].([]any); ok {
		if n := s.matches(oneOf, v, at); n != 1 {
			fail("matches %d of oneOf, want exactly 1", n)
		}
	}
	if not, ok := m["not"]; ok {
		var sub []string
		s.validate(not, v, at, &sub)
		if len(sub) == 0 {
			fail("matches a schema it must not match")
		}
	}
}

func (s *Schema) matches(list []any, v any, at string) int {
	n := 0
	for _, sub := range list {
		var p []string
		s.validate(sub, v, at, &p)
		if len(p) == 0 {
			n++
		}
	}
	return n
}

func (s *Schema) validateObject(m, x map[string]any, at string, problems *[]string) {
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if _, present := x[r.(string)]; !present {
				*problems = append(*problems, fmt.Sprintf("%s: %q is required", orRoot(at), r))
			}
		}
	}
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		where := at + "/" + escapePointer(k)
		if sub, ok := props[k]; ok {
			s.validate(sub, x[k], where, problems)
			continue
		}
		if ap, ok := m["additionalProperties"]; ok {
			if b, isBool := ap.(bool); isBool && !b {
				*problems = append(*problems, fmt.Sprintf("%s: property %q is not allowed", orRoot(at), k))
				continue
			}
			s.validate(ap, x[k], where, problems)
		}
	}
}

func (s *Schema) validateArray(m map[string]any, x []any, at string, problems *[]string) {
	if n, ok := m["minItems"].(json.Number); ok && int64(len(x)) < intOf(n) {
		*problems = append(*problems, fmt.Sprintf("%s: has %d items, want at least %s", orRoot(at), len(x), n))
	}
	if n, ok := m["maxItems"].(json.Number); ok && int64(len(x)) > intOf(n) {
		*problems = append(*problems, fmt.Sprintf("%s: has %d items, want at most %s", orRoot(at), len(x), n))
	}
	prefix, _ := m["prefixItems"].([]any)
	for i, item := range x {
		where := at + "/" + strconv.Itoa(i)
		if i < len(prefix) {
			s.validate(prefix[i], item, where, problems)
			continue
		}
		if items, ok := m["items"]; ok {
			s.validate(items, item, where, problems)
		}
	}
}

func orRoot(at string) string {
	if at == "" {
		return "/"
	}
	return at
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(n.String())
		return ok && r.IsInt()
	}
	return false
}

func typeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func intOf(n json.Number) int64 {
	i, err := n.Int64()
	if err != nil {
		f, _ := n.Float64()
		return int64(f)
	}
	return i
}

func cmpNumber(a, b json.Number) int {
	x, okx := new(big.Rat).SetString(a.String())
	y, oky := new(big.Rat).SetString(b.String())
	if !okx || !oky {
		return 0
	}
	return x.Cmp(y)
}

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		p, okp := new(big.Rat).SetString(x.String())
		q, okq := new(big.Rat).SetString(y.String())
		if !okp || !okq {
			return x == y
		}
		return p.Cmp(q) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}
