package indexer_test

import (
	"encoding/binary"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/index/verify"
	"github.com/icebloom/icebloom/maintenance"
)

// footerLengths matches the blob lengths of an uncompressed Puffin footer.
var footerLengths = regexp.MustCompile(`"length":[0-9]+`)

// claimHugeSizes rewrites the statistics file's Puffin footer so that every
// blob claims a terabyte, and registers the file's new sizes, as a careless
// tool rewriting the footer would.
func (fx *corruptionFixture) claimHugeSizes(t *testing.T, tg target) {
	t.Helper()
	b, err := os.ReadFile(tg.local)
	if err != nil {
		t.Fatal(err)
	}
	footerStart := int64(len(b)) - tg.sf.FileFooterSizeInBytes
	footer := b[footerStart:]
	if flags := binary.LittleEndian.Uint32(footer[len(footer)-8:]); flags != 0 {
		t.Fatalf("footer flags %#x: want an uncompressed footer", flags)
	}
	payload := footer[4 : len(footer)-12]
	edited := footerLengths.ReplaceAll(payload, []byte(`"length":1099511627776`))
	if string(edited) == string(payload) {
		t.Fatal("no blob length in the footer")
	}
	out := append([]byte(nil), b[:footerStart]...)
	out = append(out, footer[:4]...)
	out = append(out, edited...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(edited)))
	out = append(out, footer[len(footer)-8:]...)
	if err := os.WriteFile(tg.local, out, 0o644); err != nil {
		t.Fatal(err)
	}
	fx.setStatistics(t, tg.sf, func(sf *table.StatisticsFile) {
		sf.FileSizeInBytes = int64(len(out))
		sf.FileFooterSizeInBytes = int64(len(out)) - footerStart
	})
}

// linkWithWrongSize replaces the target segment's statistics entry by a
// new file of the same snapshot that links it (docs/format.md §2.5) and
// records its size one byte too large.
func (fx *corruptionFixture) linkWithWrongSize(t *testing.T, tg target) {
	t.Helper()
	tbl := fx.table(t)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.SnapshotByID(tg.sf.SnapshotID)
	path, err := indexfile.NewPath(tbl, snap.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := indexfile.Create(fs.(icebergio.WriteFileIO), path,
		segment.WriterOptions{SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber, AllowEmpty: true}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	off, length, _ := segment.DirectoryPlace(tg.sf)
	sw.Link(segment.Link{Path: tg.sf.StatisticsPath, Size: tg.sf.FileSizeInBytes + 1, FooterSize: tg.sf.FileFooterSizeInBytes,
		DirectoryOffset: off, DirectoryLength: length, Fields: []int{1, 2}})
	linking, err := sw.Finish()
	if err != nil {
		t.Fatal(err)
	}
	replaced := tg.sf
	fx.setStatistics(t, tg.sf, func(sf *table.StatisticsFile) { *sf = linking.StatisticsFile(snap, &replaced) })
}

// damageKinds are the kinds of damage verify reports that no lookup may
// trust and that the next maintain must repair (issue 24, item 5).
var damageKinds = []struct {
	name    string
	corrupt func(t *testing.T, fx *corruptionFixture, tg target)
}{
	{"flipped filter bytes", func(t *testing.T, fx *corruptionFixture, tg target) {
		tg.editFile(t, func(b []byte) []byte {
			c := tg.group.ChunkOf(tg.run, 0)
			b[c.Offset+int64(c.Index)*32+5] ^= 0x11
			return b
		})
	}},
	{"bad chunk checksum", func(t *testing.T, fx *corruptionFixture, tg target) {
		tg.editFile(t, func(b []byte) []byte {
			c := tg.group.ChunkOf(tg.run, 0)
			b[c.Offset+c.Length+1] ^= 0x80 // the CRC-32C after the chunk's data
			return b
		})
	}},
	{"footer claiming huge sizes", func(t *testing.T, fx *corruptionFixture, tg target) {
		fx.claimHugeSizes(t, tg)
	}},
	{"link size off by one", func(t *testing.T, fx *corruptionFixture, tg target) {
		fx.linkWithWrongSize(t, tg)
	}},
	{"cut after the directory", func(t *testing.T, fx *corruptionFixture, tg target) {
		off, length, _ := segment.DirectoryPlace(tg.sf)
		tg.editFile(t, func(b []byte) []byte { return b[:off+length] })
	}},
}

// keepsTarget checks that a lookup of the target's value keeps its file,
// and that once repaired the index reports no error.
func (fx *corruptionFixture) keepsTarget(t *testing.T, tg target, when string) {
	t.Helper()
	res, err := lookup.Plan(ctx, fx.table(t), iceberg.EqualTo(iceberg.Reference("id"), tg.needle), lookup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if when != "damaged" && len(res.IndexErrors) > 0 {
		t.Errorf("%s: index errors %v", when, res.IndexErrors)
	}
	if !slices.ContainsFunc(res.Candidates, func(task table.FileScanTask) bool { return task.File.FilePath() == tg.file }) {
		t.Fatalf("%s: the lookup dropped %s, which holds id %d", when, tg.file, tg.needle)
	}
}

// verifies runs verify and reports whether it found no problem.
func (fx *corruptionFixture) verifies(t *testing.T) (bool, []string) {
	t.Helper()
	rep, err := verify.Table(ctx, fx.cat, fx.ident, verify.Options{Sample: 6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return rep.OK(), rep.Problems
}

// TestMaintainRepairsWhatVerifyReports: every kind of damage verify
// reports, in an old segment and in the current one, is repaired by one
// maintain — no sync, compaction or rebuild by hand: afterwards verify
// passes and every live file is covered for both columns again; and no
// lookup dropped the file holding the value, damaged or repaired.
func TestMaintainRepairsWhatVerifyReports(t *testing.T) {
	for _, kind := range damageKinds {
		for _, which := range []struct {
			name string
			file int
		}{{"old segment", 1}, {"current segment", 4}} {
			t.Run(kind.name+"/"+which.name, func(t *testing.T) {
				fx := newCorruptionFixture(t)
				tg := fx.target(t, which.file)
				kind.corrupt(t, fx, tg)
				if ok, _ := fx.verifies(t); ok {
					t.Fatal("verify found no problem in the damaged index")
				}
				fx.keepsTarget(t, tg, "damaged")

				r := maintenance.MaintainTable(ctx, fx.cat, fx.ident, maintenance.MaintainOptions{})
				if r.Failed() {
					t.Fatalf("maintain: %s", r.Error)
				}
				if ok, problems := fx.verifies(t); !ok {
					t.Fatalf("verify after one maintain: %q", problems)
				}
				if r.Repair == nil || len(r.Repair.Damaged) == 0 || r.Repair.Compacted == nil {
					t.Fatalf("maintain repaired nothing: %+v", r.Repair)
				}
				tbl := fx.table(t)
				coveredByAll(t, tbl, 1, 2)
				fx.keepsTarget(t, tg, "repaired")
				for _, sf := range statisticsFiles(tbl) {
					if sf.StatisticsPath == tg.sf.StatisticsPath {
						t.Errorf("table metadata still lists the damaged file %s", sf.StatisticsPath)
					}
				}
			})
		}
	}
}

// TestRepairThenSync is maintain's two steps one at a time, for a group
// failing its checksum: after the repair the group's files are uncovered
// (kept by every lookup), and the sync indexes exactly them again.
func TestRepairThenSync(t *testing.T) {
	fx := newCorruptionFixture(t)
	tg := fx.target(t, 4)
	damageKinds[0].corrupt(t, fx, tg)
	rep, err := indexer.Repair(ctx, fx.cat, fx.ident, indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Damaged) != 1 || rep.Damaged[0] != tg.sf.StatisticsPath || len(rep.Compacted.BrokenGroups) != 1 {
		t.Fatalf("repair %+v", rep)
	}
	fx.keepsTarget(t, tg, "repaired, not synced")
	if ok, problems := fx.verifies(t); !ok {
		t.Fatalf("verify after the repair: %q", problems)
	}
	sum, err := indexer.Sync(ctx, fx.cat, fx.ident, indexer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != tg.members {
		t.Fatalf("sync indexed %d files, want the broken group's %d", sum.FilesIndexed, tg.members)
	}
	coveredByAll(t, fx.table(t), 1, 2)
	fx.keepsTarget(t, tg, "synced")

	again, err := indexer.Repair(ctx, fx.cat, fx.ident, indexer.CompactOptions{})
	if err != nil || len(again.Damaged) != 0 || again.Compacted != nil || again.Checked == 0 || again.BytesVerified == 0 {
		t.Fatalf("a repair of the clean index: %+v, %v", again, err)
	}
}

// TestCompactRewritesADamagedOnlySegment: compact-index of a table whose
// index is one segment of the current snapshot, all of it needed, used to
// leave it as it was, broken group and all; it now finds the damage with
// one streaming read and rewrites the segment without the group, and
// verify reports the column whose only group it was until a sync indexes
// it again.
func TestCompactRewritesADamagedOnlySegment(t *testing.T) {
	fx := newCorruptionFixture(t)
	if _, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	tg := fx.target(t, 4)
	damageKinds[1].corrupt(t, fx, tg)
	sum, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.BrokenGroups) != 1 || sum.SegmentsBefore != 1 || sum.SegmentsAfter != 1 || sum.StatisticsPath == "" {
		t.Fatalf("compaction %+v", sum)
	}
	fx.keepsTarget(t, tg, "compacted")
	// The broken group was id's only one: the index then holds no filter
	// of id, which verify reports until a sync indexes it again.
	if ok, problems := fx.verifies(t); ok || !strings.HasPrefix(problems[0], "column id ") {
		t.Fatalf("verify after the compaction: %q, want column id reported lost", problems)
	}
	if _, err := indexer.Sync(ctx, fx.cat, fx.ident, indexer.Options{}); err != nil {
		t.Fatal(err)
	}
	if ok, problems := fx.verifies(t); !ok {
		t.Fatalf("verify after the sync: %q", problems)
	}
	if _, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	clean, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{})
	if err != nil || clean.StatisticsPath != "" {
		t.Fatalf("compaction of the clean segment committed %+v, %v", clean, err)
	}
}

// oneSegmentDamages are the damages that used to make maintain forget an
// index of one segment built from --columns (issue 36, item 1): the file
// missing, cut short, its directory broken, and a bit flipped in the only
// group of email.
var oneSegmentDamages = []struct {
	name string
	// lost are the columns a repair alone leaves without any filter.
	lost    []string
	corrupt func(t *testing.T, fx *corruptionFixture, tg target)
}{
	{"missing", []string{"id", "email"}, func(t *testing.T, fx *corruptionFixture, tg target) {
		if err := os.Remove(tg.local); err != nil {
			t.Fatal(err)
		}
	}},
	{"truncated", []string{"id", "email"}, func(t *testing.T, fx *corruptionFixture, tg target) {
		tg.editFile(t, func(b []byte) []byte { return b[:len(b)/2] })
	}},
	{"directory broken", []string{"id", "email"}, func(t *testing.T, fx *corruptionFixture, tg target) {
		off, length, _ := segment.DirectoryPlace(tg.sf)
		tg.editFile(t, func(b []byte) []byte {
			b[off+length/2] ^= 0xff
			return b
		})
	}},
	{"bit flipped in the only group of email", []string{"email"}, func(t *testing.T, fx *corruptionFixture, tg target) {
		var email []segment.Group
		for _, g := range tg.dir.Groups {
			if g.FieldID == 2 {
				email = append(email, g)
			}
		}
		if len(email) != 1 {
			t.Fatalf("email has %d groups, want its only one", len(email))
		}
		tg.editFile(t, func(b []byte) []byte {
			b[email[0].Offset+5] ^= 0x01
			return b
		})
	}},
}

// TestMaintainRemembersColumnsOfOneDamagedSegment: an index of one segment
// (after compact-index) whose columns came from --columns, at a rate of
// 0.001, is damaged; a repair alone leaves a column without any filter,
// which verify reports; then one maintain indexes every column again at
// its rate, and verify passes. Before, maintain removed the reference and
// skipped the table ("no indexed columns"), or re-indexed only id, and
// verify passed.
func TestMaintainRemembersColumnsOfOneDamagedSegment(t *testing.T) {
	for _, damage := range oneSegmentDamages {
		t.Run(damage.name, func(t *testing.T) {
			cat, tbl, batches := eventsTable(t, 6, 300, nil)
			opts := indexer.Options{Columns: []string{"id", "email"}, FPP: 0.001}
			if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
				t.Fatal(err)
			}
			fx := &corruptionFixture{cat: cat, ident: tbl.Identifier(), batches: batches}
			for _, df := range liveFiles(t, fx.table(t)) {
				fx.files = append(fx.files, df.FilePath())
			}
			if n := len(statisticsFiles(fx.table(t))); n != 1 {
				t.Fatalf("%d segments, want one", n)
			}
			tg := fx.target(t, 2)
			damage.corrupt(t, fx, tg)

			if _, err := indexer.Repair(ctx, fx.cat, fx.ident, indexer.CompactOptions{}); err != nil {
				t.Fatal(err)
			}
			fx.keepsTarget(t, tg, "repaired, not synced") // a segment of no filters reads clean
			_, problems := fx.verifies(t)
			for _, name := range damage.lost {
				if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, "column "+name+" ") }) {
					t.Errorf("verify after the repair does not report column %s lost: %q", name, problems)
				}
			}

			r := maintenance.MaintainTable(ctx, fx.cat, fx.ident, maintenance.MaintainOptions{})
			if r.Failed() || r.Skipped != "" {
				t.Fatalf("maintain: %+v", r)
			}
			if r.Sync == nil || strings.Join(r.Sync.Columns, ",") != "email,id" {
				t.Fatalf("maintain's sync indexed %+v, want email and id", r.Sync)
			}
			if ok, problems := fx.verifies(t); !ok {
				t.Fatalf("verify after one maintain: %q", problems)
			}
			tbl = fx.table(t)
			coveredByAll(t, tbl, 1, 2)
			for _, seg := range loadIndex(t, tbl).Segments() {
				for _, g := range seg.Directory().Groups {
					if g.FPP != 0.001 {
						t.Errorf("a group of field %d targets %v, want the 0.001 the index was built at", g.FieldID, g.FPP)
					}
				}
			}
			fx.keepsTarget(t, tg, "repaired")
		})
	}
}
