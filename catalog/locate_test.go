package catalog_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestSQLMetadataLocation: a SQL catalog Open opens names a table's
// current metadata location from its row, as LoadTable finds it, before
// and after a commit, without reading the metadata; a table that does not
// exist has none, and a namespace stored in iceberg-go's encoded form is
// left to LoadTable (ErrNoLocation). serve's catalog mode relies on it to
// reuse what it loaded while it is current.
func TestSQLMetadataLocation(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml: the options alone
	dir := t.TempDir()
	cat, err := catalog.Open(t.Context(), catalog.Options{Type: "sql", URI: filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.ToSlash(dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
	testMetadataLocation(t, cat)
}

// TestPostgresMetadataLocation is TestSQLMetadataLocation on PostgreSQL,
// whose queries take $n parameters.
func TestPostgresMetadataLocation(t *testing.T) {
	testMetadataLocation(t, newPGServer(t).open(t))
}

func testMetadataLocation(t *testing.T, cat icecatalog.Catalog) {
	ctx := context.Background()
	loc, ok := cat.(catalog.MetadataLocator)
	if !ok {
		t.Fatalf("a SQL catalog from Open (%T) is not a MetadataLocator", cat)
	}
	ident := table.Identifier{"db", "events"}
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, ident, catalogtest.IDSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int64{nil, {1, 2}} {
		if ids != nil {
			tbl = catalogtest.AppendIDs(t, tbl, ids...)
		}
		got, err := loc.MetadataLocation(ctx, ident)
		if err != nil || got != tbl.MetadataLocation() {
			t.Fatalf("metadata location %q, %v; want %q", got, err, tbl.MetadataLocation())
		}
	}
	if got, err := loc.MetadataLocation(ctx, table.Identifier{"db", "missing"}); got != "" || err != nil {
		t.Fatalf("a table that does not exist: %q, %v; want none", got, err)
	}
	if _, err := loc.MetadataLocation(ctx, table.Identifier{"a.b", "events"}); !errors.Is(err, catalog.ErrNoLocation) {
		t.Fatalf("a namespace with a dot: %v, want ErrNoLocation", err)
	}
}
