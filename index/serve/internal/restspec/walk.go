package restspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// checker gathers the violations of one answer.
type checker struct {
	route string
	table *Table // nil: typed values are checked for shape only
	query url.Values
	vs    Violations
}

func (c *checker) fail(field string, value any, rule string, args ...any) {
	c.vs = append(c.vs, Violation{Route: c.route, Field: field, Value: render(value), Rule: fmt.Sprintf(rule, args...)})
}

// decode parses JSON keeping numbers as written (json.Number): whether a
// number has a fraction or exponent is part of its single-value form.
func decode(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// render shows a value in a violation: its JSON, shortened.
func render(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return `""`
		}
	case missingValue:
		return "(missing)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(shorten(b))
}

func shorten(b []byte) []byte {
	if len(b) > 160 {
		return append(append([]byte{}, b[:157]...), "..."...)
	}
	return b
}

// missingValue stands for an absent field in a violation.
type missingValue struct{}

var missing = missingValue{}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// object checks that v is a JSON object.
func (c *checker) object(path string, v any, schema string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(path, v, "%s is a JSON object", schema)
	}
	return m, ok
}

// required checks that m has each key, non-null.
func (c *checker) required(path string, m map[string]any, schema string, keys ...string) {
	for _, k := range keys {
		if v, ok := m[k]; !ok || v == nil {
			c.fail(join(path, k), missing, "%s requires %s", schema, k)
		}
	}
}

// closed checks that m has no key but allowed ones: the schema says
// additionalProperties: false.
func (c *checker) closed(path string, m map[string]any, schema string, allowed ...string) {
	for k, v := range m {
		if !contains(allowed, k) {
			c.fail(join(path, k), v, "%s allows no field %q (additionalProperties: false; it has %s)", schema, k, strings.Join(allowed, ", "))
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// str checks an optional string field; present reports it was there.
func (c *checker) str(path string, v any, schema string) (string, bool) {
	s, ok := v.(string)
	if !ok {
		c.fail(path, v, "%s is a string", schema)
	}
	return s, ok
}

// integer checks a JSON integer (no fraction, no exponent) of bits bits.
func (c *checker) integer(path string, v any, bits uint, schema string) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || !isIntegral(n) {
		c.fail(path, v, "%s is a JSON integer", schema)
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, int(bits))
	if err != nil {
		c.fail(path, v, "%s is an integer of %d bits", schema, bits)
		return 0, false
	}
	return i, true
}

// isIntegral reports whether a JSON number is written as an integer, as
// Jackson's isIntegralNumber does (no '.', no exponent).
func isIntegral(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

func (c *checker) boolean(path string, v any, schema string) {
	if _, ok := v.(bool); !ok {
		c.fail(path, v, "%s is a JSON boolean", schema)
	}
}

// array checks a JSON array.
func (c *checker) array(path string, v any, schema string) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		c.fail(path, v, "%s is a JSON array", schema)
	}
	return a, ok
}

// strings checks an array of strings.
func (c *checker) strings(path string, v any, schema string) []string {
	a, ok := c.array(path, v, schema)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		if s, ok := c.str(index(path, i), e, schema+" item"); ok {
			out = append(out, s)
		}
	}
	return out
}

// integers checks an array of integers of bits bits.
func (c *checker) integers(path string, v any, bits uint, schema string) []int64 {
	a, ok := c.array(path, v, schema)
	if !ok {
		return nil
	}
	out := make([]int64, 0, len(a))
	for i, e := range a {
		if n, ok := c.integer(index(path, i), e, bits, schema+" item"); ok {
			out = append(out, n)
		}
	}
	return out
}

// stringMap checks an object whose values are strings
// (additionalProperties: type: string).
func (c *checker) stringMap(path string, v any, schema string) {
	m, ok := c.object(path, v, schema)
	if !ok {
		return
	}
	for k, e := range m {
		c.str(join(path, k), e, schema+" value")
	}
}

// optional runs check on m[key] when the key is present with a non-null
// value. The spec's optional fields are not nullable unless it says so.
func optional(c *checker, path string, m map[string]any, key string, schema string, check func(path string, v any)) {
	v, ok := m[key]
	if !ok {
		return
	}
	if v == nil {
		c.fail(join(path, key), v, "%s.%s is optional but not nullable: omit it instead of null", schema, key)
		return
	}
	check(join(path, key), v)
}
