package indexer_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/puffin"
)

// corruptionFixture is a table with two index segments: the old one, of the
// first snapshot's four data files, and the current one, of two files
// appended and synced since.
type corruptionFixture struct {
	cat     *catalogtest.Catalog
	ident   table.Identifier
	batches [][]row  // by data file, in append order
	files   []string // in the order the scan plans them
}

func newCorruptionFixture(t *testing.T) *corruptionFixture {
	t.Helper()
	cat, tbl, batches := eventsTable(t, 4, 300, nil)
	opts := indexer.Options{Columns: []string{"id", "email"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 2 {
		rows := randomRows(rng, 300)
		rec := eventsRecord(t, tbl.Schema(), rows)
		tbl = catalogtest.Append(t, tbl, rec)
		rec.Release()
		batches = append(batches, rows)
	}
	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil || sum.FilesIndexed != 2 || sum.Segments != 2 {
		t.Fatalf("sync %+v, %v", sum, err)
	}
	fx := &corruptionFixture{cat: cat, ident: tbl.Identifier(), batches: batches}
	for _, df := range liveFiles(t, fx.table(t)) {
		fx.files = append(fx.files, df.FilePath())
	}
	return fx
}

func (fx *corruptionFixture) table(t *testing.T) *table.Table {
	t.Helper()
	tbl, err := fx.cat.LoadTable(ctx, fx.ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// target is a segment to corrupt and a value of a data file it covers: the
// group and run of the id column a lookup of the value reads.
type target struct {
	sf      table.StatisticsFile
	local   string // the statistics file on disk
	dir     *segment.Directory
	needle  int64
	file    string
	group   *segment.Group
	run     int
	members int
}

// target picks the segment covering data file k and a value of that file.
func (fx *corruptionFixture) target(t *testing.T, k int) target {
	t.Helper()
	tbl := fx.table(t)
	fs, _ := tbl.FS(ctx)
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	size := int64(-1)
	for _, df := range liveFiles(t, tbl) {
		if df.FilePath() == fx.files[k] {
			size = df.FileSizeBytes()
		}
	}
	flt, ok := ix.Lookup(fx.files[k], size, 1)
	if !ok {
		t.Fatalf("%s is not covered", fx.files[k])
	}
	// Which batch of rows the file holds: the one whose ids its filter
	// holds (manifests need not list files in append order).
	r, err := fs.Open(flt.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bits, err := index.ReadFilter(r, flt)
	if err != nil {
		t.Fatal(err)
	}
	filter, _ := sbbf.FromBytes(bits)
	tg := target{file: fx.files[k]}
	for _, batch := range fx.batches {
		holds := true
		for _, row := range batch[:20] {
			holds = holds && filter.Check(hashing.Int64(row.id))
		}
		if holds {
			tg.needle = batch[1].id
		}
	}
	if tg.needle == 0 {
		t.Fatalf("no batch of rows is in %s", tg.file)
	}
	for _, seg := range ix.Segments() {
		if seg.File.StatisticsPath == flt.Path {
			tg.sf, tg.dir = seg.File, seg.Directory()
		}
	}
	tg.group, _ = flt.Group()
	tg.run = sbbf.BlockIndex(hashing.Int64(tg.needle), tg.group.Blocks)
	tg.members = len(tg.group.Members)
	tg.local = strings.TrimPrefix(tg.sf.StatisticsPath, "file://")
	return tg
}

// editFile changes the statistics file's bytes in place.
func (tg target) editFile(t *testing.T, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(tg.local)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tg.local, edit(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// editDirectory rewrites the statistics file with its directory edited as
// a careless tool would: the directory re-encoded with the change but its
// old checksum, the file's other bytes as they were, and table metadata
// updated to the new sizes.
func (fx *corruptionFixture) editDirectory(t *testing.T, tg target, edit func(*segment.Directory)) {
	t.Helper()
	old := tg.dir.Encode()
	dir := *tg.dir
	dir.Groups = append([]segment.Group(nil), dir.Groups...)
	edit(&dir)
	enc := dir.Encode()
	copy(enc[len(enc)-4:], old[len(old)-4:])

	raw, err := os.ReadFile(tg.local)
	if err != nil {
		t.Fatal(err)
	}
	src, err := puffin.Open(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, _ := puffin.NewWriter(&buf)
	var dirMeta puffin.BlobMetadata
	for i := range src.NumBlobs() {
		b, _ := src.Blob(i)
		if b.Type != segment.DirectoryBlobType {
			if _, err := w.CopyBlob(src, i); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if dirMeta, err = w.AddBlob(puffin.BlobInput{Type: b.Type, Fields: b.Fields, SnapshotID: b.SnapshotID,
			SequenceNumber: b.SequenceNumber, Properties: b.Properties, Codec: puffin.CodecZstd}, enc); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tg.local, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fx.setStatistics(t, tg.sf, func(sf *table.StatisticsFile) {
		sf.FileSizeInBytes, sf.FileFooterSizeInBytes = st.FileSize, st.FooterSize
		setDirectoryPlace(sf, dirMeta.Offset, dirMeta.Length)
	})
}

// setStatistics registers an edited statistics entry in place of sf.
func (fx *corruptionFixture) setStatistics(t *testing.T, sf table.StatisticsFile, edit func(*table.StatisticsFile)) {
	t.Helper()
	sf.BlobMetadata = append([]table.BlobMetadata(nil), sf.BlobMetadata...)
	edit(&sf)
	_, err := catalog.CommitStatistics(ctx, fx.cat, fx.ident, func(context.Context, *table.Table) (catalog.StatisticsChange, func(), error) {
		return catalog.StatisticsChange{Set: []table.StatisticsFile{sf}}, func() {}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func setDirectoryPlace(sf *table.StatisticsFile, off, length int64) {
	for i, b := range sf.BlobMetadata {
		if b.Type == table.BlobType(segment.DirectoryBlobType) {
			props := map[string]string{}
			for k, v := range b.Properties {
				props[k] = v
			}
			props[segment.PropDirectoryOffset] = strconv.FormatInt(off, 10)
			props[segment.PropDirectoryLength] = strconv.FormatInt(length, 10)
			sf.BlobMetadata[i].Properties = props
		}
	}
}

// TestCorruptionMatrix breaks an old and a current segment in every way
// storage and careless tools break files. In each case a lookup of a value
// of a file the segment covers keeps that file and reports an index error,
// and verify reports a problem.
func TestCorruptionMatrix(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(t *testing.T, fx *corruptionFixture, tg target)
		// lookupErr, if set, is the error the lookup must report: the
		// damage lies in blocks it reads, which their checksum catches.
		lookupErr error
	}{
		{"truncated", func(t *testing.T, fx *corruptionFixture, tg target) {
			tg.editFile(t, func(b []byte) []byte { return b[:len(b)/2] })
		}, nil},
		{"zeroed file", func(t *testing.T, fx *corruptionFixture, tg target) {
			tg.editFile(t, func(b []byte) []byte { return make([]byte, len(b)) })
		}, nil},
		{"zeroed run", func(t *testing.T, fx *corruptionFixture, tg target) {
			tg.editFile(t, func(b []byte) []byte {
				clear(b[tg.group.RunOffset(tg.run):tg.group.RunOffset(tg.run+1)])
				return b
			})
		}, nil},
		{"bit flip in a run", func(t *testing.T, fx *corruptionFixture, tg target) {
			tg.editFile(t, func(b []byte) []byte {
				b[tg.group.RunOffset(tg.run)+int64(tg.members)*sbbf.BlockBytes/2] ^= 0x08
				return b
			})
		}, segment.ErrChecksum},
		{"shifted directory offset", func(t *testing.T, fx *corruptionFixture, tg target) {
			off, length, _ := segment.DirectoryPlace(tg.sf)
			fx.setStatistics(t, tg.sf, func(sf *table.StatisticsFile) { setDirectoryPlace(sf, off-32, length) })
		}, nil},
		{"shifted group offset", func(t *testing.T, fx *corruptionFixture, tg target) {
			fx.editDirectory(t, tg, func(d *segment.Directory) {
				for i := range d.Groups {
					d.Groups[i].Offset += sbbf.BlockBytes
				}
			})
		}, nil},
		{"edited directory", func(t *testing.T, fx *corruptionFixture, tg target) {
			fx.editDirectory(t, tg, func(d *segment.Directory) {
				for i := range d.Groups {
					d.Groups[i].Tag ^= 1
				}
			})
		}, nil},
		{"swapped file references", func(t *testing.T, fx *corruptionFixture, tg target) {
			fx.editDirectory(t, tg, func(d *segment.Directory) {
				last := d.Files.Len() - 1
				var swapped filelist.List // d.Files is shared with the fixture's directory
				for k := range d.Files.Len() {
					from := map[int]int{0: last, last: 0}[k]
					if k != 0 && k != last {
						from = k
					}
					swapped.Append(d.Files.Path(from), d.Files.Size(k))
				}
				d.Files = swapped
			})
		}, nil},
		{"edited directory bytes", func(t *testing.T, fx *corruptionFixture, tg target) {
			off, _, _ := segment.DirectoryPlace(tg.sf)
			tg.editFile(t, func(b []byte) []byte {
				b[off+20] ^= 0x40
				return b
			})
		}, nil},
	}
	for _, c := range cases {
		for _, which := range []struct {
			name string
			file int // a data file the segment covers
		}{{"old segment", 1}, {"current segment", 4}} {
			t.Run(c.name+"/"+which.name, func(t *testing.T) {
				fx := newCorruptionFixture(t)
				tg := fx.target(t, which.file)
				c.corrupt(t, fx, tg)

				tbl := fx.table(t)
				res, err := lookup.Plan(ctx, tbl, iceberg.EqualTo(iceberg.Reference("id"), tg.needle), lookup.Options{})
				if err != nil {
					t.Fatal(err)
				}
				kept := false
				for _, task := range res.Candidates {
					kept = kept || task.File.FilePath() == tg.file
				}
				if !kept {
					t.Fatalf("the lookup dropped %s, which holds id %d", tg.file, tg.needle)
				}
				if len(res.IndexErrors) == 0 {
					t.Errorf("the lookup reported no index error (%d candidates)", len(res.Candidates))
				}
				if c.lookupErr != nil && !slices.ContainsFunc(res.IndexErrors, func(err error) bool { return errors.Is(err, c.lookupErr) }) {
					t.Errorf("the lookup reported %v, want %v among them", res.IndexErrors, c.lookupErr)
				}
				rep, err := verify.Table(ctx, fx.cat, fx.ident, verify.Options{Sample: 2, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				if rep.OK() {
					t.Errorf("verify found no problem: %+v", rep.Segments)
				}
			})
		}
	}
}

// TestVerifyCleanIndex: an intact index verifies, with every checksum read,
// every live file covered and every sampled file's values in its filters;
// a file appended and not synced yet is reported uncovered, which is not a
// problem.
func TestVerifyCleanIndex(t *testing.T) {
	fx := newCorruptionFixture(t)
	catalogtest.Append(t, fx.table(t), eventsRecord(t, fx.table(t).Schema(), randomRows(newRand(), 10)))
	rep, err := verify.Table(ctx, fx.cat, fx.ident, verify.Options{Sample: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Segments) != 2 || len(rep.Sampled) != 6 || len(rep.Columns) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, s := range rep.Segments {
		if s.Format != 2 || s.BytesVerified == 0 || s.Filters == 0 {
			t.Errorf("segment %+v", s)
		}
	}
	for _, c := range rep.Columns {
		if c.Covered != 6 || c.Uncovered != 1 || len(c.UncoveredFiles) != 1 {
			t.Errorf("coverage %+v", c)
		}
	}
	for _, s := range rep.Sampled {
		if s.Values == 0 || len(s.Columns) != 2 {
			t.Errorf("sample %+v", s)
		}
	}
}

// TestCompactionLeavesBrokenGroupsOut: a compaction (and so the expire
// fold) never trusts a group whose run fails its checksum: it merges the
// rest, reports the group, and the next sync indexes its files again, after
// which the index verifies clean and covers every file.
func TestCompactionLeavesBrokenGroupsOut(t *testing.T) {
	fx := newCorruptionFixture(t)
	tg := fx.target(t, 1)
	tg.editFile(t, func(b []byte) []byte {
		b[tg.group.RunOffset(tg.run)+3] ^= 0x20
		return b
	})
	sum, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.BrokenGroups) != 1 || !strings.HasPrefix(sum.BrokenGroups[0], tg.sf.StatisticsPath+"@") || sum.SegmentsAfter != 1 {
		t.Fatalf("compaction %+v", sum)
	}
	synced, err := indexer.Sync(ctx, fx.cat, fx.ident, indexer.Options{Columns: []string{"id", "email"}})
	if err != nil {
		t.Fatal(err)
	}
	if synced.FilesIndexed != tg.members {
		t.Fatalf("sync indexed %d files, want the broken group's %d", synced.FilesIndexed, tg.members)
	}
	tbl := fx.table(t)
	coveredByAll(t, tbl, 1, 2)
	if !planKeeps(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), tg.needle), tg.file) {
		t.Fatalf("the lookup dropped %s", tg.file)
	}
	rep, err := verify.Table(ctx, fx.cat, fx.ident, verify.Options{Sample: 6})
	if err != nil || !rep.OK() {
		t.Fatalf("verify after the repair: %v %+v", err, rep.Problems)
	}
}

// TestSyncKeepsReadableForeignBlobsOfABrokenFile: the current snapshot's
// statistics file holds Trino's theta sketches and an index whose
// directory is corrupt. A sync replaces the file: the sketches are carried
// byte for byte (they can still be read), the index's filters are not, and
// the sync indexes their files again.
func TestSyncKeepsReadableForeignBlobsOfABrokenFile(t *testing.T) {
	cat, tbl, _ := eventsTable(t, 2, 100, nil)
	registerTheta(t, cat, tbl)
	opts := indexer.Options{Columns: []string{"id"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	sf := statisticsFiles(tbl)[0]
	off, _, _ := segment.DirectoryPlace(sf)
	local := strings.TrimPrefix(sf.StatisticsPath, "file://")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	b[off+10] ^= 0xff
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 || len(sum.BrokenFiles) != 1 || sum.BrokenFiles[0] != sf.StatisticsPath {
		t.Fatalf("sync %+v", sum)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	now := statisticsFiles(tbl)
	thetas := 0
	for _, bm := range now[0].BlobMetadata {
		if bm.Type == "apache-datasketches-theta-v1" {
			thetas++
		}
	}
	if len(now) != 1 || thetas != 3 {
		t.Fatalf("statistics after the sync %+v: want the 3 theta items kept", now)
	}
	r := openStatistics(t, tbl, now[0])
	blobs := 0
	for i := range r.NumBlobs() {
		if b, _ := r.Blob(i); b.Type == "apache-datasketches-theta-v1" {
			blobs++
		}
	}
	if blobs != 3 {
		t.Fatalf("the new statistics file holds %d theta blobs, want the 3 carried", blobs)
	}
	coveredByAll(t, tbl, 1)
}

// TestSyncRemovesAMissingSegment: a segment's file is gone. A sync
// indexes its files again and replaces or removes the dangling reference
// (compacting to do so when it is an older snapshot's): lookups stop
// reporting it.
func TestSyncRemovesAMissingSegment(t *testing.T) {
	for _, old := range []bool{true, false} {
		fx := newCorruptionFixture(t)
		current := fx.table(t).CurrentSnapshot().SnapshotID
		var tg target
		for k := range fx.files {
			if tg = fx.target(t, k); (tg.sf.SnapshotID != current) == old {
				break
			}
		}
		if err := os.Remove(tg.local); err != nil {
			t.Fatal(err)
		}
		sum, err := indexer.Sync(ctx, fx.cat, fx.ident, indexer.Options{Columns: []string{"id", "email"}})
		if err != nil {
			t.Fatal(err)
		}
		broken := sum.BrokenFiles
		if sum.Compacted != nil {
			broken = append(broken, sum.Compacted.BrokenFiles...)
		}
		if sum.FilesIndexed != tg.members || sum.Compacted == nil || !slices.Equal(broken, []string{tg.sf.StatisticsPath}) {
			t.Fatalf("old segment %v: sync %+v (compacted %+v)", old, sum, sum.Compacted)
		}
		tbl := fx.table(t)
		for _, sf := range statisticsFiles(tbl) {
			if sf.StatisticsPath == tg.sf.StatisticsPath {
				t.Fatal("table metadata still references the missing file")
			}
		}
		coveredByAll(t, tbl, 1, 2)
		if n := candidates(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), tg.needle)); n < 1 {
			t.Fatal("the lookup dropped the file holding the id")
		}
	}
}

// TestCompactRemovesADanglingStatisticsEntry: a set-statistics that raced
// an expiry left a statistics entry of a snapshot no longer in the table
// (Iceberg does not refuse one). Compaction merges its filters and removes
// the entry instead of failing on it for good.
func TestCompactRemovesADanglingStatisticsEntry(t *testing.T) {
	fx := newCorruptionFixture(t)
	tbl := fx.table(t)
	current := tbl.CurrentSnapshot().SnapshotID
	var old table.StatisticsFile
	for _, sf := range statisticsFiles(tbl) {
		if sf.SnapshotID != current {
			old = sf
		}
	}
	// Move the old segment's entry to a snapshot that does not exist.
	const gone = 424242
	old.SnapshotID = gone
	ups := []table.Update{table.NewSetStatisticsUpdate(old), table.NewRemoveStatisticsUpdate(statisticsFiles(tbl)[0].SnapshotID)}
	if statisticsFiles(tbl)[0].SnapshotID == current {
		ups[1] = table.NewRemoveStatisticsUpdate(statisticsFiles(tbl)[1].SnapshotID)
	}
	if _, _, err := fx.cat.CommitTable(ctx, fx.ident, nil, ups); err != nil {
		t.Fatal(err)
	}
	sum, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.SegmentsAfter != 1 || sum.EntriesKept != 12 {
		t.Fatalf("compaction %+v", sum)
	}
	tbl = fx.table(t)
	for _, sf := range statisticsFiles(tbl) {
		if sf.SnapshotID == gone {
			t.Fatal("the dangling entry is still listed")
		}
	}
	coveredByAll(t, tbl, 1, 2)
}
