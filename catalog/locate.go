package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	sqlcat "github.com/apache/iceberg-go/catalog/sql"
)

// MetadataLocator is a catalog that can say where a table's current
// metadata file is without reading it. A metadata location names one
// immutable file, so a reader that keeps what it loaded from a location
// (icebloom serve's catalog mode) can tell whether it is still the table's
// and skip reading the metadata again: iceberg-go's LoadTable reads it from
// storage every time.
type MetadataLocator interface {
	// MetadataLocation is the location of the table's current metadata
	// file, as the catalog records it; ErrNoLocation when the catalog
	// cannot say without loading the table (LoadTable can).
	MetadataLocation(ctx context.Context, ident table.Identifier) (string, error)
}

// ErrNoLocation is a MetadataLocator that cannot name a table's metadata
// location without loading it.
var ErrNoLocation = errors.New("catalog: the metadata location is known only by loading the table")

// sqlCatalog is iceberg-go's SQL catalog over a database handle of
// icebloom's own, which also answers MetadataLocation from the catalog's
// iceberg_tables (the JDBC catalog's schema, which iceberg-go shares): one
// query, no storage read.
type sqlCatalog struct {
	*sqlcat.Catalog
	db   *sql.DB
	name string
	// param is the dialect's query parameter n (1-based): ? or $n; ""
	// for a dialect MetadataLocation does not speak.
	param func(n int) string
}

// openSQL opens the SQL catalog props configure, as iceberg-go's registrar
// does, keeping the database handle.
func openSQL(name string, props iceberg.Properties) (*sqlCatalog, error) {
	driver, dialect := props[sqlcat.DriverKey], strings.ToLower(props[sqlcat.DialectKey])
	if driver == "" || dialect == "" {
		return nil, errors.New("sql catalog: a driver and a dialect are needed")
	}
	db, err := sql.Open(driver, strings.TrimPrefix(props.Get("uri", ""), "sql://"))
	if err != nil {
		return nil, err
	}
	cat, err := sqlcat.NewCatalog(name, db, sqlcat.SupportedDialect(dialect), props)
	if err != nil {
		db.Close()
		return nil, err
	}
	c := &sqlCatalog{Catalog: cat, db: db, name: name}
	switch sqlcat.SupportedDialect(dialect) {
	case sqlcat.SQLite, sqlcat.MySQL:
		c.param = func(int) string { return "?" }
	case sqlcat.Postgres:
		c.param = func(n int) string { return fmt.Sprintf("$%d", n) }
	}
	return c, nil
}

// Close closes the catalog and its database handle, which NewCatalog
// leaves to its caller.
func (c *sqlCatalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

// MetadataLocation reads the table's metadata location from
// iceberg_tables. A namespace with a dot in a level is stored by
// iceberg-go in an encoded form with a legacy fallback: for those, and for
// dialects other than SQLite, MySQL and PostgreSQL, it answers
// ErrNoLocation. It does not look at the row's type: a view's location
// names no table's metadata, so a reader comparing it with what it loaded
// finds no match and loads the table, which LoadTable refuses.
func (c *sqlCatalog) MetadataLocation(ctx context.Context, ident table.Identifier) (string, error) {
	ns := ident[:max(len(ident)-1, 0)]
	if c.param == nil || len(ns) == 0 || slices.ContainsFunc(ns, func(level string) bool { return strings.Contains(level, ".") }) {
		return "", ErrNoLocation
	}
	key := strings.Join(ns, ".")
	if strings.Contains(key, "__iceberg_namespace_v1__:") { // iceberg-go's marker of an encoded namespace
		return "", ErrNoLocation
	}
	q := fmt.Sprintf("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = %s AND table_namespace = %s AND table_name = %s",
		c.param(1), c.param(2), c.param(3))
	var loc sql.NullString
	switch err := c.db.QueryRowContext(ctx, q, c.name, key, ident[len(ident)-1]).Scan(&loc); {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil // no such table: nothing kept matches, and LoadTable says so
	case err != nil:
		return "", fmt.Errorf("metadata location of %s: %w", strings.Join(ident, "."), err)
	}
	return loc.String, nil
}
