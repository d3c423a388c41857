package filescan

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
)

// otherReader is a column chunk reader of none of the kinds readChunk
// knows.
type otherReader struct{ file.ColumnChunkReader }

func (otherReader) Type() parquet.Type { return parquet.Types.Int32 }

// TestErrorsNameNoGoType: what a user reads of a value or a column chunk
// the scan cannot read names the problem in words — its Iceberg or Parquet
// type — never a Go type (before: "value {1} of Go type struct { A int } is
// not understood", "unsupported column reader filescan.otherReader").
func TestErrorsNameNoGoType(t *testing.T) {
	_, err := nativeLiteral(struct{ A int }{1}, iceberg.PrimitiveTypes.Int32)
	if err == nil || !strings.Contains(err.Error(), "int") || strings.Contains(err.Error(), "Go type") || strings.Contains(err.Error(), "struct {") {
		t.Errorf("an unknown form of value: %v; want words naming the column's type, no Go type", err)
	}
	err = (*Scanner)(nil).readChunk(otherReader{}, nil)
	if err == nil || !strings.Contains(err.Error(), "INT32") || strings.Contains(err.Error(), "otherReader") {
		t.Errorf("an unknown column chunk reader: %v; want its Parquet type, no Go type", err)
	}
}
