package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestCatalogFromEnvironment: the catalog's settings come from
// ICEBLOOM_CATALOG_* variables as PyIceberg's come from PYICEBERG_CATALOG__*
// (a flag wins over its variable), and the REST credential from a file
// (--credential-file, ICEBLOOM_CATALOG_CREDENTIAL_FILE) so that it is in
// neither the process list nor the environment; a missing, empty or
// doubly given credential is an error naming it.
func TestCatalogFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "lake"})
	tbl := srv.Catalog.NewTable(t, "events", catalogtest.IDSchema, iceberg.Properties{"write.parquet.bloom-filter-enabled.column.id": "true"})
	catalogtest.AppendIDs(t, tbl, 1, 2, 3)
	secret := filepath.Join(dir, "rest-credential")
	if err := os.WriteFile(secret, []byte(srv.Credential+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ICEBLOOM_CATALOG_TYPE", "rest")
	t.Setenv("ICEBLOOM_CATALOG_URI", srv.URL)
	t.Setenv("ICEBLOOM_CATALOG_CREDENTIAL_FILE", secret)
	if _, stderr, code := icebloom(t, "--rest-prefix", "lake", "build", "db.events"); code != 0 {
		t.Fatalf("build with the catalog from the environment: exit %d: %s", code, stderr)
	}
	t.Setenv("ICEBLOOM_CATALOG_CREDENTIAL_FILE", "")
	if _, stderr, code := icebloom(t, "--rest-prefix", "lake", "--credential-file", secret, "inspect", "db.events"); code != 0 {
		t.Fatalf("--credential-file: exit %d: %s", code, stderr)
	}
	t.Setenv("ICEBLOOM_CATALOG_CREDENTIAL", srv.Credential)
	if _, stderr, code := icebloom(t, "--rest-prefix", "lake", "inspect", "db.events"); code != 0 {
		t.Fatalf("ICEBLOOM_CATALOG_CREDENTIAL: exit %d: %s", code, stderr)
	}
	// A flag wins over its variable: a URI that is no server fails.
	if _, _, code := icebloom(t, "--uri", "http://127.0.0.1:1", "--rest-prefix", "lake", "inspect", "db.events"); code != 1 {
		t.Errorf("--uri over ICEBLOOM_CATALOG_URI: exit %d, want the flag's server to be tried", code)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--credential", srv.Credential, "--credential-file", secret}, "credential given both directly and in file " + secret},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "token file " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"--token-file", empty}, "token file " + empty + " is empty"},
	} {
		_, stderr, code := icebloom(t, append(append([]string{"--rest-prefix", "lake"}, c.args...), "inspect", "db.events")...)
		if code != 1 || !strings.Contains(failure(t, stderr), c.want) {
			t.Errorf("%v: exit %d, %s; want %q", c.args, code, stderr, c.want)
		}
	}
}

// TestSecretFlagWinsOverVariable: a REST credential or token given by flag,
// as a value or as a file, wins over the variable of the same secret in the
// other form, in all four combinations; each variable here is wrong, so
// the command succeeds only when the flag is used. Before, a value from one
// source and a file from the other were refused as given twice.
func TestSecretFlagWinsOverVariable(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "lake"})
	catalogtest.AppendIDs(t, srv.Catalog.NewTable(t, "events", catalogtest.IDSchema, nil), 1, 2)
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Setenv("ICEBLOOM_CATALOG_TYPE", "rest")
	t.Setenv("ICEBLOOM_CATALOG_URI", srv.URL)
	for _, c := range []struct {
		variable, value string
		flags           []string
	}{
		{"ICEBLOOM_CATALOG_TOKEN", "wrong-token", []string{"--token-file", write("token", srv.Token)}},
		{"ICEBLOOM_CATALOG_TOKEN_FILE", write("wrong-token", "wrong-token"), []string{"--token", srv.Token}},
		{"ICEBLOOM_CATALOG_CREDENTIAL", "icebloom-test:wrong", []string{"--credential-file", write("credential", srv.Credential)}},
		{"ICEBLOOM_CATALOG_CREDENTIAL_FILE", write("wrong-credential", "icebloom-test:wrong"), []string{"--credential", srv.Credential}},
	} {
		t.Run(c.variable, func(t *testing.T) {
			t.Setenv(c.variable, c.value)
			args := append(append([]string{"--rest-prefix", "lake"}, c.flags...), "inspect", "db.events")
			if _, stderr, code := icebloom(t, args...); code != 0 {
				t.Errorf("%s=%s with %v: exit %d, want the flag to win: %s", c.variable, c.value, c.flags, code, lastLine(stderr))
			}
		})
	}
}
