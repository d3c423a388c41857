package where

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

func TestParseWhere(t *testing.T) {
	ref := func(name string) iceberg.Reference { return iceberg.Reference(name) }
	dec := func(unscaled int64, scale int) iceberg.Literal {
		return iceberg.DecimalLiteral{Val: decimal128.FromI64(unscaled), Scale: scale}
	}
	eq := func(name string, lit iceberg.Literal) iceberg.BooleanExpression {
		return iceberg.LiteralPredicate(iceberg.OpEQ, ref(name), lit)
	}
	big30, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	a, b, c := iceberg.EqualTo(ref("a"), int64(1)), iceberg.EqualTo(ref("b"), int64(2)), iceberg.EqualTo(ref("c"), int64(3))
	for _, tc := range []struct {
		in   string
		want string // String() of the expression
	}{
		{"id = 42", iceberg.EqualTo(ref("id"), int64(42)).String()},
		{"ID=-7", iceberg.EqualTo(ref("ID"), int64(-7)).String()},
		{"  id =  +7  ", iceberg.EqualTo(ref("id"), int64(7)).String()},
		{"amount = 12.50", eq("amount", dec(1250, 2)).String()},
		{"amount = -.5", eq("amount", dec(-5, 1)).String()},
		{"amount = 5.", eq("amount", dec(5, 0)).String()},
		{"n = 123456789012345678901234567890", eq("n", iceberg.DecimalLiteral{Val: decimal128.FromBigInt(big30), Scale: 0}).String()},
		{"score = 1.5e3", iceberg.EqualTo(ref("score"), 1500.0).String()},
		{"score = -2.5E-3", iceberg.EqualTo(ref("score"), -0.0025).String()},
		{"email = 'o''brien@example.com'", iceberg.EqualTo(ref("email"), "o'brien@example.com").String()},
		{"email = ''", iceberg.EqualTo(ref("email"), "").String()},
		{"day = '2024-01-31'", iceberg.EqualTo(ref("day"), "2024-01-31").String()},
		{`"user id" = 'x'`, iceberg.EqualTo(ref("user id"), "x").String()},
		{`"we""ird" = 1`, iceberg.EqualTo(ref(`we"ird`), int64(1)).String()},
		{`"and" = 1`, iceberg.EqualTo(ref("and"), int64(1)).String()},
		{"address.city = 'Oslo'", iceberg.EqualTo(ref("address.city"), "Oslo").String()},
		{"ñame = 'ü'", iceberg.EqualTo(ref("ñame"), "ü").String()},
		{"id IN (1, 2, 3)", "In(term=Reference(name='id'), {[1 2 3]})"},
		{"id in ('x',12.5)", "In(term=Reference(name='id'), {[x 12.5]})"},
		{"id In (5)", iceberg.EqualTo(ref("id"), int64(5)).String()},
		{"a = 1 AND b = 2 OR c = 3", iceberg.NewOr(iceberg.NewAnd(a, b), c).String()},
		{"a = 1 or b = 2 and c = 3", iceberg.NewOr(a, iceberg.NewAnd(b, c)).String()},
		{"a = 1 AND (b = 2 OR c = 3)", iceberg.NewAnd(a, iceberg.NewOr(b, c)).String()},
		{"a = 1 and b = 2 and c = 3", iceberg.NewAnd(iceberg.NewAnd(a, b), c).String()},
		{"((a = 1))", a.String()},
		// Comparisons, negations and NULL tests, as SQL writes them.
		{"id < 5", iceberg.LessThan(ref("id"), int64(5)).String()},
		{"id<=5", iceberg.LessThanEqual(ref("id"), int64(5)).String()},
		{"id > -5", iceberg.GreaterThan(ref("id"), int64(-5)).String()},
		{"id >= 5", iceberg.GreaterThanEqual(ref("id"), int64(5)).String()},
		{"id != 5", iceberg.NotEqualTo(ref("id"), int64(5)).String()},
		{"id <> 5", iceberg.NotEqualTo(ref("id"), int64(5)).String()},
		{"id BETWEEN 1 AND 5", iceberg.NewAnd(iceberg.GreaterThanEqual(ref("id"), int64(1)), iceberg.LessThanEqual(ref("id"), int64(5))).String()},
		{"id not between 1 and 5", iceberg.NewOr(iceberg.LessThan(ref("id"), int64(1)), iceberg.GreaterThan(ref("id"), int64(5))).String()},
		{"id BETWEEN 1 AND 5 AND c = 3", iceberg.NewAnd(iceberg.NewAnd(iceberg.GreaterThanEqual(ref("id"), int64(1)), iceberg.LessThanEqual(ref("id"), int64(5))), c).String()},
		{"id IS NULL", iceberg.IsNull(ref("id")).String()},
		{"id is not null", iceberg.NotNull(ref("id")).String()},
		{"id NOT IN (1, 2)", "NotIn(term=Reference(name='id'), {[1 2]})"},
		{"id NOT IN (5)", iceberg.NotEqualTo(ref("id"), int64(5)).String()},
		{"NOT a = 1", iceberg.NewNot(a).String()},
		{"NOT (a = 1 OR b = 2)", iceberg.NewNot(iceberg.NewOr(a, b)).String()},
		{"not not a = 1", a.String()},
		{"a = 1 AND NOT b = 2 OR c = 3", iceberg.NewOr(iceberg.NewAnd(a, iceberg.NewNot(b)), c).String()},
		// Literal forms engines print.
		{"flag = true", iceberg.EqualTo(ref("flag"), true).String()},
		{"flag = FALSE", iceberg.EqualTo(ref("flag"), false).String()},
		{"blob = X'00ff'", eq("blob", iceberg.BinaryLiteral{0x00, 0xff}).String()},
		{"blob = x''", eq("blob", iceberg.BinaryLiteral{}).String()},
		{"date = DATE '2024-01-31'", "Equal(term=Reference(name='date'), literal=DATE '2024-01-31')"},
		{"ts = TIMESTAMP '2024-01-31 10:00:00.123456'", "Equal(term=Reference(name='ts'), literal=TIMESTAMP '2024-01-31 10:00:00.123456')"},
		{"ts = timestamp without time zone '2024-01-31T10:00'", "Equal(term=Reference(name='ts'), literal=TIMESTAMP '2024-01-31T10:00')"},
		{"ts = TIMESTAMPTZ '2024-01-31 10:00:00+00'", "Equal(term=Reference(name='ts'), literal=TIMESTAMPTZ '2024-01-31 10:00:00+00')"},
		{"ts = TIMESTAMP WITH TIME ZONE '2024-01-31 10:00:00Z'", "Equal(term=Reference(name='ts'), literal=TIMESTAMPTZ '2024-01-31 10:00:00Z')"},
		{"x = 1 AND x IN (X'01')", iceberg.NewAnd(iceberg.EqualTo(ref("x"), int64(1)), eq("x", iceberg.BinaryLiteral{1})).String()},
		{"id IN (1,\n 2)\r\n", "In(term=Reference(name='id'), {[1 2]})"},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("Parse(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}

	for _, tc := range []struct{ in, want string }{
		{"", "position 1: expected a column or (, found the end of the filter"},
		{"id", "position 3: expected a comparison, IN, BETWEEN or IS after id, found the end of the filter"},
		{"id ! 5", `position 4: expected a comparison, IN, BETWEEN or IS after id, found "!"`},
		{"ñame =< 5", `position 7: expected a number, a quoted value, TRUE or FALSE, found "<"`},
		{"id = ", "position 6: expected a number, a quoted value, TRUE or FALSE, found the end of the filter"},
		{"id = abc", `position 6: expected a number, a quoted value, TRUE or FALSE, found "abc"`},
		{"id = 'abc", "position 6: unterminated '"},
		{`"id = 1`, `position 1: unterminated "`},
		{"id = 12abc", `position 6: "12abc": not a number`},
		{"id = 1e999", `position 6: "1e999": out of range`},
		{"id = 1.2.3", `position 6: "1.2.3": not a number`},
		{"id = -", `position 6: "-": not a number`},
		{"id IN 1", `position 7: expected ( after IN, found "1"`},
		{"id IN ()", `position 8: expected a number, a quoted value, TRUE or FALSE, found ")"`},
		{"id IN (1, 2", "position 12: expected , or ), found the end of the filter"},
		{"id IN (1 2)", `position 10: expected , or ), found "2"`},
		{"(id = 1", "position 8: expected ), found the end of the filter"},
		{"id = 1 id = 2", `position 8: expected AND, OR or the end of the filter, found "id"`},
		{"id = 1 AND", "position 11: expected a column or (, found the end of the filter"},
		{"and = 1", `position 1: expected a column or (, found "and"`},
		{"id = 1 OR OR id = 2", `position 11: expected a column or (, found "OR"`},
		{"id == 1", `position 5: expected a number, a quoted value, TRUE or FALSE, found "="`},
		{"NOT", "position 4: expected a column or (, found the end of the filter"},
		{"not = 1", `position 5: expected a column or (, found "="`},
		{"id NOT 5", `position 8: expected IN or BETWEEN after id NOT, found "5"`},
		{"id NOT = 5", `position 8: expected IN or BETWEEN after id NOT, found "="`},
		{"id IS 5", `position 7: expected NULL after IS, found "5"`},
		{"id IS NOT", "position 10: expected NULL after IS, found the end of the filter"},
		{"id BETWEEN 1 OR 5", `position 14: expected AND after BETWEEN 1, found "OR"`},
		{"id BETWEEN 1 AND", "position 17: expected a number, a quoted value, TRUE or FALSE, found the end of the filter"},
		{"b = X'0g'", `position 5: X'0g': not hexadecimal digits in pairs`},
		{"b = X'abc'", `position 5: X'abc': not hexadecimal digits in pairs`},
		{"b = X'00", "position 5: unterminated '"},
		{"d = DATE '2024-13-01'", "position 10: DATE '2024-13-01': not a date (YYYY-MM-DD)"},
		{"d = DATE 5", `position 10: expected a quoted value after DATE, found "5"`},
		{"d = DATE", "position 9: expected a quoted value after DATE, found the end of the filter"},
		{"t = TIMESTAMP '2024-01-31'", "position 15: TIMESTAMP '2024-01-31': not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff])"},
		{"t = TIMESTAMP '2024-01-31 10:00:00Z'", "position 15: TIMESTAMP '2024-01-31 10:00:00Z': a zone in a TIMESTAMP (write TIMESTAMPTZ)"},
		{"t = TIMESTAMPTZ '2024-01-31 10:00:00'", "position 17: TIMESTAMPTZ '2024-01-31 10:00:00': no zone (add Z or +00:00)"},
		{"t = TIMESTAMP WITH ZONE '2024-01-31 10:00:00Z'", `position 20: expected TIME after WITH, found "ZONE"`},
		{"t = TIMESTAMP WITH TIME '2024-01-31 10:00:00Z'", `position 25: expected ZONE after TIME, found string '2024-01-31 10:00:00Z'`},
		// Filters of several lines, as files hold them, say where by line.
		{"id = 1\nAND", "line 2, column 4: expected a column or (, found the end of the filter"},
		{"id IN (1,\r\n  2 3)", `line 2, column 5: expected , or ), found "3"`},
		{"a = 1 OR\n\tb = 'x", "line 2, column 6: unterminated '"},
	} {
		_, err := Parse(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) error %v, want %s", tc.in, err, tc.want)
		}
	}
}

// TestBind binds literals as the column's type, exactly, and names column
// and value when one does not fit.
func TestBind(t *testing.T) {
	// The columns of index/lookup's fixture tables, and qty, an int.
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "uid", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 6, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 7, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 8, Name: "qty", Type: iceberg.PrimitiveTypes.Int32})
	for _, tc := range []struct{ where, want string }{
		{"id = 12", "BoundEqual(term=BoundReference(field=1: id: optional long, accessor=Accessor(position=0, inner=<nil>)), literal=12)"},
		{"id = 12.00", "literal=12)"},
		{"id = '12'", "literal=12)"},
		{"id = 1.2e1", "literal=12)"},
		{"amount = 12.5", "literal=12.50)"},
		{"amount = 7", "literal=7.00)"},
		{"amount = '-0.5'", "literal=-0.50)"},
		{"amount = 1e-2", "literal=0.01)"},
		{"score = 0.1", "literal=0.1)"},
		{"score = 7", "literal=7)"},
		{"day = '2024-01-31'", "literal=2024-01-31)"},
		{"uid = 'F79C3E09-677C-4BBD-A479-3F349CB785E7'", "literal=f79c3e09-677c-4bbd-a479-3f349cb785e7)"},
		{"ts = '2024-01-31T10:00:00.123456'", "literal=2024-01-31 10:00:00.123456)"},
		{"ID = 5", "literal=5)"}, // names match regardless of case
		{"qty = 1099511627776", "AlwaysFalse()"},
		{"qty IN (1099511627776, 5)", "literal=5)"},
	} {
		bound, err := Bind(schema, mustParse(t, tc.where), false)
		if err != nil {
			t.Errorf("Bind(%s): %v", tc.where, err)
			continue
		}
		if s := bound.String(); !strings.HasSuffix(s, tc.want) {
			t.Errorf("Bind(%s) = %s, want …%s", tc.where, s, tc.want)
		}
	}

	for _, tc := range []struct {
		where         string
		caseSensitive bool
		want          string
	}{
		{"id = 'abc'", false, "id: cannot use 'abc' as long"},
		{"id = 99999999999999999999", false, "id: cannot use 99999999999999999999 as long: out of range"},
		{"id > 99999999999999999999.5", false, "id: cannot use 99999999999999999999.5 as long: out of range"},
		{"id IN (1, 'x')", false, "id: cannot use 'x' as long"},
		{"amount = 'abc'", false, "amount: cannot use 'abc' as decimal(12, 2)"},
		{"amount = '1/2'", false, "amount: cannot use '1/2' as decimal(12, 2)"},
		{"email = 5", false, "email: cannot use 5 as string"},
		{"day = '2024-13-01'", false, "day: cannot use '2024-13-01' as date"},
		{"uid = 'not-a-uuid'", false, "uid: cannot use 'not-a-uuid' as uuid"},
		{"ts = 5.5", false, "ts: cannot use 5.5 as timestamp"},
		{"ID = 5", true, "ID: no such column"},
		{"nope = 5", false, "nope: no such column"},
		{"id = 1 AND email = 5", false, "email: cannot use 5 as string"},
	} {
		_, err := Bind(schema, mustParse(t, tc.where), tc.caseSensitive)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Bind(%s) error %v, want %s", tc.where, err, tc.want)
		}
	}
	bound, err := Bind(schema, mustParse(t, "amount IN (1, 2.5)"), false)
	if err != nil {
		t.Fatal(err)
	}
	set := bound.(iceberg.BoundSetPredicate).Literals()
	if set.Len() != 2 || !set.Contains(iceberg.DecimalLiteral{Val: decimal128.FromI64(100), Scale: 2}) ||
		!set.Contains(iceberg.DecimalLiteral{Val: decimal128.FromI64(250), Scale: 2}) {
		t.Errorf("amount IN (1, 2.5) bound to %s, want 1.00 and 2.50", bound)
	}

	// Predicates not made by Parse bind as iceberg-go binds them, with
	// the column named.
	if _, err := Bind(schema, iceberg.EqualTo(iceberg.Reference("id"), "abc"), false); err == nil || !strings.HasPrefix(err.Error(), "id: ") {
		t.Errorf("iceberg-go predicate: error %v, want one naming id", err)
	}
}

// TestBindSQL binds the filters SQL writes to what iceberg-go's own
// predicates of the column's types bind to: comparisons, NULL tests and
// negations as they are; literals as engines print them; and a number or
// timestamp between two values of the column's type as what it means for
// that type: = matches nothing, != everything, IN leaves it out and a range
// compares with the nearest value inside it.
func TestBindSQL(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 4, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 5, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 6, Name: "tz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 7, Name: "tsns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 8, Name: "tzns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
		iceberg.NestedField{ID: 9, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 10, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 11, Name: "key", Type: iceberg.FixedTypeOf(2)},
		iceberg.NestedField{ID: 12, Name: "email", Type: iceberg.PrimitiveTypes.String},
	)
	ref := func(name string) iceberg.Reference { return iceberg.Reference(name) }
	dec := func(unscaled int64) iceberg.Literal {
		return iceberg.DecimalLiteral{Val: decimal128.FromI64(unscaled), Scale: 2}
	}
	lit := func(op iceberg.Operation, col string, l iceberg.Literal) iceberg.BooleanExpression {
		return iceberg.LiteralPredicate(op, ref(col), l)
	}
	micros := func(s string) iceberg.Literal {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return iceberg.TimestampLiteral(tm.UnixMicro())
	}
	nanos := func(s string) iceberg.Literal {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return iceberg.TimestampNsLiteral(tm.UnixNano())
	}
	ten := micros("2024-01-31T10:00:00Z")
	for _, tc := range []struct {
		where string
		want  iceberg.BooleanExpression // unbound, of literals of the column's type
	}{
		{"id < 12", iceberg.LessThan(ref("id"), int64(12))},
		{"id <> 12", iceberg.NotEqualTo(ref("id"), int64(12))},
		{"id NOT IN (1, 2)", iceberg.NotIn(ref("id"), int64(1), int64(2))},
		{"id BETWEEN 1 AND 5", iceberg.NewAnd(iceberg.GreaterThanEqual(ref("id"), int64(1)), iceberg.LessThanEqual(ref("id"), int64(5)))},
		{"id NOT BETWEEN 1 AND 5", iceberg.NewOr(iceberg.LessThan(ref("id"), int64(1)), iceberg.GreaterThan(ref("id"), int64(5)))},
		{"id IS NULL", iceberg.IsNull(ref("id"))},
		{"id IS NOT NULL", iceberg.NotNull(ref("id"))},
		{"n IS NULL", iceberg.AlwaysFalse{}}, // required: never null
		{"NOT id = 5", iceberg.NewNot(iceberg.EqualTo(ref("id"), int64(5)))},
		{"NOT (id = 5 AND n > 1)", iceberg.NewNot(iceberg.NewAnd(iceberg.EqualTo(ref("id"), int64(5)), iceberg.GreaterThan(ref("n"), int32(1))))},

		// More digits after the point than the column keeps: no value
		// equals the literal.
		{"amount = 1.234", iceberg.AlwaysFalse{}},
		{"amount = -1.234", iceberg.AlwaysFalse{}},
		{"amount != 1.234", iceberg.AlwaysTrue{}},
		{"NOT amount = 1.234", iceberg.AlwaysTrue{}},
		{"amount IN (1.234, 0.001)", iceberg.AlwaysFalse{}},
		{"amount IN (1.234, 7)", lit(iceberg.OpEQ, "amount", dec(700))},
		{"amount NOT IN (1.234)", iceberg.AlwaysTrue{}},
		{"amount NOT IN (1.234, 7)", lit(iceberg.OpNEQ, "amount", dec(700))},
		{"amount < 1.234", lit(iceberg.OpLTEQ, "amount", dec(123))},
		{"amount <= 1.234", lit(iceberg.OpLTEQ, "amount", dec(123))},
		{"amount > 1.234", lit(iceberg.OpGTEQ, "amount", dec(124))},
		{"amount >= 1.234", lit(iceberg.OpGTEQ, "amount", dec(124))},
		{"amount > -1.234", lit(iceberg.OpGTEQ, "amount", dec(-123))},
		{"amount < -1.234", lit(iceberg.OpLTEQ, "amount", dec(-124))},
		{"amount BETWEEN 1.001 AND 1.009", iceberg.NewAnd(lit(iceberg.OpGTEQ, "amount", dec(101)), lit(iceberg.OpLTEQ, "amount", dec(100)))},
		{"amount = 1.230", lit(iceberg.OpEQ, "amount", dec(123))},
		{"amount = 1.2345e1", iceberg.AlwaysFalse{}},
		{"id = 12.5", iceberg.AlwaysFalse{}},
		{"id < 12.5", iceberg.LessThanEqual(ref("id"), int64(12))},
		{"id > -12.5", iceberg.GreaterThanEqual(ref("id"), int64(-12))},
		{"n = 1.5 OR n = 2", iceberg.EqualTo(ref("n"), int32(2))},

		// Booleans and binary.
		{"flag = true", iceberg.EqualTo(ref("flag"), true)},
		{"flag != FALSE", iceberg.NotEqualTo(ref("flag"), false)},
		{"flag = 'true'", iceberg.EqualTo(ref("flag"), true)},
		{"blob = X'00FF'", lit(iceberg.OpEQ, "blob", iceberg.BinaryLiteral{0, 0xff})},
		{"key = x'0a0b'", lit(iceberg.OpEQ, "key", iceberg.FixedLiteral{0x0a, 0x0b})},

		// Dates and timestamps as engines print them.
		{"day = DATE '2024-01-31'", lit(iceberg.OpEQ, "day", iceberg.DateLiteral(19753))},
		{"day >= '2024-01-31'", lit(iceberg.OpGTEQ, "day", iceberg.DateLiteral(19753))},
		{"ts = '2024-01-31 10:00:00.123456'", lit(iceberg.OpEQ, "ts", micros("2024-01-31T10:00:00.123456Z"))},
		{"ts = '2024-01-31t10:00:00.1'", lit(iceberg.OpEQ, "ts", micros("2024-01-31T10:00:00.1Z"))},
		{"ts = '2024-01-31 10:00'", lit(iceberg.OpEQ, "ts", ten)},
		{"ts = TIMESTAMP '2024-01-31 10:00:00'", lit(iceberg.OpEQ, "ts", ten)},
		{"ts = TIMESTAMP '2024-01-31 10:00:00.000000000'", lit(iceberg.OpEQ, "ts", ten)},
		{"ts = '2024-01-31 10:00:00.123456789'", iceberg.AlwaysFalse{}},
		{"ts < '2024-01-31 10:00:00.123456789'", lit(iceberg.OpLTEQ, "ts", micros("2024-01-31T10:00:00.123456Z"))},
		{"ts > TIMESTAMP '1969-12-31 23:59:59.9999995'", lit(iceberg.OpGTEQ, "ts", iceberg.TimestampLiteral(0))},
		{"tz = '2024-01-31 10:00:00Z'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = '2024-01-31 10:00:00 UTC'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = '2024-01-31 10:00:00+00'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = '2024-01-31 10:00:00.000000+00:00'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = '2024-01-31 12:00:00+02'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = '2024-01-31 05:30:00-0430'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = '2024-01-31T10:00:00z'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = TIMESTAMPTZ '2024-01-31 10:00:00+00'", lit(iceberg.OpEQ, "tz", ten)},
		{"tz = TIMESTAMP WITH TIME ZONE '2024-01-31 11:00:00+01:00'", lit(iceberg.OpEQ, "tz", ten)},
		{"tsns = '2024-01-31 10:00:00.123456789'", lit(iceberg.OpEQ, "tsns", nanos("2024-01-31T10:00:00.123456789Z"))},
		{"tsns = TIMESTAMP '2024-01-31 10:00:00'", lit(iceberg.OpEQ, "tsns", nanos("2024-01-31T10:00:00Z"))},
		{"tzns = '2024-01-31 10:00:00.123456789+00'", lit(iceberg.OpEQ, "tzns", nanos("2024-01-31T10:00:00.123456789Z"))},
		{"tzns = TIMESTAMPTZ '2024-01-31 10:00:00Z'", lit(iceberg.OpEQ, "tzns", nanos("2024-01-31T10:00:00Z"))},
	} {
		bound, err := Bind(schema, mustParse(t, tc.where), false)
		if err != nil {
			t.Errorf("Bind(%s): %v", tc.where, err)
			continue
		}
		want, err := iceberg.BindExpr(schema, tc.want, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		if !bound.Equals(want) {
			t.Errorf("Bind(%s) = %s, want %s", tc.where, bound, want)
		}
	}

	for _, tc := range []struct{ where, want string }{
		{"email = DATE '2024-01-31'", "email: cannot use DATE '2024-01-31' as string"},
		{"ts = DATE '2024-01-31'", "ts: cannot use DATE '2024-01-31' as timestamp"},
		{"day = TIMESTAMP '2024-01-31 00:00:00'", "day: cannot use TIMESTAMP '2024-01-31 00:00:00' as date"},
		{"ts = TIMESTAMPTZ '2024-01-31 10:00:00Z'", "ts: cannot use TIMESTAMPTZ '2024-01-31 10:00:00Z' as timestamp"},
		{"tz = TIMESTAMP '2024-01-31 10:00:00'", "tz: cannot use TIMESTAMP '2024-01-31 10:00:00' as timestamptz"},
		{"tz = '2024-01-31 10:00:00'", "tz: cannot use '2024-01-31 10:00:00' as timestamptz: no zone, for a column with one (add Z or +00:00)"},
		{"ts = '2024-01-31 10:00:00Z'", "ts: cannot use '2024-01-31 10:00:00Z' as timestamp: a zone, for a column without one"},
		{"ts = '2024-01-31 24:00:00'", "ts: cannot use '2024-01-31 24:00:00' as timestamp"},
		{"ts = '2024-01-31'", "ts: cannot use '2024-01-31' as timestamp"},
		{"tz = '2024-01-31 10:00:00+19'", "tz: cannot use '2024-01-31 10:00:00+19' as timestamptz"},
		{"tsns = '2300-01-01 00:00:00'", "tsns: cannot use '2300-01-01 00:00:00' as timestamp_ns: out of range"},
		{"flag = 1", "flag: cannot use 1 as boolean"},
		{"email = TRUE", "email: cannot use TRUE as string"},
		{"email = X'00'", "email: cannot use X'00' as string"},
		{"key = X'00'", "key: cannot use X'00' as fixed[2]"},
		{"id < 'abc'", "id: cannot use 'abc' as long"},
		{"id BETWEEN 1 AND 'x'", "id: cannot use 'x' as long"},
		{"nope IS NULL", "nope: no such column"},
	} {
		_, err := Bind(schema, mustParse(t, tc.where), false)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Bind(%s) error %v, want %s", tc.where, err, tc.want)
		}
	}
}

// TestBindNames: names match regardless of case unless asked otherwise;
// the exact name wins over others differing from it in case, and a name
// that matches several only in case is an error naming them.
func TestBindNames(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "Aa", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "aA", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "UserID", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "Address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "City", Type: iceberg.PrimitiveTypes.String}}}},
	)
	for _, tc := range []struct {
		where         string
		caseSensitive bool
		field         int // bound to, or 0 for an error
		err           string
	}{
		{"Aa = 1", false, 1, ""},
		{"aA = 1", false, 2, ""},
		{"aA IS NULL", true, 2, ""},
		{"userid = 1", false, 3, ""},
		{"USERID IN (1, 2)", false, 3, ""},
		{"NOT userid BETWEEN 1 AND 2", false, 3, ""},
		{"address.city = 'Oslo'", false, 5, ""},
		{"AA = 1", false, 0, "AA: ambiguous column: matches Aa, aA regardless of case"},
		{"aa IS NOT NULL", false, 0, "aa: ambiguous column: matches Aa, aA regardless of case"},
		{"userid = 1", true, 0, "userid: no such column"},
	} {
		bound, err := Bind(schema, mustParse(t, tc.where), tc.caseSensitive)
		if tc.field == 0 {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Bind(%s) error %v, want %s", tc.where, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Bind(%s): %v", tc.where, err)
			continue
		}
		var ids []int
		iceberg.VisitExpr(bound, fieldIDs{&ids})
		if len(ids) == 0 {
			t.Errorf("Bind(%s) = %s, want a predicate of field %d", tc.where, bound, tc.field)
		}
		for _, id := range ids {
			if id != tc.field {
				t.Errorf("Bind(%s) = %s, want field %d", tc.where, bound, tc.field)
				break
			}
		}
	}
}

// fieldIDs collects the fields of a bound expression.
type fieldIDs struct{ ids *[]int }

func (fieldIDs) VisitTrue() bool                            { return true }
func (fieldIDs) VisitFalse() bool                           { return true }
func (fieldIDs) VisitNot(bool) bool                         { return true }
func (fieldIDs) VisitAnd(_, _ bool) bool                    { return true }
func (fieldIDs) VisitOr(_, _ bool) bool                     { return true }
func (fieldIDs) VisitUnbound(iceberg.UnboundPredicate) bool { return true }
func (v fieldIDs) VisitBound(p iceberg.BoundPredicate) bool {
	*v.ids = append(*v.ids, p.Term().Ref().Field().ID)
	return true
}

func mustParse(t testing.TB, where string) iceberg.BooleanExpression {
	t.Helper()
	expr, err := Parse(where)
	if err != nil {
		t.Fatal(err)
	}
	return expr
}

// TestBindRefusesNestedColumns: a struct, list or map column, or a field
// inside a list or map, is refused with a sentence saying what a filter
// can name (iceberg-go said "cannot use 1 as list<int>", "invalid schema"
// and "unhandled bound reference type: map<string, int>").
func TestBindRefusesNestedColumns(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "l", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 2, Name: "m", Type: &iceberg.MapType{KeyID: 5, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 6, ValueType: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 3, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "a", Type: iceberg.PrimitiveTypes.Int32}}}},
	)
	for filter, want := range map[string]string{
		"l = 1":               "l is a list: a filter can compare or test for NULL only columns of a primitive type and struct fields",
		"m IS NULL":           "m is a map: a filter can compare or test for NULL only columns of a primitive type and struct fields",
		"st = 1":              "st is a struct: a filter compares its fields (st.a), not the struct itself",
		"m.key = 'k'":         "m.key is inside map m: a filter cannot name the elements of a list nor the keys or values of a map",
		"l.element IN (1, 2)": "l.element is inside list l: a filter cannot name the elements of a list nor the keys or values of a map",
	} {
		expr, err := Parse(filter)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Bind(schema, expr, false); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", filter, err, want)
		}
	}
	expr, _ := Parse("st.a = 1")
	if _, err := Bind(schema, expr, false); err != nil {
		t.Errorf("st.a = 1: %v", err)
	}
}
