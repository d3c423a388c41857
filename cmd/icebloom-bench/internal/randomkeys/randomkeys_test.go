package randomkeys

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// TestCreate makes a table of 7 files in commits of 3 and checks what the
// bench relies on: the files the spec names, Spark-like, one UUID a commit,
// each holding the rows Spec.File gives (its bounds are theirs: the ids are
// not the table's smallest and largest), a value drawn present held by the
// file named with it, edge and middle values where they should be; and that
// Restore returns the table to the recorded version after an append.
func TestCreate(t *testing.T) {
	ctx := context.Background()
	cat := catalogtest.NewCatalog(t)
	ident := table.Identifier{"db", "keys"}
	spec := Spec{Seed: 35, Files: 7, Rows: 50, Batch: 3}
	var commits []int
	tbl, _, err := Create(ctx, cat, ident, spec, func(done int, _ Timings) { commits = append(commits, done) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(commits, []int{3, 6, 7}) {
		t.Errorf("progress after %v files, want after each commit: 3, 6, 7", commits)
	}
	name := regexp.MustCompile(`^data/(\d{5})-(\d+)-([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})-00001\.parquet$`)
	uuids := map[string]int{}
	for i := range spec.Files {
		m := name.FindStringSubmatch("data/" + spec.Name(i))
		if m == nil {
			t.Fatalf("file %d is named %s", i, spec.Name(i))
		}
		uuids[m[3]] = i / spec.Batch
	}
	if len(uuids) != 3 {
		t.Errorf("%d UUIDs among the names, want one a commit (3)", len(uuids))
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDrawer(spec, tbl.Location(), 1)
	byPath := map[string]iceberg.DataFile{}
	for _, task := range tasks {
		byPath[task.File.FilePath()] = task.File
	}
	if len(byPath) != spec.Files {
		t.Fatalf("%d files planned, want %d", len(byPath), spec.Files)
	}
	for i := range spec.Files {
		f, ok := byPath[d.Path(i)]
		if !ok {
			t.Fatalf("no file %s among %v", d.Path(i), byPath)
		}
		ids, emails := spec.File(i)
		lo, hi := int64(binary.LittleEndian.Uint64(f.LowerBoundValues()[1])), int64(binary.LittleEndian.Uint64(f.UpperBoundValues()[1]))
		if f.Count() != int64(spec.Rows) || lo != slices.Min(ids) || hi != slices.Max(ids) {
			t.Errorf("%s: %d rows, ids %d..%d; want %d rows, %d..%d", f.FilePath(), f.Count(), lo, hi, spec.Rows, slices.Min(ids), slices.Max(ids))
		}
		if elo := string(f.LowerBoundValues()[2]); !strings.HasPrefix(slices.Min(emails), elo) {
			t.Errorf("%s: emails from %q, want %q", f.FilePath(), elo, slices.Min(emails))
		}
	}
	for _, col := range []string{IDCol, EmailCol} {
		for _, edge := range []bool{false, true} {
			v := d.Present(col, edge)
			i := -1
			for k := range spec.Files {
				if d.Path(k) == v.Holder {
					i = k
				}
			}
			if i < 0 {
				t.Fatalf("present %s held by %q, no file of the table", v, v.Holder)
			}
			ids, emails := spec.File(i)
			if col == IDCol && !slices.Contains(ids, v.ID) || col == EmailCol && !slices.Contains(emails, v.Email) {
				t.Errorf("present %s (edge %v) held by %s, which does not hold it", v, edge, v.Holder)
			}
			f := d.Fresh(col, edge)
			for _, w := range []Value{v, f} {
				if on := col == IDCol && EdgeID(w.ID) || col == EmailCol && EdgeEmail(w.Email); on != edge {
					t.Errorf("%s drawn with edge %v is on an edge: %v", w, edge, on)
				}
			}
			if f.Holder != "" || d.Take(v) || d.Take(f) {
				t.Errorf("fresh %s held by %q, or a value handed out again", f, f.Holder)
			}
		}
	}

	rec := &Record{Table: "db.keys", Spec: spec, Location: tbl.Location(), SnapshotID: tbl.CurrentSnapshot().SnapshotID,
		Statistics: StatisticsPaths(tbl.Metadata())}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := rec.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecord(path)
	if err != nil || back.Spec != spec || back.SnapshotID != rec.SnapshotID {
		t.Fatalf("read back %+v (%v), want %+v", back, err, rec)
	}
	if removed, err := Restore(ctx, cat, ident, back); err != nil || len(removed) != 0 {
		t.Fatalf("restore of the recorded version: removed %v, %v", removed, err)
	}
	extra, _, _, err := WriteExtra(tbl.Location(), d.Rand(), 10, 99)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddFiles(ctx, cat, ident, []string{extra}); err != nil {
		t.Fatal(err)
	}
	removed, err := Restore(ctx, cat, ident, back)
	if err != nil || len(removed) != 1 {
		t.Fatalf("restore after an append: removed %v, %v; want the append's snapshot", removed, err)
	}
	now, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if now.CurrentSnapshot().SnapshotID != rec.SnapshotID || len(now.Metadata().Snapshots()) != 3 {
		t.Errorf("after restore: current snapshot %d of %d, want %d of 3", now.CurrentSnapshot().SnapshotID, len(now.Metadata().Snapshots()), rec.SnapshotID)
	}
}
