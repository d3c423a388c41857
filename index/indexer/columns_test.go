package indexer_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/indexer"
)

// TestResolveColumnsCase: column names match regardless of case, as in
// lookup filters, whether given or enabled by table properties; the exact
// name wins over others differing from it in case, a name matching several
// only in case is an error naming them, and a Column carries the schema's
// name and the fpp property keyed by it.
func TestResolveColumnsCase(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "UserID", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "Aa", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "aA", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "Address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "City", Type: iceberg.PrimitiveTypes.String}}}},
	)
	fpp := iceberg.Properties{indexer.PropBloomFPPPrefix + "UserID": "0.05"}
	for _, tc := range []struct {
		names []string
		props iceberg.Properties
		want  string // name:id:fpp of each column, or the error
	}{
		{[]string{"UserID"}, fpp, "UserID:1:0.05"},
		{[]string{"userid"}, fpp, "UserID:1:0.05"},
		{[]string{" USERID ", "userId"}, nil, "UserID:1:0.01"},
		{[]string{"address.city"}, nil, "Address.City:5:0.01"},
		{[]string{"Aa", "aA"}, nil, "Aa:2:0.01 aA:3:0.01"},
		{nil, iceberg.Properties{indexer.PropBloomEnabledPrefix + "userid": "true"}, "UserID:1:0.01"},
		{[]string{"userid"}, iceberg.Properties{indexer.PropBloomFPPPrefix + "userid": "0.2"}, "UserID:1:0.2"},
		{[]string{"AA"}, nil, `column "AA" is ambiguous: it matches Aa, aA regardless of case`},
		{[]string{"aa"}, nil, `column "aa" is ambiguous: it matches Aa, aA regardless of case`},
		{[]string{"user_id"}, nil, `column "user_id" is not in the table schema`},
		{[]string{"userid"}, iceberg.Properties{indexer.PropBloomFPPPrefix + "UserID": "2"}, `table property write.parquet.bloom-filter-fpp.column.UserID="2" is not a rate in (0, 1)`},
	} {
		cols, err := indexer.ResolveColumns(schema, tc.props, tc.names, 0)
		var got []string
		for _, c := range cols {
			got = append(got, c.Name+":"+strconv.Itoa(c.Field.ID)+":"+strconv.FormatFloat(c.FPP, 'g', -1, 64))
		}
		if err != nil {
			got = []string{err.Error()}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("ResolveColumns(%q, %v) = %s, want %s", tc.names, tc.props, strings.Join(got, " "), tc.want)
		}
	}
}
