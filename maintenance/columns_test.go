package maintenance_test

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// TestMaintainTablesIndexedWithColumns: maintain over a namespace keeps
// every table that has an icebloom index, including one built with its
// columns named and no bloom-filter property, syncing it with the columns
// its index holds; a table with neither index nor property is skipped;
// a property that enables a column that cannot be indexed (unknown, or a
// list element) fails its table with an error naming the column, rather
// than skipping it silently.
func TestMaintainTablesIndexedWithColumns(t *testing.T) {
	cat := catalogtest.NewCatalog(t)
	named := cat.NewTable(t, "named", catalogtest.IDSchema, nil)
	named = catalogtest.AppendIDs(t, named, 1, 2)
	if _, err := indexer.Build(bg, cat, named.Identifier(), indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	named = catalogtest.AppendIDs(t, named, 3, 4)

	plain := cat.NewTable(t, "plain", catalogtest.IDSchema, nil)
	catalogtest.AppendIDs(t, plain, 1, 2)
	misspelt := cat.NewTable(t, "misspelt", catalogtest.IDSchema, iceberg.Properties{indexer.PropBloomEnabledPrefix + "idd": "true"})
	catalogtest.AppendIDs(t, misspelt, 1, 2)
	listSchema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}})
	cat.NewTable(t, "listed", listSchema, iceberg.Properties{indexer.PropBloomEnabledPrefix + "tags.element": "true"})

	tables, err := maintenance.Tables(bg, cat, table.Identifier{"db"})
	if err != nil {
		t.Fatal(err)
	}
	reports := maintenance.Maintain(bg, cat, tables, maintenance.MaintainOptions{})
	if len(reports) != 4 {
		t.Fatalf("%d reports for tables %v", len(reports), tables)
	}
	for _, r := range reports {
		switch r.Table {
		case "db.named":
			if r.Failed() || r.Skipped != "" || r.Sync == nil || r.Sync.FilesIndexed != 1 || r.Sync.FilesCovered != 1 ||
				strings.Join(r.Sync.Columns, ",") != "id" || r.GC == nil {
				t.Errorf("table indexed with --columns: %+v", r)
			}
		case "db.plain":
			if r.Skipped != maintenance.SkippedNoColumns || r.Sync != nil || r.Failed() {
				t.Errorf("table without index or property: %+v", r)
			}
		case "db.misspelt":
			if !strings.Contains(r.Error, `table property write.parquet.bloom-filter-enabled.column.idd=true: column "idd" is not in the table schema`) {
				t.Errorf("table enabling a missing column: %+v", r)
			}
		case "db.listed":
			if !strings.Contains(r.Error, `column "tags.element" cannot be indexed: it is inside the list tags`) {
				t.Errorf("table enabling a list element: %+v", r)
			}
		default:
			t.Errorf("unexpected table %s", r.Table)
		}
	}
	named, err = cat.LoadTable(bg, named.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	for f, ok := range covered(t, named) {
		if !ok {
			t.Errorf("%s is not covered after maintain", f)
		}
	}
}
