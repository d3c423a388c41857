package indexer

import (
	"io"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
)

// TestCompactionDecodesEachManifestOnce: a table of 4 snapshots, each
// listing the manifests of all before it, indexed in two segments, one of
// which has a group failing its checksum, so the compaction takes a second
// pass to leave it out. Over the whole compaction every manifest is read
// exactly as often as reading it once takes — not once per snapshot
// listing it, nor once per pass — counted request by request on the S3
// test server.
func TestCompactionDecodesEachManifestOnce(t *testing.T) {
	s3 := catalogtest.NewS3(t)
	cat, ident, _ := s3Table(t, s3, []int{40, 40, 40, 40})
	ctx := t.Context()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) != 4 {
		t.Fatalf("%d snapshots, want 4", len(snaps))
	}
	o := Options{Columns: []string{"id", "tag"}, CompactAbove: -1}
	o.SnapshotID = snaps[1].SnapshotID
	if _, err := Build(ctx, cat, ident, o); err != nil {
		t.Fatal(err)
	}
	if sum, err := Sync(ctx, cat, ident, Options{CompactAbove: -1}); err != nil || sum.Segments != 2 {
		t.Fatalf("sync %+v, %v", sum, err)
	}

	// Flip a byte of the older segment's first group.
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var old index.Segment
	for _, seg := range ix.Segments() {
		if seg.File.SnapshotID == snaps[1].SnapshotID {
			old = seg
		}
	}
	f, err := fs.Open(old.File.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	data[old.Directory().Groups[0].Offset+3] ^= 0x10
	key, _ := s3.Key(old.File.StatisticsPath)
	s3.Put(t, key, data)

	// What reading each manifest once costs.
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != 4 {
		t.Fatalf("%d manifests, want 4", len(manifests))
	}
	s3.Reset()
	for _, m := range manifests {
		if err := filescan.ManifestDataFiles(fs, m, func(iceberg.DataFile) {}); err != nil {
			t.Fatal(err)
		}
	}
	once := manifestGETs(s3, manifests)
	if len(once) != len(manifests) {
		t.Fatalf("reading the manifests made requests of %d of them: %v", len(once), once)
	}

	s3.Reset()
	sum, err := Compact(ctx, cat, ident, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.BrokenGroups) != 1 {
		t.Fatalf("compaction %+v: want the broken group left out, by a second pass", sum)
	}
	got := manifestGETs(s3, manifests)
	for path, n := range once {
		if got[path] != n {
			t.Errorf("manifest %s: %d requests during the compaction, %d to read it once", path, got[path], n)
		}
	}
}

// manifestGETs counts the GET requests of each manifest's object.
func manifestGETs(s3 *catalogtest.S3, manifests []iceberg.ManifestFile) map[string]int {
	keys := map[string]string{}
	for _, m := range manifests {
		key, _ := s3.Key(m.FilePath())
		keys[key] = m.FilePath()
	}
	out := map[string]int{}
	for _, r := range s3.Requests() {
		if path, ok := keys[r.Key]; ok && r.Method == "GET" && !strings.Contains(r.Query, "list-type") {
			out[path]++
		}
	}
	return out
}
