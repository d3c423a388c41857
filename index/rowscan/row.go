package rowscan

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
)

// recordRow is row i of a record as iceberg-go's expression evaluator reads
// rows: by the schema's positions (positions maps them to the record's
// columns), each value in the Go type of its Iceberg literal.
type recordRow struct {
	rec       arrow.RecordBatch
	positions []int
	i         int
}

func (r *recordRow) Size() int { return len(r.positions) }

func (r *recordRow) Get(pos int) any {
	if pos < 0 || pos >= len(r.positions) || r.positions[pos] < 0 {
		return nil // a column the filter does not name is not read
	}
	return value(r.rec.Column(r.positions[pos]), r.i)
}

func (*recordRow) Set(int, any) { panic("rowscan: rows are read-only") }

// structRow is row i of a struct array, its fields by position.
type structRow struct {
	arr *array.Struct
	i   int
}

func (r structRow) Size() int       { return r.arr.NumField() }
func (r structRow) Get(pos int) any { return value(r.arr.Field(pos), r.i) }
func (structRow) Set(int, any)      { panic("rowscan: rows are read-only") }

// value returns row i of arr as an iceberg.Literal of the value's Go type
// (int32, int64, iceberg.Date, iceberg.Timestamp, iceberg.Decimal,
// []byte…), a structRow for a struct, and nil for NULL and for lists and
// maps, which no predicate names.
func value(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Int32:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Int64:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Float32:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Float64:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Date32:
		return iceberg.NewLiteral(iceberg.Date(a.Value(i)))
	case *array.Time64:
		return iceberg.NewLiteral(iceberg.Time(a.Value(i)))
	case *array.Timestamp:
		if a.DataType().(*arrow.TimestampType).Unit == arrow.Nanosecond {
			return iceberg.NewLiteral(iceberg.TimestampNano(a.Value(i)))
		}
		return iceberg.NewLiteral(iceberg.Timestamp(a.Value(i)))
	case *array.Decimal128:
		return iceberg.NewLiteral(iceberg.Decimal{Val: a.Value(i), Scale: int(a.DataType().(*arrow.Decimal128Type).Scale)})
	case *array.String:
		return iceberg.NewLiteral(a.Value(i))
	case *array.LargeString:
		return iceberg.NewLiteral(a.Value(i))
	case *array.StringView:
		return iceberg.NewLiteral(a.Value(i))
	case *extensions.UUIDArray:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Binary:
		return iceberg.NewLiteral(a.Value(i))
	case *array.LargeBinary:
		return iceberg.NewLiteral(a.Value(i))
	case *array.BinaryView:
		return iceberg.NewLiteral(a.Value(i))
	case *array.FixedSizeBinary:
		return iceberg.NewLiteral(a.Value(i))
	case *array.Struct:
		return structRow{a, i}
	}
	return nil
}

// at returns the value at a bound reference's position path: a top-level
// column, or a field of structs within it; nil when NULL, or when a struct
// on the way is.
func (r *recordRow) at(path []int) any {
	v := r.Get(path[0])
	for _, pos := range path[1:] {
		s, ok := v.(structRow)
		if !ok {
			return nil
		}
		v = s.Get(pos)
	}
	return v
}
