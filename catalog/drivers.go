package catalog

// The SQL catalog opens its database with database/sql, under the driver
// name its sql.driver property (--sql-driver) gives, so icebloom can use only
// the databases whose drivers are compiled in: sqliteshim for SQLite and the
// embedded catalog (imported in open.go) and, registered here, pgx for
// PostgreSQL. With it,
//
//	icebloom --catalog sql --uri 'postgres://user:password@host:5432/db' \
//		--sql-driver pgx --sql-dialect postgres ...
//
// opens iceberg-go's SQL catalog on PostgreSQL, as does a config file
// section with sql-driver: pgx and sql-dialect: postgres. iceberg-go's
// catalog/sql takes the dialect names postgres, mysql, sqlite, mssql and
// oracle (its sql.Postgres and so on, in any case); the driver only has to
// speak the database's protocol. It creates the catalog's tables
// (iceberg_tables, iceberg_namespace_properties) in the connection's current
// schema when they are missing; a search_path=... parameter of the URI
// selects another schema.
//
// Why pgx: it is pure Go, so the static binary needs neither cgo nor libpq;
// it is the maintained, widely used PostgreSQL driver for Go; it takes the
// URI in both of libpq's forms (a postgres:// URL or key=value pairs), with
// libpq's PG* environment variables and ~/.pgpass for what the URI leaves
// out, and speaks SCRAM authentication and TLS; and its errors carry the
// SQLSTATE (a SQLState method), which is how iceberg-go's SQL catalog
// recognizes the serialization failures and deadlocks it retries.
import _ "github.com/jackc/pgx/v5/stdlib" // registers the database/sql driver "pgx"
