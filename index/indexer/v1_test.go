package indexer_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/puffin"
)

// replaceWithV1 rewrites the current snapshot's index segment in index
// format v1 (one blob per filter, docs/format.md Appendix A), with the
// bitset edit returns for each filter, registers it instead, and returns
// the bitsets it wrote by data file and field.
func replaceWithV1(t *testing.T, cat *catalogtest.Catalog, ident table.Identifier, edit func([]byte) []byte) map[string]map[int][]byte {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	sf, filters := indexOf(t, tbl)
	snap := tbl.CurrentSnapshot()
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]map[int][]byte{}
	var fields []int32
	for file, byField := range filters {
		written[file] = map[int][]byte{}
		for id, f := range byField {
			e := index.Entry{DataFile: f.entry.DataFile, DataFileSize: f.entry.DataFileSize, FieldID: id,
				ValueType: f.entry.ValueType, NDV: f.entry.NDV, FPP: f.entry.FPP,
				SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
			bits := edit(bytes.Clone(f.filter.Bytes()))
			if _, err := w.AddBlob(e.BlobInput(), bits); err != nil {
				t.Fatal(err)
			}
			written[file][id] = bits
			if !slices.Contains(fields, int32(id)) {
				fields = append(fields, int32(id))
			}
		}
	}
	st, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := sf.StatisticsPath + ".v1.puffin"
	out, err := fs.(icebergio.WriteFileIO).Create(path)
	if err == nil {
		_, err = out.Write(buf.Bytes())
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	v1 := table.StatisticsFile{SnapshotID: snap.SnapshotID, StatisticsPath: path, FileSizeInBytes: st.FileSize, FileFooterSizeInBytes: st.FooterSize}
	slices.Sort(fields)
	for _, id := range fields {
		v1.BlobMetadata = append(v1.BlobMetadata, table.BlobMetadata{Type: table.BlobType(index.BlobType),
			SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber, Fields: []int32{id}})
	}
	_, err = catalog.CommitStatistics(ctx, cat, ident, func(context.Context, *table.Table) (catalog.StatisticsChange, func(), error) {
		return catalog.StatisticsChange{Set: []table.StatisticsFile{v1}}, func() {}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return written
}

// TestV1IndexRewrittenAsV2: a table indexed in format v1 keeps being read
// by lookups, and the next sync rewrites it as v2 by copying its bitsets,
// never re-hashing: a bitset edited in the v1 file (all bits set, which no
// build would write for that file) comes out of the rewrite unchanged.
func TestV1IndexRewrittenAsV2(t *testing.T) {
	cat, tbl, rows := eventsTable(t, 3, 200, nil)
	ident := tbl.Identifier()
	opts := indexer.Options{Columns: []string{"id", "email"}}
	if _, err := indexer.Build(ctx, cat, ident, opts); err != nil {
		t.Fatal(err)
	}
	edited := ""
	written := replaceWithV1(t, cat, ident, func(bits []byte) []byte {
		if edited == "" {
			edited = "done"
			for i := range bits {
				bits[i] = 0xff
			}
		}
		return bits
	})

	// Lookups read v1: a present id keeps its file, and the other files go.
	tbl, _ = cat.LoadTable(ctx, ident)
	if segs := statisticsFiles(tbl); len(segs) != 1 || !index.HoldsV1Entries(segs[0]) {
		t.Fatalf("statistics %+v, want the v1 segment alone", segs)
	}
	id := rows[1][7].id
	if n := candidates(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), id)); n < 1 || n > 2 {
		t.Fatalf("lookup of a present id on the v1 index: %d candidates", n)
	}

	// A sync of one new file rewrites the index as one v2 segment.
	appendRows(t, tbl, 50)
	sum, err := indexer.Sync(ctx, cat, ident, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 1 || sum.Compacted == nil || sum.Segments != 1 {
		t.Fatalf("sync %+v (compacted %+v)", sum, sum.Compacted)
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	segs := statisticsFiles(tbl)
	if len(segs) != 1 || index.HoldsV1Entries(segs[0]) {
		t.Fatalf("statistics %+v, want one v2 segment", segs)
	}
	coveredByAll(t, tbl, 1, 2)
	_, after := indexOf(t, tbl)
	for file, byField := range written {
		for field, bits := range byField {
			if got := after[file][field].filter.Bytes(); !bytes.Equal(got, bits) {
				t.Fatalf("%s field %d: the v2 filter differs from the v1 bitset", file, field)
			}
		}
	}
	if n := candidates(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), id)); n < 1 || n > 2 {
		t.Fatalf("lookup of a present id on the rewritten index: %d candidates", n)
	}
}

// candidates plans a lookup and returns how many data files it keeps,
// failing on index errors.
func candidates(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) int {
	t.Helper()
	res, err := lookup.Plan(ctx, tbl, filter, lookup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IndexErrors) > 0 {
		t.Fatalf("index errors: %v", res.IndexErrors)
	}
	return len(res.Candidates)
}

// TestVerifySampleFindsMissingValues: a filter that lost bits (here in a v1
// file, which has no checksums) is caught by re-reading its data file.
func TestVerifySampleFindsMissingValues(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 300, nil)
	ident := tbl.Identifier()
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	first := true
	replaceWithV1(t, cat, ident, func(bits []byte) []byte {
		if first {
			first = false
			clear(bits[len(bits)/2:])
		}
		return bits
	})
	rep, err := verify.Table(ctx, cat, ident, verify.Options{Sample: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || len(rep.Sampled) != 2 || !strings.Contains(strings.Join(rep.Problems, "\n"), "are not in its filter") {
		t.Fatalf("verify: %+v", rep)
	}
	if rep.Segments[0].Format != 1 || len(rep.Segments[0].Problems) != 0 {
		t.Fatalf("segment %+v: a v1 file without checksums has nothing else to fail", rep.Segments[0])
	}
}

// TestCompactIndexRewritesALoneV1Segment: an index of one v1 segment, of the
// current snapshot, is rewritten as v2 by compact-index, not reported as
// nothing to do.
func TestCompactIndexRewritesALoneV1Segment(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 100, nil)
	ident := tbl.Identifier()
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	written := replaceWithV1(t, cat, ident, func(b []byte) []byte { return b })
	sum, err := indexer.Compact(ctx, cat, ident, indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.StatisticsPath == "" || sum.EntriesKept != 2 {
		t.Fatalf("compaction %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	if segs := statisticsFiles(tbl); len(segs) != 1 || index.HoldsV1Entries(segs[0]) {
		t.Fatalf("statistics %+v, want one v2 segment", segs)
	}
	_, after := indexOf(t, tbl)
	for file, byField := range written {
		if !bytes.Equal(after[file][1].filter.Bytes(), byField[1]) {
			t.Fatalf("%s: the v2 filter differs from the v1 bitset", file)
		}
	}
}
