package catalogtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// The environment of the PostgreSQL tests.
const (
	// PostgresDSNEnv names the PostgreSQL server the tests use: a DSN that
	// pgx accepts (postgres://user:password@host:port/database or key=value
	// pairs) of a database the user may create schemas in. .ci/run starts a
	// server and sets it.
	PostgresDSNEnv = "ICEBLOOM_POSTGRES_DSN"
	// SkipPostgresEnv set to 1 skips the PostgreSQL tests. Nothing else
	// does: without it, a missing DSN or an unreachable server fails them.
	SkipPostgresEnv = "ICEBLOOM_SKIP_POSTGRES"
)

// PostgresDriver and PostgresDialect are what a SQL catalog on PostgreSQL is
// opened with: the database/sql driver name of pgx, and iceberg-go's
// dialect name (its sql.Postgres).
const (
	PostgresDriver  = "pgx"
	PostgresDialect = "postgres"
)

// PostgresDSN returns the DSN of a fresh, empty schema on the server that
// PostgresDSNEnv names, one per call, so that tests running at once never
// see each other's catalog tables. The DSN sets search_path to that schema
// alone, where iceberg-go's SQL catalog creates its tables; the schema and
// everything in it are dropped at the end of the test.
//
// With SkipPostgresEnv=1 the test is skipped. Otherwise a missing DSN or a
// server that cannot be reached fails the test, saying how to get a server.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	if os.Getenv(SkipPostgresEnv) == "1" {
		t.Skipf("%s=1", SkipPostgresEnv)
	}
	how := "run .ci/run, which starts a PostgreSQL server and sets " + PostgresDSNEnv +
		", or set " + PostgresDSNEnv + " to a server of yours, or set " + SkipPostgresEnv + "=1 to skip the PostgreSQL tests"
	dsn := os.Getenv(PostgresDSNEnv)
	if dsn == "" {
		t.Fatalf("%s is not set: %s", PostgresDSNEnv, how)
	}
	db, err := sql.Open(PostgresDriver, dsn)
	if err != nil {
		t.Fatalf("%s %s: %v: %s", PostgresDSNEnv, redact(dsn), err, how)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("PostgreSQL server of %s %s is unreachable: %v: %s", PostgresDSNEnv, redact(dsn), err, how)
	}

	schema := schemaName(t.Name())
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s on %s: %v", schema, redact(dsn), err)
	}
	// Registered after the cleanups of whatever the caller opens on the
	// schema, so it runs after them (cleanups run last first).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(dsn, schema)
}

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// schemaName is a schema name unique to a call for the test named test: an
// unquoted identifier (lower case, within PostgreSQL's 63 bytes) that shows
// which test made it.
func schemaName(test string) string {
	name := strings.Trim(notIdent.ReplaceAllString(strings.ToLower(test), "_"), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	suffix := make([]byte, 6)
	rand.Read(suffix)
	return "icebloom_" + name + "_" + hex.EncodeToString(suffix)
}

// withSearchPath returns dsn connecting with search_path set to schema, in
// whichever of its two forms dsn is.
func withSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// redact returns dsn without its password when it is a URL, and the name of
// the variable otherwise, for messages.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "(" + PostgresDSNEnv + ")"
}
