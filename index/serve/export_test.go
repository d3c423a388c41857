package serve

import (
	"net/http"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// AddFilesTable is addFilesTable for the package's external tests (the
// benchmarks).
var AddFilesTable = addFilesTable

// Compact is compact for the package's external tests.
func Compact(f iceberg.DataFile) iceberg.DataFile { return compact(f) }

// Residual is the residual serve sends with a task of data file f for the
// bound filter, for the package's external tests.
func Residual(meta table.Metadata, schema *iceberg.Schema, bound iceberg.BooleanExpression, caseSensitive bool, f iceberg.DataFile) (iceberg.BooleanExpression, error) {
	return newResiduals(meta, schema, bound, caseSensitive).of(f)
}

// SpecChecked is specChecked for the package's external tests: every
// server they start answers through it.
func SpecChecked(t testing.TB, h http.Handler) http.Handler { return specChecked(t, h) }
