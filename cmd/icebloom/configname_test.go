package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestConfigSectionKeepsItsName: a config file section opens under its own
// name however it is picked — by default-catalog, --catalog-name or
// ICEBLOOM_CATALOG_NAME — so all three see the tables a SQL catalog keeps
// under that name (picked by default-catalog it opened as "default" and
// list printed nothing, exit 0); list on a catalog without tables says so.
func TestConfigSectionKeepsItsName(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Chdir(dir)
	config := "default-catalog: lab\ncatalog:\n"
	for _, name := range []string{"lab", "empty"} {
		config += "  " + name + ":\n    type: sql\n    uri: " + filepath.Join(dir, name+".db") +
			"\n    warehouse: file://" + filepath.Join(dir, name) + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, ".iceberg-go.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// The tables as another tool (PyIceberg names a catalog after its
	// section) made them: under the name lab.
	ctx := context.Background()
	for _, name := range []string{"lab", "empty"} {
		cat, err := catalog.Open(ctx, catalog.Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if name == "lab" {
			if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, catalogtest.IDSchema); err != nil {
				t.Fatal(err)
			}
		}
		cat.(icecatalog.Closer).Close()
	}
	for _, c := range []struct {
		how  string
		args []string
		env  string
	}{
		{"default-catalog", nil, ""},
		{"--catalog-name", []string{"--catalog-name", "lab"}, ""},
		{"ICEBLOOM_CATALOG_NAME", nil, "lab"},
	} {
		t.Setenv("ICEBLOOM_CATALOG_NAME", c.env)
		stdout, stderr, code := icebloom(t, append(c.args, "--output", "json", "list")...)
		var out ListOutput
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || len(out.Tables) != 1 || out.Tables[0].Table != "db.t" {
			t.Errorf("list, lab picked by %s: exit %d, %s %s; want db.t", c.how, code, stdout, lastLine(stderr))
		}
	}
	t.Setenv("ICEBLOOM_CATALOG_NAME", "")
	stdout, stderr, code := icebloom(t, "--catalog-name", "empty", "list")
	if code != 0 || strings.TrimSpace(stdout) != `no tables in catalog "empty" (sql)` {
		t.Errorf("list of a catalog without tables: exit %d, %q %s", code, stdout, stderr)
	}
	stdout, _, code = icebloom(t, "list", "db")
	if code != 0 || !strings.HasPrefix(stdout, "db.t\t") {
		t.Errorf("list db: exit %d, %q", code, stdout)
	}
}
