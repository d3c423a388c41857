package catalog

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// testSchema is the schema of the test tables.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

// openEmbedded opens the embedded catalog in dir and closes it at the end of
// the test.
func openEmbedded(t *testing.T, dir string) icecatalog.Catalog {
	t.Helper()
	return openT(t, Embedded(dir))
}

// openT opens the catalog o selects and closes it at the end of the test.
func openT(t *testing.T, o Options) icecatalog.Catalog {
	t.Helper()
	cat, err := Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, cat)
	return cat
}

// closeAtEnd closes cat at the end of the test, if it has anything to close.
func closeAtEnd(t *testing.T, cat icecatalog.Catalog) {
	if c, ok := cat.(icecatalog.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
}

// createTable creates the table ident (and its namespace) with testSchema.
func createTable(t *testing.T, cat icecatalog.Catalog, ident table.Identifier) *table.Table {
	t.Helper()
	ctx := t.Context()
	ns := icecatalog.NamespaceFromIdent(ident)
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, ident, testSchema, icecatalog.WithProperties(iceberg.Properties{"owner": "test"}))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// appendRows appends n rows to the table ident through an iceberg-go
// transaction and returns the new snapshot's id.
func appendRows(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, n int) (int64, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return 0, err
	}
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"id": %d, "name": "row %d"}`, i, i)
	}
	data, err := array.TableFromJSON(memory.DefaultAllocator, sc, []string{"[" + strings.Join(rows, ",") + "]"})
	if err != nil {
		return 0, err
	}
	defer data.Release()
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, data, int64(n), nil); err != nil {
		return 0, err
	}
	tbl, err = txn.Commit(ctx)
	if err != nil {
		return 0, err
	}
	return tbl.CurrentSnapshot().SnapshotID, nil
}

// appendT is appendRows failing the test on error.
func appendT(t *testing.T, cat icecatalog.Catalog, ident table.Identifier) int64 {
	t.Helper()
	id, err := appendRows(t.Context(), cat, ident, 3)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// hookProperty is a catalog property naming a hook in hooks: the file IO of
// that catalog's tables calls it before writing a table metadata file.
const hookProperty = "icebloom.test.metadata-hook"

// hooks holds the hooks of racedCatalog by name.
var hooks sync.Map

// The local file IO of this test binary, for file:// locations and plain
// paths (the Hadoop catalog's), is hookFS for catalogs that name a hook, the
// plain iceberg-go LocalFS otherwise.
func init() {
	for _, scheme := range []string{"file", ""} {
		icebergio.Unregister(scheme)
		icebergio.Register(scheme, func(_ context.Context, _ *url.URL, props map[string]string) (icebergio.IO, error) {
			if hook, ok := hooks.Load(props[hookProperty]); ok {
				return hookFS{hook: hook.(func())}, nil
			}
			return icebergio.LocalFS{}, nil
		})
	}
}

// hookFS is the local file system calling hook before it creates a table
// metadata file.
type hookFS struct {
	icebergio.LocalFS
	hook func()
}

func (fs hookFS) Create(name string) (icebergio.FileWriter, error) {
	if strings.HasSuffix(name, ".metadata.json") {
		fs.hook()
	}
	return fs.LocalFS.Create(name)
}

// racedCatalog opens another instance of the embedded catalog in dir whose
// commits call race at the worst moment: within the catalog's CommitTable,
// after it has read where the table's metadata is and before it moves that
// location, compare-and-swap, to the metadata it writes. A race that commits
// to the table there makes the commit fail with table.ErrCommitFailed, for
// real.
func racedCatalog(t *testing.T, dir string, race func()) icecatalog.Catalog {
	t.Helper()
	return racedOpen(t, Embedded(dir), race)
}

// racedOpen opens another instance of the catalog o selects, on local
// storage, whose file IO calls race before it writes a table metadata file,
// as racedCatalog's does. Catalogs that write the metadata file before they
// publish it (the SQL catalog's compare-and-swap of the location, the Hadoop
// catalog's rename to the next version) then find the table moved.
func racedOpen(t *testing.T, o Options, race func()) icecatalog.Catalog {
	t.Helper()
	o.Properties = append(slices.Clone(o.Properties), hookProperty+"="+t.Name())
	hooks.Store(t.Name(), race)
	t.Cleanup(func() { hooks.Delete(t.Name()) })
	return openT(t, o)
}
