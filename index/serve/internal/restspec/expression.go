package restspec

// Expression kinds of the spec's Predicate (ExpressionType).
var (
	unaryKinds      = []string{"is-null", "not-null", "is-nan", "not-nan"}
	comparisonKinds = []string{"lt", "lt-eq", "gt", "gt-eq", "eq", "not-eq", "starts-with", "not-starts-with"}
	setKinds        = []string{"in", "not-in"}
)

// expression checks a Predicate (a residual-filter) and its literals in
// the single-value form of the type of the field each one is compared
// with.
//
// Beyond the yaml: Java's ExpressionParser reads a predicate's operand
// from "term" and its literals from "value"/"values" (the yaml's newer
// child/left/right operands are not read by it), and reads true and false
// only as JSON booleans (the deprecated {"type":"true"} fails in it); the
// check requires what Java reads.
func (c *checker) expression(path string, v any) {
	if _, ok := v.(bool); ok {
		return
	}
	m, ok := c.object(path, v, "Predicate")
	if !ok {
		return
	}
	c.required(path, m, "Predicate", "type")
	kind, _ := m["type"].(string)
	switch {
	case kind == "true" || kind == "false":
		c.fail(join(path, "type"), kind, "TrueExpression and FalseExpression are deprecated: write the JSON boolean (Java's ExpressionParser reads only true and false as booleans)")
	case kind == "and" || kind == "or":
		c.required(path, m, "AndOrPredicate", "left", "right")
		for _, k := range []string{"left", "right"} {
			optional(c, path, m, k, "AndOrPredicate", c.expression)
		}
	case kind == "not":
		c.required(path, m, "NotPredicate", "child")
		optional(c, path, m, "child", "NotPredicate", c.expression)
	case contains(unaryKinds, kind):
		c.closed(path, m, "UnaryPredicate", "type", "child", "term")
		c.required(path, m, "UnaryPredicate (Java's ExpressionParser reads the operand from term)", "term")
		optional(c, path, m, "term", "UnaryPredicate", func(p string, v any) { c.term(p, v) })
	case contains(comparisonKinds, kind):
		c.closed(path, m, "ComparisonPredicate", "type", "left", "right", "term", "value")
		c.required(path, m, "ComparisonPredicate (Java's ExpressionParser reads term and value)", "term", "value")
		typ := ""
		optional(c, path, m, "term", "ComparisonPredicate", func(p string, v any) { typ = c.term(p, v) })
		if kind == "starts-with" || kind == "not-starts-with" {
			typ = "string"
		}
		optional(c, path, m, "value", "ComparisonPredicate", func(p string, v any) { c.literal(p, v, typ) })
	case contains(setKinds, kind):
		c.closed(path, m, "SetPredicate", "type", "child", "term", "values")
		c.required(path, m, "SetPredicate (Java's ExpressionParser reads term and values)", "term", "values")
		typ := ""
		optional(c, path, m, "term", "SetPredicate", func(p string, v any) { typ = c.term(p, v) })
		optional(c, path, m, "values", "SetPredicate", func(p string, v any) { c.literals(p, v, typ) })
	case m["type"] != nil:
		c.fail(join(path, "type"), m["type"], "ExpressionType is one of and, or, not, %v, %v, %v", unaryKinds, comparisonKinds, setKinds)
	}
}

// term checks a Term (TermReference, Reference or TransformTerm) and
// returns the type of its values, "" when unknown.
func (c *checker) term(path string, v any) string {
	if name, ok := v.(string); ok {
		return c.fieldType(path, name)
	}
	m, ok := c.object(path, v, "Term")
	if !ok {
		return ""
	}
	switch m["type"] {
	case "reference":
		if _, ok := m["id"]; ok {
			c.closed(path, m, "IdReference", "type", "id")
			id, ok := c.integer(join(path, "id"), m["id"], 32, "IdReference.id")
			if ok && c.table != nil {
				f, known := c.table.byID[int(id)]
				if !known {
					c.fail(join(path, "id"), id, "IdReference.id is a field id of the table's schema")
				}
				return f.typ
			}
			return ""
		}
		c.closed(path, m, "NamedReference", "type", "name")
		c.required(path, m, "NamedReference", "name")
		if name, ok := m["name"].(string); ok {
			return c.fieldType(join(path, "name"), name)
		}
	case "transform":
		c.required(path, m, "TransformTerm", "transform", "term")
		transform, _ := c.str(join(path, "transform"), m["transform"], "TransformTerm.transform")
		name, ok := c.str(join(path, "term"), m["term"], "TransformTerm.term (TermReference)")
		if ok {
			return resultType(transform, c.fieldType(join(path, "term"), name))
		}
	case "apply":
		// A function's result type is not known here.
	default:
		c.fail(join(path, "type"), m["type"], "Term is a field name, a reference or a transform")
	}
	return ""
}

// fieldType is the type of the named field, "" when unknown.
func (c *checker) fieldType(path, name string) string {
	if c.table == nil {
		return ""
	}
	f, ok := c.table.fieldByName(name)
	if !ok {
		c.fail(path, name, "a term names a field of the table's schema")
	}
	return f.typ
}

// literal checks a Literal: a PrimitiveTypeValue of typ, bare or in
// {"type": "literal", "value": ...}.
func (c *checker) literal(path string, v any, typ string) {
	if m, ok := v.(map[string]any); ok {
		c.closed(path, m, "Literal", "type", "value", "data-type")
		c.required(path, m, "Literal", "type", "value")
		if m["type"] != "literal" {
			c.fail(join(path, "type"), m["type"], `a Literal object has type "literal"`)
		}
		v = m["value"]
		path = join(path, "value")
	}
	c.value(path, v, typ, false)
}

// literals checks Literals: an array of Literal, or {"type": "literals",
// "values": [...], "data-type": ...}.
func (c *checker) literals(path string, v any, typ string) {
	if m, ok := v.(map[string]any); ok {
		c.closed(path, m, "Literals", "type", "values", "data-type")
		c.required(path, m, "Literals", "type", "values", "data-type")
		if m["type"] != "literals" {
			c.fail(join(path, "type"), m["type"], `a Literals object has type "literals"`)
		}
		path = join(path, "values")
		v = m["values"]
	}
	a, ok := c.array(path, v, "Literals")
	if !ok {
		return
	}
	for i, e := range a {
		c.literal(index(path, i), e, typ)
	}
}
