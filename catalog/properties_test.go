package catalog

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestParseProperties: key=value splits at the first '=', so values may hold
// '=' (S3 secrets and URLs with queries do); the key is trimmed, the value
// kept as given, even empty; a later key wins; no '=' or no key is an error
// that quotes the property.
func TestParseProperties(t *testing.T) {
	got, err := parseProperties([]string{
		"s3.endpoint=http://127.0.0.1:9000",
		" s3.region =us-east-1",
		"s3.secret-access-key=a=b==",
		"header.X-Empty=",
		"s3.region=eu-west-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := iceberg.Properties{
		"s3.endpoint":          "http://127.0.0.1:9000",
		"s3.region":            "eu-west-1",
		"s3.secret-access-key": "a=b==",
		"header.X-Empty":       "",
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseProperties = %v, want %v", got, want)
	}
	if got, err := parseProperties(nil); err != nil || len(got) != 0 {
		t.Errorf("parseProperties(nil) = %v, %v; want empty", got, err)
	}

	for _, bad := range []string{"s3.endpoint", "=x", " =x", ""} {
		_, err := parseProperties([]string{"s3.region=x", bad})
		if want := "property " + quote(bad) + ": want key=value"; err == nil || err.Error() != want {
			t.Errorf("parseProperties(%q): %v, want %q", bad, err, want)
		}
	}
}

func quote(s string) string { return `"` + s + `"` }

// TestOpenBadProperty: a malformed property, or one that a flag of its own
// sets, fails Open with an error naming it, before any catalog is created.
func TestOpenBadProperty(t *testing.T) {
	dir := t.TempDir()
	for prop, want := range map[string]string{
		"s3.endpoint":      `property "s3.endpoint": want key=value`,
		"uri=other.db":     "property uri: set it with its own flag",
		"sql.driver=mysql": "property sql.driver: set it with its own flag",
	} {
		dsn := filepath.Join(dir, "bad.db")
		_, err := Open(t.Context(), Options{Type: "sql", URI: dsn, Warehouse: fileURI(dir), Properties: []string{prop}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("property %q: Open error %v, want one containing %q", prop, err, want)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
		t.Errorf("Open with bad properties created %v", matches)
	}
}

// TestOpenS3Properties shows that the s3.* properties given to Open reach
// the tables' file IO: a SQL catalog whose warehouse is in an S3 bucket
// (on the in-process fake, then on the real S3 gateway .ci/run starts:
// catalogtest.NewS3Gateway) writes a new table's metadata there,
// path-style, signed with the properties' credentials (the server refuses
// the decoys in the environment) — with s3.force-virtual-addressing unset,
// as for MinIO, and explicitly false. A wrong access key fails with the
// server's refusal rather than by reaching another store.
func TestOpenS3Properties(t *testing.T) { catalogtest.ForEachS3(t, openS3Properties) }

func openS3Properties(t *testing.T, s3 *catalogtest.S3) {
	for i, extra := range [][]string{nil, {"s3.force-virtual-addressing=false"}} {
		s3.Reset()
		name := []string{"unset", "false"}[i]
		cat := openT(t, Options{
			Type:       "sql",
			URI:        filepath.Join(t.TempDir(), "catalog.db"),
			Warehouse:  s3.Location("wh-" + name),
			Properties: append(s3.Properties(), extra...),
		})
		tbl := createTable(t, cat, table.Identifier{"db", "t"})
		key, ok := s3.Key(tbl.MetadataLocation())
		if !ok || !strings.HasPrefix(key, "wh-"+name+"/db.db/t/metadata/") {
			t.Fatalf("force-virtual-addressing %s: metadata at %s, want in the bucket's warehouse", name, tbl.MetadataLocation())
		}
		if _, ok := s3.Objects(t, key)[key]; !ok {
			t.Fatalf("force-virtual-addressing %s: %s is not in the bucket", name, key)
		}
		reqs := s3.Requests()
		if len(reqs) == 0 {
			t.Fatalf("force-virtual-addressing %s: no requests reached the server", name)
		}
		for _, r := range reqs {
			if r.Status >= 300 {
				t.Errorf("force-virtual-addressing %s: %v", name, r)
			}
		}
		// Loading the table reads its metadata back through the same IO.
		if _, err := cat.LoadTable(t.Context(), table.Identifier{"db", "t"}); err != nil {
			t.Fatalf("force-virtual-addressing %s: load: %v", name, err)
		}
	}

	props := append(s3.Properties(), "s3.access-key-id=someone-else")
	cat := openT(t, Options{Type: "sql", URI: filepath.Join(t.TempDir(), "catalog.db"), Warehouse: s3.Location("wh-bad"), Properties: props})
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cat.CreateTable(t.Context(), table.Identifier{"db", "t"}, testSchema)
	if err == nil || !strings.Contains(err.Error(), "InvalidAccessKeyId") {
		t.Fatalf("CreateTable with a wrong access key: %v, want the server's InvalidAccessKeyId", err)
	}
}
