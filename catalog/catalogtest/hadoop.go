package catalogtest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// hadoopVersion matches the metadata files iceberg-go's Hadoop catalog
// publishes: v<N>.metadata.json.
var hadoopVersion = regexp.MustCompile(`^v([0-9]+)\.metadata\.json$`)

// CheckHadoopMetadata fails the test unless the metadata directory of tbl,
// a table of iceberg-go's Hadoop catalog on local storage, is whole and
// names tbl as current: metadata files v1 … vN with no gap, each a valid
// table metadata of the same table, version-hint.text naming N, no claim or
// temporary file a commit left behind, vN the location tbl was loaded from,
// and its metadata log listing v1 … vN-1 in order. It returns N and vN as
// read from disk.
func CheckHadoopMetadata(t testing.TB, tbl *table.Table) (int, table.Metadata) {
	t.Helper()
	dir := filepath.Dir(tbl.MetadataLocation())
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		switch m := hadoopVersion.FindStringSubmatch(name); {
		case m != nil:
			v, _ := strconv.Atoi(m[1])
			versions[v] = filepath.Join(dir, name)
		case strings.HasSuffix(name, ".claim"), strings.HasSuffix(name, ".temp"), strings.HasSuffix(name, ".metadata.json"):
			t.Errorf("metadata directory %s holds %s, left by an unfinished commit", dir, name)
		}
	}
	n := len(versions)
	var newest table.Metadata
	for v := 1; v <= n; v++ {
		path, ok := versions[v]
		if !ok {
			t.Fatalf("metadata versions %v: v%d missing", slices.Sorted(maps.Keys(versions)), v)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		meta, err := table.ParseMetadataBytes(b)
		if err != nil {
			t.Fatalf("v%d.metadata.json does not parse: %v", v, err)
		}
		if meta.TableUUID() != tbl.Metadata().TableUUID() {
			t.Errorf("v%d.metadata.json is of table %s, want %s", v, meta.TableUUID(), tbl.Metadata().TableUUID())
		}
		newest = meta
	}
	hint, err := os.ReadFile(filepath.Join(dir, "version-hint.text"))
	if err != nil || strings.TrimSpace(string(hint)) != strconv.Itoa(n) {
		t.Errorf("version-hint.text %q, %v; want %d", hint, err, n)
	}
	if tbl.MetadataLocation() != versions[n] {
		t.Errorf("the table was loaded from %s, the newest metadata is %s", tbl.MetadataLocation(), versions[n])
	}
	var logged, want []string
	for e := range tbl.Metadata().PreviousFiles() {
		logged = append(logged, e.MetadataFile)
	}
	for v := 1; v < n; v++ {
		want = append(want, versions[v])
	}
	if !slices.Equal(logged, want) {
		t.Errorf("metadata log %v, want %v", logged, want)
	}
	return n, newest
}
