package planning

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/iceberg-go"
)

// Limits of a request's filter, checked while it is read and before any of
// it is handed to iceberg-go, whose parser copies each level's subtree (a
// chain of 10,000 nested ORs took gigabytes and most of a minute). Engines
// send IN lists as one predicate and shallow trees; these leave them room
// to spare.
const (
	// MaxFilterDepth is the deepest nesting of AND, OR and NOT a filter may
	// have.
	MaxFilterDepth = 100
	// MaxFilterNodes is the most predicates, ANDs, ORs and NOTs a filter
	// may have (the values of an IN count once).
	MaxFilterNodes = 10_000
	// MaxFilterValues is the most values the INs of a filter may have in
	// all: far more than the index checks (lookup.MaxTestValues), and each
	// value is decoded and held while the plan is made.
	MaxFilterValues = 100_000
)

// parseFilter decodes the request's filter (the REST expression JSON),
// each literal typed by the schema's column it is compared with: binary and
// fixed values are hex strings, dates and timestamps ISO strings or
// numbers, and read without their column they become other values (a hex
// string's ASCII bytes) that would prune files holding matching rows. So
// the column of every term is resolved first, by the request's case
// sensitivity, and the predicate is parsed with the schema under the
// column's own name; a column the schema lacks is a bad request. AND, OR and
// NOT are assembled here, each predicate parsed alone, so that no subtree is
// copied per level; the deprecated {"type":"true"} and {"type":"false"} are
// read as true and false.
func parseFilter(raw json.RawMessage, schema *iceberg.Schema, caseSensitive bool) (iceberg.BooleanExpression, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return iceberg.AlwaysTrue{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers reach iceberg-go's parser as they were written
	var tree any
	if err := dec.Decode(&tree); err != nil {
		if strings.Contains(err.Error(), "exceeded max depth") { // encoding/json's own limit, far past ours
			return nil, badRequest("filter: nested deeper than %d ANDs, ORs and NOTs: the most a filter may have", MaxFilterDepth)
		}
		return nil, badRequest("filter: %v", err)
	}
	fp := filterParser{schema: schema, caseSensitive: caseSensitive}
	expr, err := fp.expr(tree, 0)
	if err != nil {
		return nil, badRequest("filter: %w", err)
	}
	return expr, nil
}

type filterParser struct {
	schema        *iceberg.Schema
	caseSensitive bool
	nodes, values int
}

func (fp *filterParser) expr(node any, depth int) (iceberg.BooleanExpression, error) {
	if fp.nodes++; fp.nodes > MaxFilterNodes {
		return nil, fmt.Errorf("more than %d predicates and operators: the most a filter may have", MaxFilterNodes)
	}
	if depth > MaxFilterDepth {
		return nil, fmt.Errorf("nested deeper than %d ANDs, ORs and NOTs: the most a filter may have", MaxFilterDepth)
	}
	switch n := node.(type) {
	case bool:
		if n {
			return iceberg.AlwaysTrue{}, nil
		}
		return iceberg.AlwaysFalse{}, nil
	case map[string]any:
		typ, _ := n["type"].(string)
		switch typ {
		case "true":
			return iceberg.AlwaysTrue{}, nil
		case "false":
			return iceberg.AlwaysFalse{}, nil
		case "not":
			child, err := fp.expr(n["child"], depth+1)
			if err != nil {
				return nil, err
			}
			return iceberg.NewNot(child), nil
		case "and", "or":
			left, err := fp.expr(n["left"], depth+1)
			if err != nil {
				return nil, err
			}
			right, err := fp.expr(n["right"], depth+1)
			if err != nil {
				return nil, err
			}
			if typ == "and" {
				return iceberg.NewAnd(left, right), nil
			}
			return iceberg.NewOr(left, right), nil
		}
		return fp.predicate(n)
	}
	return nil, fmt.Errorf("an expression is a JSON object or a boolean, not %s", describe(node))
}

// predicate parses one predicate (or iceberg-go's {"type":"literal"}
// spelling of a constant) with the schema, its term renamed to its
// column's own name.
func (fp *filterParser) predicate(n map[string]any) (iceberg.BooleanExpression, error) {
	if values, ok := n["values"].([]any); ok {
		if fp.values += len(values); fp.values > MaxFilterValues {
			return nil, fmt.Errorf("more than %d values in its INs: the most a filter may have", MaxFilterValues)
		}
	}
	if term, ok := n["term"]; ok {
		resolved, err := fp.term(term)
		if err != nil {
			return nil, err
		}
		n["term"] = resolved
	}
	leaf, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	return iceberg.ParseExpr(leaf, fp.schema)
}

// term resolves a reference (a column name) or a transform term's
// reference to the schema's name of its column.
func (fp *filterParser) term(term any) (any, error) {
	switch t := term.(type) {
	case string:
		return fp.column(t)
	case map[string]any:
		if inner, ok := t["term"]; ok {
			resolved, err := fp.term(inner)
			if err != nil {
				return nil, err
			}
			t["term"] = resolved
		}
		return t, nil
	}
	return nil, fmt.Errorf("a term is a column name or a transform, not %s", describe(term))
}

func (fp *filterParser) column(name string) (string, error) {
	if fp.caseSensitive {
		if _, ok := fp.schema.FindFieldByName(name); !ok {
			return "", fmt.Errorf("no column %q in the table's schema", name)
		}
		return name, nil
	}
	f, ok := fp.schema.FindFieldByNameCaseInsensitive(name)
	if !ok {
		return "", fmt.Errorf("no column %q (in any case) in the table's schema", name)
	}
	full, ok := fp.schema.FindColumnName(f.ID)
	if !ok {
		return "", fmt.Errorf("column %q has no name in the table's schema", name)
	}
	return full, nil
}

// describe names a JSON value's kind for an error.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// filterWorkFactor is the memory a plan holds per byte of its request's
// filter while it is made: the expression parsed from it and bound twice
// (by the lookup, for the residuals), about 12 bytes a byte for an IN of
// 100,000 longs (TestRequestWorkBytesMeasured), with room for the tree
// decoded on the way.
const filterWorkFactor = 16

// RequestWorkBytes is the memory a plan request of filterBytes bytes of
// filter holds while its plan is made, which the server holds in the work
// budget (Planner.HoldWork) from before its body is read to the plan's
// end; a body of n bytes holds at most RequestWorkBytes(n).
func RequestWorkBytes(filterBytes int64) int64 { return filterWorkFactor*max(filterBytes, 0) + 4<<10 }

// BodyStep is how much of a plan request's body is read under a hold of
// what that much may hold (RequestWorkBytes(BodyStep), 260 KiB) before the
// hold grows to what the whole body may (GrowingReader): a body refused
// for its nesting or its INs within its first bytes never waits for the
// room its whole length would need. bench --serve-abuse: 10,000-deep
// filters of 650 KB, refused after 7 KB, each waited for a hold of 10 MiB
// of the 16 MiB plans work in, holding a plan slot and keeping the plans
// queued behind them waiting.
const BodyStep = 16 << 10

// GrowingReader returns a reader of r, a request's body of size bytes
// (or less; -1: not known), that grows h, which holds what its first
// BodyStep bytes may hold, to what the body may hold once that much has
// been read (Hold.Grow): to RequestWorkBytes(size), or, when the size is
// not known, in steps of four times what was read. The read fails with
// Grow's error (*BusyError) when there is no room.
func GrowingReader(ctx context.Context, h *Hold, r io.Reader, size int64) io.Reader {
	return &growingReader{ctx: ctx, h: h, r: r, size: size, limit: BodyStep}
}

type growingReader struct {
	ctx         context.Context
	h           *Hold
	r           io.Reader
	size        int64
	read, limit int64 // the hold is for limit bytes
	err         error
}

func (g *growingReader) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.read >= g.limit {
		g.limit = g.size
		if g.size < 0 {
			g.limit = 4 * g.read
		}
		if g.err = g.h.Grow(g.ctx, RequestWorkBytes(g.limit)); g.err != nil {
			return 0, g.err
		}
	}
	if room := g.limit - g.read; int64(len(p)) > room && room > 0 {
		p = p[:room]
	}
	n, err := g.r.Read(p)
	g.read += int64(n)
	return n, err
}

// maxBodyDepth is the deepest nesting of JSON objects and arrays a plan
// request within the filter limits has: the request, its filter, the ANDs,
// ORs and NOTs, a predicate, a transform term and an IN's values, with
// room to spare.
const maxBodyDepth = MaxFilterDepth + 8

// CheckFilterReader returns a reader of r's bytes that fails with a
// *RequestError as soon as the JSON read holds more IN values ("values"
// arrays) than MaxFilterValues or nests deeper than a filter may: a cheap
// look at the bytes as they arrive, so that a body far beyond the limits is
// refused before it is read whole and decoded (an IN of 600,000 values
// after its first 1.3 MB). It counts only plain "values" keys; the filter's
// parser counts exactly, after.
func CheckFilterReader(r io.Reader) io.Reader { return &filterScan{r: r} }

// filterScan is CheckFilterReader's reader: a JSON tokenizer of a few
// states, enough to count the elements of "values" arrays and the depth.
type filterScan struct {
	r             io.Reader
	err           error
	inString      bool
	escaped       bool
	key           []byte // the string being read, its first 8 bytes
	keyLen        int
	valuesKey     bool // the last string was "values" and a ':' followed it
	lastWasValues bool
	stack         []scanLevel
	values        int
}

// scanLevel is an object or array open: counted says it is a "values"
// array, empty that no element of it was seen yet.
type scanLevel struct{ counted, empty bool }

func (f *filterScan) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	if serr := f.scan(p[:n]); serr != nil {
		f.err = serr
		return 0, serr
	}
	return n, err
}

func (f *filterScan) scan(b []byte) error {
	for _, c := range b {
		if f.inString {
			switch {
			case f.escaped:
				f.escaped = false
			case c == '\\':
				f.escaped = true
			case c == '"':
				f.inString = false
				f.lastWasValues = f.keyLen == len("values") && string(f.key) == "values"
				continue
			}
			if f.keyLen++; len(f.key) < 8 {
				f.key = append(f.key, c)
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		top := len(f.stack) - 1
		if top >= 0 && f.stack[top].counted {
			switch {
			case c == ',':
				f.values++
			case c != ']' && f.stack[top].empty:
				f.values++
				f.stack[top].empty = false
			}
			if f.values > MaxFilterValues {
				return badRequest("filter: more than %d values in its INs: the most a filter may have", MaxFilterValues)
			}
		}
		valuesKey := f.valuesKey
		f.valuesKey = false
		switch c {
		case '"':
			f.inString, f.key, f.keyLen = true, f.key[:0], 0
		case ':':
			f.valuesKey = f.lastWasValues
		case '{', '[':
			if len(f.stack) >= maxBodyDepth {
				return badRequest("filter: nested deeper than %d ANDs, ORs and NOTs: the most a filter may have", MaxFilterDepth)
			}
			counted := c == '[' && valuesKey
			f.stack = append(f.stack, scanLevel{counted: counted, empty: true})
		case '}', ']':
			if top >= 0 {
				f.stack = f.stack[:top]
			}
		}
		f.lastWasValues = false
	}
	return nil
}
