// Package catalogtest makes real Iceberg tables for tests, as httptest makes
// servers: a SQLite catalog file in a temporary directory, tables written by
// iceberg-go, and the external golden tables registered in such a catalog.
package catalogtest

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// Catalog is a SQL catalog on a SQLite file of a test's temporary
// directory, with the database handle for what the catalog API lacks.
type Catalog struct {
	*sqlcat.Catalog
	DB        *sql.DB
	Warehouse string
}

// NewCatalog creates an empty catalog with namespace "db".
func NewCatalog(t testing.TB) *Catalog {
	t.Helper()
	dir := t.TempDir()
	// WAL and a busy timeout, as the embedded catalog has them: tests run
	// concurrent commits (several connections of the pool, of a REST
	// server backed by this catalog, or other processes), which rollback
	// journaling would fail at once with SQLITE_BUSY.
	db, err := sql.Open(sqliteshim.ShimName, "file:"+filepath.Join(dir, "catalog.db")+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	warehouse := filepath.Join(dir, "warehouse")
	cat, err := sqlcat.NewCatalog("default", db, sqlcat.SQLite, iceberg.Properties{
		"warehouse":           "file://" + warehouse,
		"init_catalog_tables": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return &Catalog{Catalog: cat, DB: db, Warehouse: warehouse}
}

// NewTable creates table db.<name>.
func (c *Catalog) NewTable(t testing.TB, name string, sc *iceberg.Schema, props iceberg.Properties) *table.Table {
	t.Helper()
	tbl, err := c.Catalog.CreateTable(context.Background(), table.Identifier{"db", name}, sc, icecatalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Append commits one append of rec (one data file) and returns the table
// as committed.
func Append(t testing.TB, tbl *table.Table, rec arrow.RecordBatch) *table.Table {
	t.Helper()
	out, err := TryAppend(context.Background(), tbl, rec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryAppend is Append returning its error, for tests whose appends may
// race other commits (table.ErrCommitFailed: reload and try again).
func TryAppend(ctx context.Context, tbl *table.Table, rec arrow.RecordBatch) (*table.Table, error) {
	txn := tbl.NewTransaction()
	at := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer at.Release()
	if err := txn.AppendTable(ctx, at, rec.NumRows(), nil); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

// Register adds an existing table (its metadata file) to the catalog as
// db.<name>, writing the catalog row the JDBC catalog schema defines: the
// SQL catalog has no register call.
func (c *Catalog) Register(t testing.TB, name, metadataLocation string) table.Identifier {
	t.Helper()
	_, err := c.DB.Exec(`INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, iceberg_type, metadata_location)
		VALUES ('default', 'db', ?, 'TABLE', ?)`, name, metadataLocation)
	if err != nil {
		t.Fatal(err)
	}
	return table.Identifier{"db", name}
}

// RepoRoot returns the repository's root directory: the nearest directory
// holding go.mod above the working directory the test binary started in (its
// package's). It is found from there rather than from runtime.Caller, whose
// file names are module paths under -trimpath, as .ci/run builds; it is read
// once, before any test changes the working directory.
func RepoRoot() string { return repoRoot }

var repoRoot = func() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}()

// CopyExternalTables copies testdata/external/iceberg-tables/duckdb-iceberg
// into a temporary directory and makes it the working directory, because
// the paths inside those tables are relative to it.
func CopyExternalTables(t *testing.T) string {
	t.Helper()
	src := filepath.Join(RepoRoot(), "testdata", "external", "iceberg-tables", "duckdb-iceberg")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dst)
	return dst
}

// IDSchema is a one-column schema, id long, for tests that need data files
// more than particular data.
var IDSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// AppendIDs appends one data file holding ids to a table of IDSchema.
func AppendIDs(t testing.TB, tbl *table.Table, ids ...int64) *table.Table {
	t.Helper()
	rec := IDRecord(t, tbl, ids...)
	defer rec.Release()
	return Append(t, tbl, rec)
}

// IDRecord returns a record of ids for tbl's first (long) column, as
// AppendIDs appends it; the caller releases it.
func IDRecord(t testing.TB, tbl *table.Table, ids ...int64) arrow.RecordBatch {
	t.Helper()
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	return b.NewRecordBatch()
}
