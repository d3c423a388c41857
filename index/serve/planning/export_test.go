package planning

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Residual is the residual serve sends with a task of data file f for the
// bound filter, for the package's external tests.
func Residual(meta table.Metadata, schema *iceberg.Schema, bound iceberg.BooleanExpression, caseSensitive bool, f iceberg.DataFile) (iceberg.BooleanExpression, error) {
	return newResiduals(meta, schema, bound, caseSensitive).of(f)
}
