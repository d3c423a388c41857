package catalog

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// fileURI is the file:// location of an absolute local path.
func fileURI(path string) string { return "file://" + filepath.ToSlash(path) }

// mustExist fails the test unless path exists.
func mustExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// checkCatalog fails the test unless cat is of type typ and, if it has a
// name (the SQL catalog has), named name.
func checkCatalog(t *testing.T, cat icecatalog.Catalog, typ icecatalog.Type, name string) {
	t.Helper()
	if cat.CatalogType() != typ {
		t.Fatalf("catalog is a %s catalog, want %s", cat.CatalogType(), typ)
	}
	if named, ok := cat.(interface{ Name() string }); ok && named.Name() != name {
		t.Fatalf("catalog is named %q, want %q", named.Name(), name)
	}
}

// TestOpenEmbedded shows that the embedded catalog is created on first use,
// keeps its tables at an absolute file:// location, and that a second Open of
// the same directory sees them.
func TestOpenEmbedded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quickstart") // Open creates it
	ident := table.Identifier{"db", "events"}

	cat := openEmbedded(t, dir)
	checkCatalog(t, cat, icecatalog.SQL, DefaultName)
	mustExist(t, filepath.Join(dir, "catalog.db"))
	created := createTable(t, cat, ident)
	if want := fileURI(dir) + "/db.db/events"; created.Location() != want {
		t.Errorf("table location %s, want %s", created.Location(), want)
	}

	again := openEmbedded(t, dir)
	tbl, err := again.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.MetadataLocation() != created.MetadataLocation() {
		t.Errorf("second Open: metadata at %s, want %s", tbl.MetadataLocation(), created.MetadataLocation())
	}
}

// TestOpenDefault shows that with nothing configured — no flags, no config
// file in $HOME — Open opens the embedded catalog in ./warehouse, once it
// exists; before, it refuses naming the path, and creates nothing.
func TestOpenDefault(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	wd := t.TempDir()
	t.Chdir(wd)

	_, err := Open(t.Context(), Options{})
	want := filepath.Join(wd, "warehouse", "catalog.db")
	if !errors.Is(err, ErrNoCatalog) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open with nothing configured in an empty directory: %v; want ErrNoCatalog naming %s", err, want)
	}
	if entries, _ := os.ReadDir(wd); len(entries) > 0 {
		t.Fatalf("Open of a missing default catalog left %s behind", entries[0].Name())
	}

	openT(t, Embedded("warehouse")) // as quickstart creates it
	cat := openT(t, Options{})
	checkCatalog(t, cat, icecatalog.SQL, DefaultName)
	mustExist(t, filepath.Join(wd, "warehouse", "catalog.db"))
	tbl := createTable(t, cat, table.Identifier{"db", "t"})
	if want := fileURI(wd) + "/warehouse/db.db/t"; tbl.Location() != want {
		t.Errorf("table location %s, want %s", tbl.Location(), want)
	}
}

// writeConfig writes an ~/.iceberg-go.yaml style file with two SQL catalogs,
// one and two, each with its own database and warehouse under dir, and
// default-catalog two.
func writeConfig(t *testing.T, dir, name string) string {
	t.Helper()
	yaml := "default-catalog: two\ncatalog:\n"
	for _, c := range []string{"one", "two"} {
		yaml += "  " + c + ":\n" +
			"    type: sql\n" +
			"    uri: " + filepath.Join(dir, c+".db") + "\n" +
			"    warehouse: " + fileURI(filepath.Join(dir, c+"-warehouse")) + "\n" +
			"    sql-driver: sqliteshim\n" +
			"    sql-dialect: sqlite\n"
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenConfigFile shows that the config file's section for the name
// configures the catalog, and that a field given in Options overrides the
// file's field by field.
func TestOpenConfigFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	home := writeConfig(t, dir, ".iceberg-go.yaml")
	explicit := writeConfig(t, dir, "other.yaml")
	elsewhere := filepath.Join(dir, "elsewhere")
	one, two := filepath.Join(dir, "one-warehouse"), filepath.Join(dir, "two-warehouse")

	tests := []struct {
		name          string
		o             Options
		catalogName   string
		db, warehouse string // of the table created; warehouse as a local path
		typ           icecatalog.Type
	}{
		{"by name", Options{Name: "one"}, "one", "one.db", one, icecatalog.SQL},
		// The section default-catalog names applies when no name is given,
		// and opens under its own name (iceberg-go's CLI calls it default,
		// and a SQL catalog so opened saw none of two's tables).
		{"default-catalog", Options{ConfigPath: explicit}, "two", "two.db", two, icecatalog.SQL},
		{"warehouse flag", Options{Name: "one", Warehouse: fileURI(elsewhere)}, "one", "one.db", elsewhere, icecatalog.SQL},
		// Type and URI given name another catalog than the section's:
		// it keeps the default name.
		{"type and uri flags", Options{ConfigPath: explicit, Type: "sql", URI: filepath.Join(dir, "three.db")}, DefaultName, "three.db", two, icecatalog.SQL},
		// The Hadoop catalog keeps its tables in the file's warehouse.
		{"type flag", Options{ConfigPath: home, Name: "one", Type: "hadoop"}, "one", "", one, icecatalog.Hadoop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := openT(t, tt.o)
			checkCatalog(t, cat, tt.typ, tt.catalogName)
			ns := strings.ReplaceAll(tt.name, " ", "_")
			tbl := createTable(t, cat, table.Identifier{ns, "t"})
			// The SQL catalog stores file:// locations, the Hadoop one paths.
			if !strings.HasPrefix(strings.TrimPrefix(tbl.Location(), "file://"), tt.warehouse+"/") {
				t.Errorf("table location %s, want under %s", tbl.Location(), tt.warehouse)
			}
			if tt.db != "" {
				mustExist(t, filepath.Join(dir, tt.db))
			}
		})
	}
}

// TestOpenErrors shows that a catalog that cannot be opened as configured
// fails with an error naming the problem.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	config := writeConfig(t, dir, "config.yaml")
	missing := filepath.Join(dir, "missing.yaml")
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("catalog: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		o    Options
		want string
	}{
		{Options{Type: "nessie"}, `unknown catalog type "nessie"`},
		{Options{ConfigPath: missing}, missing},
		{Options{ConfigPath: broken}, "parse config file " + broken},
		{Options{ConfigPath: config, Name: "three"}, `catalog "three" is not in config file ` + config},
		{Options{Name: "three"}, `catalog "three" is not in config file ` + filepath.Join(dir, ".iceberg-go.yaml")},
		{Options{Type: "sql"}, "sql catalog: no database DSN"},
		{Options{Type: "rest"}, "rest catalog: no endpoint URI"},
		{Options{Type: "hive"}, "hive catalog: no Hive Metastore URI"},
		{Options{Type: "hadoop"}, "hadoop catalog: no warehouse"},
		{Options{URI: "thrift://metastore:9083"}, "catalog URI thrift://metastore:9083: give the catalog type"},
	}
	for _, tt := range tests {
		_, err := Open(t.Context(), tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%+v) = %v, want an error containing %q", tt.o, err, tt.want)
		}
	}
}

// TestOpenSQLiteBusyTimeout shows that an explicit SQLite DSN, a path or a
// file: URI, gets the embedded catalog's busy timeout, unless it names one
// of its own, which is kept: the connections opened with the catalog's DSN
// have it in effect.
func TestOpenSQLiteBusyTimeout(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	for _, tc := range []struct {
		uri  string
		want int
	}{
		{filepath.Join(dir, "a.db"), 10000},
		{filepath.Join(dir, "b.db") + "?_journal_mode=WAL", 10000},
		{filepath.Join(dir, "c.db") + "?", 10000},
		{"file:" + filepath.Join(dir, "d.db"), 10000},
		{fileURI(filepath.Join(dir, "e.db")) + "?mode=rwc", 10000},
		{filepath.Join(dir, "f.db") + "?_busy_timeout=1234", 1234},
		{filepath.Join(dir, "g.db") + "?_timeout=2345", 2345},
		{"file:" + filepath.Join(dir, "h.db") + "?_pragma=busy_timeout(3456)&_pragma=foreign_keys(1)", 3456},
		{"file:" + filepath.Join(dir, "i.db") + "?_pragma=BUSY_TIMEOUT%3D4567", 4567},
	} {
		o, err := resolve(Options{Type: "sql", URI: tc.uri, Warehouse: fileURI(dir)})
		if err != nil {
			t.Fatal(err)
		}
		dsn := sqlProperties(o)["uri"]
		db, err := sql.Open(sqliteshim.ShimName, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := db.QueryRow("PRAGMA busy_timeout").Scan(&got); err != nil {
			t.Fatalf("%s (DSN %s): %v", tc.uri, dsn, err)
		}
		db.Close()
		if got != tc.want {
			t.Errorf("%s: DSN %s has busy timeout %d, want %d", tc.uri, dsn, got, tc.want)
		}
		// And the catalog opens on it.
		createTable(t, openT(t, Options{Type: "sql", URI: tc.uri, Warehouse: fileURI(dir)}), table.Identifier{"db", "t"})
	}
	// Other drivers' DSNs are not touched.
	o := Options{Type: "sql", URI: "postgres://u@db/iceberg", SQLDriver: "pgx", SQLDialect: "postgres"}
	if got := sqlProperties(o)["uri"]; got != o.URI {
		t.Errorf("pgx DSN %s became %s", o.URI, got)
	}
}

// TestOpenSQLiteConcurrentWriters: a catalog opened on an explicit SQLite
// file waits for another writer's lock on it instead of failing at once
// with "database is locked (SQLITE_BUSY)".
func TestOpenSQLiteConcurrentWriters(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	cat := openT(t, Options{Type: "sql", URI: path, Warehouse: fileURI(dir)})
	createTable(t, cat, table.Identifier{"db", "t"})

	other, err := sql.Open(sqliteshim.ShimName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- cat.CreateNamespace(context.Background(), table.Identifier{"other"}, nil) }()
	// Release the lock a moment later; without a busy timeout the write
	// has failed by then.
	release := time.AfterFunc(200*time.Millisecond, func() { conn.ExecContext(context.Background(), "ROLLBACK") })
	defer release.Stop()
	if err := <-done; err != nil {
		t.Fatalf("a write while another connection held the lock: %v", err)
	}
}

// TestOpenBadSQLitePath: errors of a SQLite catalog name its database
// file, whatever is wrong with it.
func TestOpenBadSQLitePath(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	notSQLite := filepath.Join(dir, "text.db")
	if err := os.WriteFile(notSQLite, []byte(strings.Repeat("not a SQLite database\n", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(dir, "file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ uri, want string }{
		{dir, dir + ": is a directory, not a database file"},
		{notSQLite, notSQLite + ": file is not a database"},
		{"file:" + notSQLite + "?_journal_mode=WAL", notSQLite + ": file is not a database"},
		{filepath.Join(dir, "missing", "c.db"), filepath.Join(dir, "missing", "c.db") + ": directory " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{filepath.Join(aFile, "c.db"), filepath.Join(aFile, "c.db") + ": " + aFile + " is not a directory"},
	} {
		_, err := Open(t.Context(), Options{Type: "sql", URI: c.uri, Warehouse: fileURI(dir)})
		if err == nil || !strings.Contains(err.Error(), "SQLite catalog "+c.want) {
			t.Errorf("Open of the SQLite catalog %s: %v; want an error with %q", c.uri, err, "SQLite catalog "+c.want)
		}
	}
	// The embedded catalog's directory is a file.
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.WriteFile("warehouse", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), Options{}); err == nil || !strings.Contains(err.Error(), filepath.Join(wd, "warehouse")) {
		t.Errorf("Open of the default catalog with ./warehouse a file: %v; want an error naming it", err)
	}
}

func TestIsLocal(t *testing.T) {
	for loc, want := range map[string]bool{
		"/tmp/wh/db/t": true, "file:///tmp/wh/db/t": true, "FILE:///x": true, `C:\wh\t`: true,
		"s3://bucket/db/t": false, "gs://b/t": false, "abfs://c@a.dfs.core.windows.net/t": false, "mem://t": false,
	} {
		if got := IsLocal(loc); got != want {
			t.Errorf("IsLocal(%q) = %v, want %v", loc, got, want)
		}
	}
}
