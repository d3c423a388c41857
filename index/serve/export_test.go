package serve

import (
	"net/http"
	"testing"

	"github.com/apache/iceberg-go"
)

// AddFilesTable is addFilesTable for the package's external tests (the
// benchmarks).
var AddFilesTable = addFilesTable

// Compact is compact for the package's external tests.
func Compact(f iceberg.DataFile) iceberg.DataFile { return compact(f) }

// SpecChecked is specChecked for the package's external tests: every
// server they start answers through it.
func SpecChecked(t testing.TB, h http.Handler) http.Handler { return specChecked(t, h) }
