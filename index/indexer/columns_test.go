package indexer_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

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

// nestedSchema has a top-level column, a struct-nested one, and a list and
// a map whose elements, keys and values the index cannot cover.
var nestedSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}},
	iceberg.NestedField{ID: 5, Name: "attrs", Type: &iceberg.MapType{KeyID: 6, KeyType: iceberg.PrimitiveTypes.String,
		ValueID: 7, ValueType: iceberg.PrimitiveTypes.String, ValueRequired: false}},
	iceberg.NestedField{ID: 8, Name: "address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 9, Name: "city", Type: iceberg.PrimitiveTypes.String}}}},
	iceberg.NestedField{ID: 10, Name: "points", Type: &iceberg.ListType{ElementID: 11, ElementRequired: false,
		Element: &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 12, Name: "x", Type: iceberg.PrimitiveTypes.Int32}}}}},
)

// metadataOf is fresh table metadata of the schema with the properties.
func metadataOf(t *testing.T, sc *iceberg.Schema, props iceberg.Properties) table.Metadata {
	t.Helper()
	meta, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file://"+t.TempDir(), props)
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// fieldID is the id of a column in the metadata's current schema.
func fieldID(t *testing.T, meta table.Metadata, name string) int {
	t.Helper()
	f, ok := meta.CurrentSchema().FindFieldByName(name)
	if !ok {
		t.Fatalf("no column %s", name)
	}
	return f.ID
}

// TestListAndMapColumnsRefused: a field inside a list or a map (an element,
// a key, a value, a struct field of an element) is refused with an error
// naming it and why, whether named or enabled by a table property — the
// build reads only leaves with one value per row, so it would commit
// filters with nothing in them, which a reader would prune every file with.
// Top-level and struct-nested columns are accepted.
func TestListAndMapColumnsRefused(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"tags.element", "the list tags"},
		{"attrs.key", "the map attrs"},
		{"attrs.value", "the map attrs"},
		{"points.element.x", "the list points"},
	} {
		want := `column "` + tc.name + `" cannot be indexed: it is inside ` + tc.in
		if _, err := indexer.ResolveColumns(nestedSchema, nil, []string{tc.name}, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ResolveColumns(%s): %v, want %q", tc.name, err, want)
		}
		meta := metadataOf(t, nestedSchema, iceberg.Properties{indexer.PropBloomEnabledPrefix + tc.name: "true"})
		_, err := indexer.IndexedColumns(meta, nil, nil, 0)
		if err == nil || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "table property "+indexer.PropBloomEnabledPrefix+tc.name+"=true") {
			t.Errorf("IndexedColumns with %s enabled by a property: %v", tc.name, err)
		}
	}
	cols, err := indexer.ResolveColumns(nestedSchema, nil, []string{"id", "address.city"}, 0)
	if err != nil || len(cols) != 2 || cols[1].Name != "address.city" {
		t.Fatalf("top-level and struct columns: %v, %v", cols, err)
	}
}

// TestIndexedColumns: the indexed columns are those the index holds, united
// with those table properties enable and those named, each once with every
// reason it is indexed; a held field the schema dropped or that cannot be
// indexed is reported, not fatal; the rate is the flag's, else the
// property's, else the strictest the index's filters target, else the
// default; with no column from anywhere the error is ErrNoColumns.
func TestIndexedColumns(t *testing.T) {
	meta := metadataOf(t, nestedSchema, iceberg.Properties{
		indexer.PropBloomEnabledPrefix + "email": "true",
		indexer.PropBloomFPPPrefix + "email":     "0.02",
	})
	id, email, city, tags := fieldID(t, meta, "id"), fieldID(t, meta, "email"), fieldID(t, meta, "address.city"), fieldID(t, meta, "tags.element")
	held := []indexer.HeldColumn{{FieldID: id, FPP: 0.001}, {FieldID: email, FPP: 0.05}, {FieldID: tags}, {FieldID: 999, FPP: 0.01}}
	describe := func(c *indexer.ColumnChoice) string {
		var parts []string
		for _, col := range c.Columns {
			parts = append(parts, col.Name+":"+strings.Join(col.Sources, "+")+":"+strconv.FormatFloat(col.FPP, 'g', -1, 64))
		}
		for _, n := range c.NotIndexed {
			parts = append(parts, "not:"+strconv.Itoa(n.FieldID)+":"+n.Name)
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		held  []indexer.HeldColumn
		names []string
		fpp   float64
		want  string
	}{
		{held, nil, 0, "email:index+property:0.02 id:index:0.001 not:" + strconv.Itoa(tags) + ":tags.element not:999:"},
		{held, []string{"address.city", "ID"}, 0, "address.city:columns:0.01 id:index+columns:0.001 email:index+property:0.02 not:" + strconv.Itoa(tags) + ":tags.element not:999:"},
		{held[:1], nil, 0.2, "email:property:0.2 id:index:0.2"},
		{nil, nil, 0, "email:property:0.02"},
		{[]indexer.HeldColumn{{FieldID: city}}, nil, 0, "address.city:index:0.01 email:property:0.02"},
	} {
		c, err := indexer.IndexedColumns(meta, tc.held, tc.names, tc.fpp)
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(c); got != tc.want {
			t.Errorf("IndexedColumns(%v, %q, %v) = %s, want %s", tc.held, tc.names, tc.fpp, got, tc.want)
		}
	}

	bare := metadataOf(t, nestedSchema, nil)
	if _, err := indexer.IndexedColumns(bare, nil, nil, 0); !errors.Is(err, indexer.ErrNoColumns) {
		t.Errorf("no columns anywhere: %v, want ErrNoColumns", err)
	}
	// Held fields that are all gone leave nothing to index: that is
	// ErrNoColumns too (the table is skipped, its filters reported).
	if _, err := indexer.IndexedColumns(bare, []indexer.HeldColumn{{FieldID: 999}}, nil, 0); !errors.Is(err, indexer.ErrNoColumns) ||
		!strings.Contains(err.Error(), `the index holds only columns that can no longer be indexed (field 999 "": no longer in the table schema)`) {
		t.Errorf("only a gone column held: %v, want ErrNoColumns", err)
	}
	if _, err := indexer.IndexedColumns(bare, nil, []string{"nope"}, 0); err == nil || errors.Is(err, indexer.ErrNoColumns) ||
		!strings.Contains(err.Error(), `column "nope" is not in the table schema`) {
		t.Errorf("an unknown named column: %v", err)
	}
}
