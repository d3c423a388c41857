package testfixture

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// DictionaryTable is db.dict, a table whose two files iceberg-go writes
// (through pqarrow, dictionary encoding on by default) with low-cardinality
// columns tag, n, amount and day beside a unique id.
func DictionaryTable(t *testing.T) (*catalogtest.Catalog, *table.Table) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tag", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	)
	cat := catalogtest.NewCatalog(t)
	tbl := cat.NewTable(t, "dict", sc, iceberg.Properties{})
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for f := range 2 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		for i := range 5000 {
			b.Field(0).(*array.Int64Builder).Append(int64(f*5000 + i)) // unique: may fall back to PLAIN
			if i%10 == 0 {
				for c := 1; c < 5; c++ {
					b.Field(c).AppendNull()
				}
				continue
			}
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("tag-%d", i%20))
			b.Field(2).(*array.Int32Builder).Append(int32(i % 17))
			b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i%8) * 125))
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(19000 + i%31))
		}
		rec := b.NewRecordBatch()
		b.Release()
		tbl = catalogtest.Append(t, tbl, rec)
		rec.Release()
	}
	return cat, tbl
}
