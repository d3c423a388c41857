package serve

import "github.com/apache/iceberg-go"

// AddFilesTable is addFilesTable for the package's external tests (the
// benchmarks).
var AddFilesTable = addFilesTable

// Compact is compact for the package's external tests.
func Compact(f iceberg.DataFile) iceberg.DataFile { return compact(f) }
