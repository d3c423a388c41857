package manifestdec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// kind is an Avro type.
type kind uint8

const (
	kNull kind = iota
	kBoolean
	kInt
	kLong
	kFloat
	kDouble
	kBytes
	kString
	kRecord
	kEnum
	kArray
	kMap
	kUnion
	kFixed
)

var primitives = map[string]kind{
	"null": kNull, "boolean": kBoolean, "int": kInt, "long": kLong, "float": kFloat, "double": kDouble,
	"bytes": kBytes, "string": kString,
}

// node is one type of a writer schema, parsed from its JSON: what skipping
// a value of it needs, and what the entry program checks of the fields it
// reads (logical type, decimal scale, fixed size, field ids).
type node struct {
	kind     kind
	logical  string
	size     int // fixed
	scale    int // decimal
	prec     int // decimal
	fields   []field
	items    *node // array items, map values
	branches []*node
	symbols  int // enum
	name     string
	minSize  int // the fewest bytes a value takes
	// varints is, for a record of ints and longs only (a statistics map's
	// entry), how many; 0 for other types.
	varints int
}

// field is a record's field.
type field struct {
	name  string
	id    int
	hasID bool
	typ   *node
}

// schemaParser parses a schema's JSON, resolving named types.
type schemaParser struct {
	names    map[string]*node // defined, by full name
	defining map[string]bool  // being defined: a reference to one is a recursive type
	nodes    int
}

// maxSchemaNodes bounds a schema's size: a manifest's has some 60 nodes.
const maxSchemaNodes = 100_000

// parseSchema parses an Avro schema's JSON. It returns an error wrapping
// ErrUnsupported for what it does not read: recursive types, a type
// defined by an unknown name, shapes other than the specification's.
func parseSchema(text []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: avro.schema is not JSON: %v", ErrUnsupported, err)
	}
	p := &schemaParser{names: map[string]*node{}, defining: map[string]bool{}}
	return p.parse(v, "", 0)
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

func (p *schemaParser) parse(v any, namespace string, depth int) (*node, error) {
	p.nodes++
	if p.nodes > maxSchemaNodes || depth > 64 {
		return nil, unsupported("schema too large or deep")
	}
	switch v := v.(type) {
	case string:
		if k, ok := primitives[v]; ok {
			return finish(&node{kind: k}), nil
		}
		full := fullName(v, namespace)
		if p.defining[full] {
			return nil, unsupported("recursive type %s", full)
		}
		if n, ok := p.names[full]; ok {
			return n, nil
		}
		if n, ok := p.names[v]; ok && !strings.Contains(v, ".") { // a name in the null namespace
			return n, nil
		}
		return nil, unsupported("unknown type %q", v)
	case []any:
		n := &node{kind: kUnion}
		for _, b := range v {
			bn, err := p.parse(b, namespace, depth+1)
			if err != nil {
				return nil, err
			}
			if bn.kind == kUnion {
				return nil, unsupported("union in a union")
			}
			n.branches = append(n.branches, bn)
		}
		if len(n.branches) == 0 {
			return nil, unsupported("empty union")
		}
		return finish(n), nil
	case map[string]any:
		return p.parseObject(v, namespace, depth)
	}
	return nil, unsupported("schema value %T", v)
}

func (p *schemaParser) parseObject(v map[string]any, namespace string, depth int) (*node, error) {
	typ, ok := v["type"].(string)
	if !ok {
		return nil, unsupported("type is not a name")
	}
	logical, _ := v["logicalType"].(string)
	if k, ok := primitives[typ]; ok {
		n := &node{kind: k, logical: logical}
		if logical == "decimal" {
			if err := decimalProps(n, v); err != nil {
				return nil, err
			}
		}
		return finish(n), nil
	}
	switch typ {
	case "record", "error":
		n := &node{kind: kRecord, logical: logical}
		full, ns, err := p.define(n, v, namespace)
		if err != nil {
			return nil, err
		}
		p.defining[full] = true
		fields, ok := v["fields"].([]any)
		if !ok {
			return nil, unsupported("record %s without fields", full)
		}
		seen := map[string]bool{}
		for _, f := range fields {
			fm, ok := f.(map[string]any)
			if !ok {
				return nil, unsupported("record %s: field is not an object", full)
			}
			name, ok := fm["name"].(string)
			if !ok || seen[name] {
				return nil, unsupported("record %s: field without a name or named twice", full)
			}
			seen[name] = true
			ft, err := p.parse(fm["type"], ns, depth+1)
			if err != nil {
				return nil, err
			}
			fd := field{name: name, typ: ft}
			if id, ok := fm["field-id"]; ok {
				num, ok := id.(json.Number)
				if !ok {
					return nil, unsupported("record %s: field %s: field-id %v", full, name, id)
				}
				i, err := num.Int64()
				if err != nil || i < 0 || i > 1<<31-1 {
					return nil, unsupported("record %s: field %s: field-id %v", full, name, id)
				}
				fd.id, fd.hasID = int(i), true
			}
			n.fields = append(n.fields, fd)
		}
		delete(p.defining, full)
		return finish(n), nil
	case "enum":
		n := &node{kind: kEnum, logical: logical}
		if _, _, err := p.define(n, v, namespace); err != nil {
			return nil, err
		}
		symbols, ok := v["symbols"].([]any)
		if !ok || len(symbols) == 0 {
			return nil, unsupported("enum without symbols")
		}
		n.symbols = len(symbols)
		return finish(n), nil
	case "fixed":
		n := &node{kind: kFixed, logical: logical}
		if _, _, err := p.define(n, v, namespace); err != nil {
			return nil, err
		}
		size, err := intProp(v, "size")
		if err != nil || size < 0 || size > 1<<20 {
			return nil, unsupported("fixed size %v", v["size"])
		}
		n.size = size
		if logical == "decimal" {
			if err := decimalProps(n, v); err != nil {
				return nil, err
			}
		}
		return finish(n), nil
	case "array", "map":
		n := &node{kind: kArray, logical: logical}
		key := "items"
		if typ == "map" {
			n.kind, key = kMap, "values"
		}
		items, err := p.parse(v[key], namespace, depth+1)
		if err != nil {
			return nil, err
		}
		n.items = items
		return finish(n), nil
	}
	return nil, unsupported("type %q", typ)
}

// define registers named type n of object v and returns its full name and
// the namespace of the types it encloses.
func (p *schemaParser) define(n *node, v map[string]any, namespace string) (full, ns string, err error) {
	name, ok := v["name"].(string)
	if !ok || name == "" {
		return "", "", unsupported("named type without a name")
	}
	if space, ok := v["namespace"].(string); ok && !strings.Contains(name, ".") {
		namespace = space
	}
	full = fullName(name, namespace)
	// A name defined twice (iceberg-go names every decimal "fixed") is
	// taken at its latest definition by later references.
	p.names[full] = n
	n.name = full
	ns = ""
	if i := strings.LastIndex(full, "."); i >= 0 {
		ns = full[:i]
	}
	return full, ns, nil
}

func fullName(name, namespace string) string {
	if strings.Contains(name, ".") || namespace == "" {
		return name
	}
	return namespace + "." + name
}

func intProp(v map[string]any, key string) (int, error) {
	num, ok := v[key].(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", key)
	}
	i, err := num.Int64()
	if err != nil || i < -1<<31 || i > 1<<31-1 {
		return 0, fmt.Errorf("%s is not an int", key)
	}
	return int(i), nil
}

// decimalProps reads a decimal's precision and scale (scale 0 when
// absent, as the specification says).
func decimalProps(n *node, v map[string]any) error {
	prec, err := intProp(v, "precision")
	if err != nil {
		return unsupported("decimal: %v", err)
	}
	scale := 0
	if _, ok := v["scale"]; ok {
		if scale, err = intProp(v, "scale"); err != nil {
			return unsupported("decimal: %v", err)
		}
	}
	if prec <= 0 || scale < 0 || scale > prec {
		return unsupported("decimal(%d, %d)", prec, scale)
	}
	n.prec, n.scale = prec, scale
	return nil
}

// finish sets n's minimum size.
func finish(n *node) *node {
	switch n.kind {
	case kNull:
		n.minSize = 0
	case kFloat:
		n.minSize = 4
	case kDouble:
		n.minSize = 8
	case kFixed:
		n.minSize = n.size
	case kRecord:
		for _, f := range n.fields {
			n.minSize += f.typ.minSize
			if f.typ.kind == kInt || f.typ.kind == kLong {
				n.varints++
			}
		}
		if n.varints != len(n.fields) {
			n.varints = 0
		}
	default:
		n.minSize = 1
	}
	return n
}

// skip skips a value of n.
func (r *reader) skip(n *node, depth int) {
	if r.err != nil {
		return
	}
	if depth > 64 {
		r.fail("value nested too deep")
		return
	}
	switch n.kind {
	case kNull:
	case kBoolean:
		r.advance(1)
	case kInt, kLong, kEnum:
		r.long()
	case kFloat:
		r.advance(4)
	case kDouble:
		r.advance(8)
	case kBytes, kString:
		r.bytes()
	case kFixed:
		r.advance(n.size)
	case kRecord:
		for i := range n.fields {
			r.skip(n.fields[i].typ, depth+1)
		}
	case kUnion:
		i := r.long()
		if r.err != nil {
			return
		}
		if i < 0 || i >= int64(len(n.branches)) {
			r.fail(fmt.Sprintf("union branch %d of %d", i, len(n.branches)))
			return
		}
		r.skip(n.branches[i], depth+1)
	case kArray, kMap:
		for {
			count := r.blockCount(n)
			if count <= 0 || r.err != nil {
				return
			}
			if n.items.minSize == 0 && n.kind == kArray {
				continue // items of no bytes: nothing to skip
			}
			if n.kind == kArray && n.items.varints > 0 {
				r.skipVarints(int(count) * n.items.varints)
				continue
			}
			for range count {
				if n.kind == kMap {
					r.bytes()
				}
				r.skip(n.items, depth+1)
				if r.err != nil {
					return
				}
			}
		}
	}
}

// blockCount reads the count of an array's or map's next block; a block
// that gives its size in bytes is skipped whole (count 0 returned and the
// loop goes on) unless keep. It returns -1 at the end of the array.
func (r *reader) blockCount(n *node) int64 {
	for {
		count := r.long()
		if r.err != nil {
			return -1
		}
		if count == 0 {
			return -1
		}
		if count < 0 {
			if count == -1<<63 {
				r.fail("block count out of range")
				return -1
			}
			size := r.long()
			if r.err != nil {
				return -1
			}
			if size < 0 || size > int64(len(r.b)-r.p) {
				r.fail(fmt.Sprintf("block of %d bytes in %d left", size, len(r.b)-r.p))
				return -1
			}
			r.p += int(size)
			continue
		}
		min := n.items.minSize
		if n.kind == kMap {
			min++
		}
		if min > 0 && count > int64(len(r.b)-r.p)/int64(min) {
			r.fail(fmt.Sprintf("%d items in %d bytes", count, len(r.b)-r.p))
			return -1
		}
		return count
	}
}

// itemCount is blockCount for arrays whose items are read: a block with
// its size given is read item by item too.
func (r *reader) itemCount(n *node) int64 {
	count := r.long()
	if r.err != nil || count == 0 {
		return -1
	}
	if count < 0 {
		if count == -1<<63 {
			r.fail("block count out of range")
			return -1
		}
		count = -count
		if size := r.long(); r.err != nil || size < 0 || size > int64(len(r.b)-r.p) {
			r.fail("block size out of range")
			return -1
		}
	}
	if min := n.items.minSize; min > 0 && count > int64(len(r.b)-r.p)/int64(min) {
		r.fail(fmt.Sprintf("%d items in %d bytes", count, len(r.b)-r.p))
		return -1
	}
	return count
}
