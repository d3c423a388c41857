package lookup

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/where"
	"github.com/icebloom/icebloom/puffin"
)

// mergeManifests keeps a fixture table at one or two manifests, so that
// iceberg-go's planning, which every Plan repeats, stays fast.
var mergeManifests = iceberg.Properties{
	table.ManifestMergeEnabledKey:  "true",
	table.ManifestMinMergeCountKey: "2",
}

const rowsPerFile = 24

// eventsFixture is a table of 2n data files of the given number of rows,
// indexed in two segments of n files each.
func eventsFixture(t testing.TB, n, rows int) *fixture {
	return indexedFixture(t, n, rows, false)
}

// groupedFixture is eventsFixture with version 2 segments (groups), as
// the indexer writes them.
func groupedFixture(t testing.TB, n, rows int) *fixture {
	return indexedFixture(t, n, rows, true)
}

func indexedFixture(t testing.TB, n, rows int, grouped bool) *fixture {
	fx := newFixture(t, columns, mergeManifests)
	fx.grouped = grouped
	for range n {
		fx.appendFile(rows)
	}
	fx.index(fx.files...)
	for range n {
		fx.appendFile(rows)
	}
	fx.index(fx.files[n:]...)
	return fx
}

func (fx *fixture) plan(filter iceberg.BooleanExpression, o Options) *Result {
	fx.t.Helper()
	res, err := Plan(fx.ctx, fx.tbl, filter, o)
	if err != nil {
		fx.t.Fatalf("Plan(%s): %v", filter, err)
	}
	if !fx.uncrossed {
		fx.sameByPruneFiles(filter, o, res)
	}
	return res
}

// sameByPruneFiles checks that PruneFiles over Plan's AfterStats, held in
// columns, keeps Plan's candidates and reports the same unindexed files,
// and errors when Plan does: every plan of the package's tests checks the
// columnar prober (columnar.go) against the general evaluation, over every
// index problem and predicate they make. The memo says which way it went.
func (fx *fixture) sameByPruneFiles(filter iceberg.BooleanExpression, o Options, res *Result) {
	fx.t.Helper()
	files := &filelist.List{}
	for _, task := range res.AfterStats {
		files.Append(task.File.FilePath(), task.File.FileSizeBytes())
	}
	memo := &Memo{}
	o.Memo, o.Keep = memo, nil
	got, err := PruneFiles(fx.ctx, fx.tbl, files, filter, o)
	if err != nil {
		fx.t.Fatalf("PruneFiles(%s): %v", filter, err)
	}
	var kept []string
	for _, i := range got.Kept {
		kept = append(kept, files.Path(int(i)))
	}
	way := "the general evaluation"
	if memo.cols != nil && memo.pf == nil {
		way = "the columnar prober"
		fx.columnar.Add(1)
	}
	if !slices.Equal(kept, paths(res.Candidates)) || !sameSet(got.Unindexed, res.Unindexed) ||
		(len(got.IndexErrors) > 0) != (len(res.IndexErrors) > 0) {
		fx.t.Fatalf("%s: PruneFiles by %s kept %v (unindexed %v, errors %v), Plan %v (unindexed %v, errors %v)", filter, way,
			kept, got.Unindexed, got.IndexErrors, paths(res.Candidates), res.Unindexed, res.IndexErrors)
	}
}

func paths(tasks []table.FileScanTask) []string {
	var ps []string
	for _, t := range tasks {
		ps = append(ps, t.File.FilePath())
	}
	return ps
}

// kept returns which of the fixture's files are candidates, by number.
func (fx *fixture) kept(res *Result) []int {
	var ks []int
	for i, f := range fx.files {
		if slices.Contains(paths(res.Candidates), f.path) {
			ks = append(ks, i)
		}
	}
	return ks
}

// TestNoFalseNegatives looks up every value of every column of every file,
// written as the lookup command's filter, from several goroutines at once:
// each lookup must keep the file holding the value.
func TestNoFalseNegatives(t *testing.T) {
	fx := groupedFixture(t, 3, rowsPerFile)
	cache := index.NewFooterCache(4)
	type lookup struct{ file, row, col int }
	work := make(chan lookup)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var plans, candidates int
	for range 4 {
		wg.Go(func() {
			for l := range work {
				df := fx.files[l.file]
				filter := fx.where(l.col, df.rows[l.row][l.col])
				res, err := Plan(fx.ctx, fx.tbl, filter, Options{Cache: cache})
				if err != nil {
					t.Errorf("Plan(%s): %v", filter, err)
					continue
				}
				if !slices.Contains(paths(res.Candidates), df.path) || len(res.IndexErrors) > 0 || len(res.Unindexed) > 0 {
					t.Errorf("Plan(%s) dropped file %d (candidates %v, errors %v, unindexed %v)",
						filter, l.file, paths(res.Candidates), res.IndexErrors, res.Unindexed)
				}
				mu.Lock()
				plans++
				candidates += len(res.Candidates)
				mu.Unlock()
			}
		})
	}
	for f := range fx.files {
		for r := range rowsPerFile {
			for c := range fx.cols {
				work <- lookup{f, r, c}
			}
		}
	}
	close(work)
	wg.Wait()
	t.Logf("%d lookups of present values: %.2f candidate files each (of %d)", plans, float64(candidates)/float64(plans), len(fx.files))
}

// TestAbsentValues looks up values no file holds: statistics keep almost
// every file, and the index drops all but about its false-positive rate.
func TestAbsentValues(t *testing.T) {
	fx := groupedFixture(t, 3, rowsPerFile)
	cache := index.NewFooterCache(4)
	const perColumn = 60
	for c, col := range fx.cols {
		var afterStats, candidates int
		for range perColumn {
			res := fx.plan(fx.where(c, fx.absent(c)), Options{Cache: cache})
			if len(res.IndexErrors) > 0 || len(res.Unindexed) > 0 {
				t.Fatalf("errors %v, unindexed %v", res.IndexErrors, res.Unindexed)
			}
			afterStats += len(res.AfterStats)
			candidates += len(res.Candidates)
		}
		rate := float64(candidates) / float64(afterStats)
		t.Logf("%s: %d of %d files left by statistics kept (%.3f)", col.name, candidates, afterStats, rate)
		if afterStats < perColumn*len(fx.files)*8/10 {
			t.Errorf("%s: statistics left only %d of %d files; the test needs values they cannot prune", col.name, afterStats, perColumn*len(fx.files))
		}
		if rate > 3*0.01+0.02 {
			t.Errorf("%s: kept %.3f of the files for absent values, want about 0.01", col.name, rate)
		}
	}
}

// TestPredicates checks which predicates prune: =, IN, AND of either, OR of
// both; NOT, !=, NOT IN, ranges, IS NULL and starts-with never do.
func TestPredicates(t *testing.T) {
	fx := groupedFixture(t, 3, rowsPerFile)
	// Values whose own lookup keeps exactly their file (no false positive
	// elsewhere), so that what a combination keeps follows from set logic.
	sole := func(c, f int) string {
		for _, row := range fx.files[f].rows {
			if slices.Equal(fx.kept(fx.plan(fx.where(c, row[c]), Options{})), []int{f}) {
				return fx.cols[c].literal(row[c])
			}
		}
		t.Fatalf("every %s of file %d is a false positive elsewhere", fx.cols[c].name, f)
		return ""
	}
	none := func(c int) string {
		for {
			if v := fx.absent(c); len(fx.plan(fx.where(c, v), Options{}).Candidates) == 0 {
				return fx.cols[c].literal(v)
			}
		}
	}
	id := func(f int) string { return sole(0, f) }
	email := func(f int) string { return sole(1, f) }
	noID, noEmail := none(0), none(1)
	for _, c := range []struct {
		where string
		want  []int
	}{
		{"id = " + id(0), []int{0}},
		{"id = " + noID, nil},
		{"id IN (" + id(1) + ", " + noID + ", " + id(4) + ")", []int{1, 4}},
		{"id = " + id(2) + " AND email = " + email(2), []int{2}},
		{"id = " + id(2) + " AND email = " + email(3), nil},
		{"id = " + id(2) + " AND email = " + noEmail, nil},
		{"id = " + id(2) + " OR email = " + email(3), []int{2, 3}},
		{"id = " + id(2) + " OR email = " + noEmail, []int{2}},
		{"(id = " + id(0) + " OR id = " + id(5) + ") AND email IN (" + email(5) + ", " + noEmail + ")", []int{5}},
	} {
		if got := fx.kept(fx.plan(mustParse(t, c.where), Options{})); !slices.Equal(got, c.want) {
			t.Errorf("%s: kept files %v, want %v", c.where, got, c.want)
		}
	}

	ref := iceberg.Reference("id")
	v, _ := strconv.ParseInt(id(0), 10, 64)
	absent, _ := strconv.ParseInt(noID, 10, 64)
	eq := iceberg.EqualTo(ref, absent)
	anyID := iceberg.GreaterThanEqual(ref, int64(math.MinInt64))
	for _, c := range []struct {
		filter iceberg.BooleanExpression
		prunes bool
		want   []int // if prunes
	}{
		{filter: iceberg.NewNot(eq)},
		{filter: iceberg.NotEqualTo(ref, absent)},
		{filter: iceberg.NotIn(ref, absent, v)},
		{filter: anyID},
		{filter: iceberg.LessThan(ref, absent)},
		{filter: iceberg.NotNull(ref)},
		{filter: iceberg.IsNull(ref)},
		{filter: iceberg.StartsWith(iceberg.Reference("email"), "u")},
		{filter: iceberg.NewOr(eq, anyID)},
		{iceberg.NewAnd(iceberg.NewNot(iceberg.EqualTo(ref, v)), eq), true, nil},
		{iceberg.NewAnd(iceberg.EqualTo(ref, v), anyID), true, []int{0}},
	} {
		res := fx.plan(c.filter, Options{})
		if got := fx.kept(res); c.prunes && !slices.Equal(got, c.want) {
			t.Errorf("%s: kept files %v, want %v", c.filter, got, c.want)
		}
		if !c.prunes && !slices.Equal(paths(res.Candidates), paths(res.AfterStats)) {
			t.Errorf("%s: the index pruned (%d of %d left)", c.filter, len(res.Candidates), len(res.AfterStats))
		}
	}
	if fx.columnar.Load() == 0 {
		t.Error("no filter was checked against the columnar prober")
	}
}

// TestPredicatesSQL: the filters SQL writes beyond = and IN reach
// iceberg-go's planning, and the index keeps every file they leave; a
// literal no value of the column equals (more digits after the point than
// its scale) plans no file at all.
func TestPredicatesSQL(t *testing.T) {
	fx := eventsFixture(t, 2, rowsPerFile)
	var absent string
	for absent == "" {
		if v := fx.absent(0); len(fx.plan(fx.where(0, v), Options{}).Candidates) == 0 {
			absent = fx.cols[0].literal(v)
		}
	}
	present := fx.cols[0].literal(fx.files[1].rows[0][0])
	for _, where := range []string{
		"id != " + absent,
		"id <> " + absent,
		"id NOT IN (" + absent + ", " + present + ")",
		"NOT id = " + absent,
		"NOT (id = " + absent + " OR id IN (" + absent + ", 1))",
		"id < " + absent,
		"id <= " + absent,
		"id > " + absent,
		"id >= " + absent,
		"id BETWEEN " + absent + " AND " + present,
		"id NOT BETWEEN 0 AND 0",
		"id IS NOT NULL",
		"email IS NOT NULL AND id != " + absent,
		"id = " + absent + " OR id > 0",
	} {
		res := fx.plan(mustParse(t, where), Options{})
		if !slices.Equal(paths(res.Candidates), paths(res.AfterStats)) {
			t.Errorf("%s: the index pruned (%d of %d left)", where, len(res.Candidates), len(res.AfterStats))
		}
	}
	for _, where := range []string{"id IS NULL", "amount = 0.001", "amount IN (0.001, -7.125)", "id = 0.5"} {
		if res := fx.plan(mustParse(t, where), Options{}); len(res.AfterStats) != 0 || res.BlocksRead != 0 {
			t.Errorf("%s: %d files after statistics after reading %d blocks, want none", where, len(res.AfterStats), res.BlocksRead)
		}
	}
	// Within an OR, such a literal leaves the other side to decide.
	if got := fx.kept(fx.plan(mustParse(t, "amount = 0.001 OR id = "+present), Options{})); !slices.Contains(got, 1) || len(got) == len(fx.files) {
		t.Errorf("amount = 0.001 OR id = (in file 1): kept %v", got)
	}
	if res := fx.plan(mustParse(t, "amount != 0.001"), Options{}); len(res.Candidates) != len(fx.files) {
		t.Errorf("amount != 0.001: %d candidates, want all %d", len(res.Candidates), len(fx.files))
	}
}

// TestUnindexedFile: a file appended after the index was built is kept
// and listed as unindexed; the indexed ones are still pruned.
func TestUnindexedFile(t *testing.T) {
	fx := newFixture(t, columns, mergeManifests)
	fx.appendFile(rowsPerFile)
	fx.appendFile(rowsPerFile)
	fx.index(fx.files...)
	late := fx.appendFile(rowsPerFile)

	for _, filter := range []iceberg.BooleanExpression{fx.where(0, fx.absent(0)), fx.where(1, late.rows[3][1])} {
		res := fx.plan(filter, Options{})
		if got := fx.kept(res); !slices.Equal(got, []int{2}) {
			t.Errorf("%s: kept %v, want only the new file 2", filter, got)
		}
		if !slices.Equal(res.Unindexed, []string{late.path}) {
			t.Errorf("%s: unindexed %v, want %s", filter, res.Unindexed, late.path)
		}
	}
	// A filter the index cannot use needs no index.
	if res := fx.plan(iceberg.NotNull(iceberg.Reference("id")), Options{}); len(res.Unindexed) != 0 {
		t.Errorf("NOT NULL lists unindexed files %v", res.Unindexed)
	}
}

// TestIndexProblems: a missing statistics file, a corrupt footer, an
// entry naming the wrong file size, invalid entries and unreadable blocks
// keep the files concerned, report errors where they are errors, and never
// fail the lookup; a foreign blob in a statistics file changes nothing.
func TestIndexProblems(t *testing.T) {
	fx := newFixture(t, columns, mergeManifests)
	fsys, err := fx.tbl.FS(fx.ctx)
	if err != nil {
		t.Fatal(err)
	}
	theta := puffin.BlobInput{Type: puffin.BlobTypeDataSketchesTheta, Fields: []int32{1}}

	f0 := fx.appendFile(rowsPerFile) // a good segment, with a theta sketch
	good := fx.writeSegment(fx.entries(f0), theta)
	fx.register(good)

	f1 := fx.appendFile(rowsPerFile) // a statistics file that is gone
	missing := fx.writeSegment(fx.entries(f1))
	if err := fsys.Remove(missing.StatisticsPath); err != nil {
		t.Fatal(err)
	}
	fx.register(missing)

	f2 := fx.appendFile(rowsPerFile) // a corrupt footer
	corrupt := fx.writeSegment(fx.entries(f2))
	fx.upload(corrupt.StatisticsPath, make([]byte, corrupt.FileSizeInBytes))
	fx.register(corrupt)

	f3 := fx.appendFile(rowsPerFile) // entries for another version of the file
	wrongSize := fx.entries(f3)
	for i := range wrongSize {
		wrongSize[i].entry.DataFileSize++
	}
	fx.register(fx.writeSegment(wrongSize))

	f4 := fx.appendFile(rowsPerFile) // an id entry of another hash, an email entry of another type
	odd := fx.entries(f4)
	for i := range odd {
		switch odd[i].entry.FieldID {
		case 1:
			odd[i].props = map[string]string{index.PropHash: "murmur3"}
		case 2:
			odd[i].entry.ValueType = iceberg.PrimitiveTypes.Int64
		}
	}
	fx.register(fx.writeSegment(odd))

	ix, errs := index.Load(fx.ctx, fsys, fx.tbl.Metadata(), nil)
	if len(errs) != 3 || len(ix.Segments()) != 3 {
		t.Errorf("Load: %d segments, errors %v; want 3 segments and 3 errors", len(ix.Segments()), errs)
	}
	if seg := ix.Segments()[0]; seg.File.StatisticsPath != good.StatisticsPath || len(seg.Entries) == 0 {
		t.Errorf("first segment %s has %d entries, want the good one's", seg.File.StatisticsPath, len(seg.Entries))
	}

	res := fx.plan(fx.where(0, fx.absent(0)), Options{})
	if got := fx.kept(res); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("id: kept %v, want the files without a usable index: 1, 2, 3, 4", got)
	}
	if !sameSet(res.Unindexed, []string{f1.path, f2.path, f3.path, f4.path}) {
		t.Errorf("id: unindexed %v", res.Unindexed)
	}
	for i, want := range []string{missing.StatisticsPath, corrupt.StatisticsPath, "murmur3"} {
		if len(res.IndexErrors) != 3 || !strings.Contains(res.IndexErrors[i].Error(), want) {
			t.Errorf("id: errors %v, want 3, the %d. naming %s", res.IndexErrors, i+1, want)
		}
	}

	res = fx.plan(fx.where(1, fx.absent(1)), Options{})
	if got := fx.kept(res); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("email: kept %v, want 1, 2, 3, 4", got)
	}
	if !sameSet(res.Unindexed, []string{f1.path, f2.path, f3.path}) {
		t.Errorf("email: unindexed %v", res.Unindexed)
	}
	if len(res.IndexErrors) != 4 || !strings.Contains(res.IndexErrors[3].Error(), f4.path) {
		t.Errorf("email: errors %v, want a 4th for the long entry of file 4", res.IndexErrors)
	}

	// Blocks that cannot be read keep their files: the footer is cached,
	// the file is gone.
	cache := index.NewFooterCache(8)
	fx.plan(fx.where(0, fx.absent(0)), Options{Cache: cache})
	if err := fsys.Remove(good.StatisticsPath); err != nil {
		t.Fatal(err)
	}
	res = fx.plan(fx.where(0, fx.absent(0)), Options{Cache: cache})
	if got := fx.kept(res); !slices.Contains(got, 0) || !strings.Contains(res.IndexErrors[len(res.IndexErrors)-1].Error(), good.StatisticsPath) {
		t.Errorf("unreadable blocks: kept %v, errors %v", got, res.IndexErrors)
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestNeverPresent: after qty is promoted from int to long, its entries
// still hold int values; a long literal outside the int range prunes every
// file without reading a block, even with no statistics to help.
func TestNeverPresent(t *testing.T) {
	fx := newFixture(t, []column{columns[0], qty}, iceberg.Properties{table.MetricsModeColumnConfPrefix + ".qty": "none"})
	fx.appendFile(rowsPerFile)
	fx.appendFile(rowsPerFile)
	fx.index(fx.files...)
	old := fx.tbl.CurrentSnapshot().SnapshotID
	tx := fx.tbl.NewTransaction()
	long := iceberg.Optional[iceberg.Type]{Val: iceberg.PrimitiveTypes.Int64, Valid: true}
	if err := tx.UpdateSchema(true, false).UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: long}).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(fx.ctx); err != nil {
		t.Fatal(err)
	}
	fx.reload()

	res := fx.plan(mustParse(t, "qty = 1099511627776"), Options{})
	if len(res.AfterStats) != 2 || len(res.Candidates) != 0 || res.BlocksRead != 0 || res.BytesRead != 0 {
		t.Errorf("qty = 2^40: %d after statistics, %d candidates, %d blocks, %d bytes; want 2, 0, 0, 0",
			len(res.AfterStats), len(res.Candidates), res.BlocksRead, res.BytesRead)
	}
	present := fx.cols[1].literal(fx.files[1].rows[0][1])
	res = fx.plan(mustParse(t, "qty IN (1099511627776, "+present+")"), Options{})
	if got := fx.kept(res); !slices.Equal(got, []int{1}) || res.BlocksRead != 2 {
		t.Errorf("qty IN (2^40, present): kept %v after %d blocks, want file 1 after 2", got, res.BlocksRead)
	}
	// Time travel binds to the snapshot's schema, where qty is an int and
	// 2^40 matches nothing before the index is asked.
	res = fx.plan(mustParse(t, "qty = 1099511627776"), Options{SnapshotID: &old})
	if len(res.AfterStats) != 0 {
		t.Errorf("qty = 2^40 as int: %d files after statistics, want 0", len(res.AfterStats))
	}
}

// countingIO records the reads of Puffin files.
type countingIO struct {
	icebergio.IO
	mu    sync.Mutex
	reads []readAt
}

type readAt struct {
	path     string
	off, len int64
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	f, err := c.IO.Open(name)
	if err != nil || !strings.HasSuffix(name, ".puffin") {
		return f, err
	}
	return countingFile{f, c, name}, nil
}

type countingFile struct {
	icebergio.File
	io   *countingIO
	path string
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.io.mu.Lock()
	f.io.reads = append(f.io.reads, readAt{f.path, off, int64(len(p))})
	f.io.mu.Unlock()
	return f.File.ReadAt(p, off)
}

// take returns the reads so far and forgets them.
func (c *countingIO) take() []readAt {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads
	c.reads = nil
	return r
}

// TestBlockReads checks the index I/O of lookups against the blocks they
// need, computed here from the entries: one read per footer, then only the
// needed blocks, nearby ones in one read. Files of 1500 rows make entries of
// about 60 blocks, so the blocks of one value in different files lie far
// apart while the blocks of several values in one entry are near.
func TestBlockReads(t *testing.T) {
	fx := eventsFixture(t, 2, 1500)
	fx.uncrossed = true // PruneFiles would read too
	fsys, err := fx.tbl.FS(fx.ctx)
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingIO{IO: fsys}
	fx.tbl = table.New(fx.ident, fx.tbl.Metadata(), fx.tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return counting, nil }, fx.cat)
	ix, errs := index.Load(fx.ctx, fsys, fx.tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	segments := make(map[string]table.StatisticsFile)
	for _, s := range ix.Segments() {
		segments[s.File.StatisticsPath] = s.File
	}
	// needed returns the blocks (path and offset) that checking values of
	// column c in every file reads: one per file and value, but for values
	// that fall in the same block.
	needed := func(c int, values ...any) map[readAt]bool {
		blocks := make(map[readAt]bool)
		for _, df := range fx.files {
			e, _ := ix.Lookup(df.path, df.size, c+1)
			for _, v := range values {
				bound, err := where.Bind(fx.tbl.Schema(), fx.where(c, v), true)
				if err != nil {
					t.Fatal(err)
				}
				h, _, _ := hashing.Literal(e.ValueType, bound.(iceberg.BoundLiteralPredicate).Literal())
				pl := e.Place(sbbf.BlockIndex(h, e.Blocks))
				blocks[readAt{e.Path, pl.Offset, pl.Length}] = true
			}
		}
		return blocks
	}

	id, email := fx.files[2].rows[5][0], fx.absent(1)
	uids := []any{fx.absent(2), fx.absent(2), fx.files[0].rows[1][2], fx.files[3].rows[2][2], fx.absent(2)}
	var uidLits []string
	for _, v := range uids {
		uidLits = append(uidLits, fx.cols[2].literal(v))
	}
	for _, c := range []struct {
		name   string
		filter iceberg.BooleanExpression
		blocks map[readAt]bool
		spread bool // the blocks are far apart: one read each
	}{
		{"id = v", fx.where(0, id), needed(0, id), true},
		{"email = absent", fx.where(1, email), needed(1, email), true},
		{"uid IN (5 values)", mustParse(t, "uid IN ("+strings.Join(uidLits, ", ")+")"), needed(2, uids...), false},
	} {
		cache := index.NewFooterCache(8)
		for _, warm := range []bool{false, true} {
			res := fx.plan(c.filter, Options{Cache: cache})
			var footerReads int
			var blockReads []readAt
			var bytes int64
			for _, r := range counting.take() {
				if sf := segments[r.path]; r.len == sf.FileFooterSizeInBytes && r.off+r.len == sf.FileSizeInBytes {
					footerReads++
					continue
				}
				blockReads = append(blockReads, r)
				bytes += r.len
			}
			checkCoalesced(t, c.name, blockReads, c.blocks)
			t.Logf("%s (warm cache %v): %d blocks, %d bytes in %d reads, %d footer reads; %d of %d files kept",
				c.name, warm, res.BlocksRead, res.BytesRead, len(blockReads), footerReads, len(res.Candidates), len(res.AfterStats))
			wantFooters := len(segments)
			if warm {
				wantFooters = 0
			}
			switch {
			case res.BlocksRead != int64(len(c.blocks)):
				t.Errorf("%s: read %d blocks, want %d", c.name, res.BlocksRead, len(c.blocks))
			case res.BytesRead != bytes:
				t.Errorf("%s: counted %d bytes, read %d", c.name, res.BytesRead, bytes)
			case c.spread && bytes != sbbf.BlockBytes*res.BlocksRead:
				t.Errorf("%s: read %d bytes for %d blocks", c.name, bytes, res.BlocksRead)
			case footerReads != wantFooters:
				t.Errorf("%s: %d footer reads, want %d", c.name, footerReads, wantFooters)
			}
		}
	}

	// An AND reads its second test only for the files its first does not
	// prune.
	res := fx.plan(iceberg.NewAnd(fx.where(0, id), fx.where(1, email)), Options{})
	counting.take()
	if res.BlocksRead != int64(len(fx.files))+1 || len(res.Candidates) != 0 {
		t.Errorf("AND: %d blocks, %d candidates; want one block per file and one more for file 2, none kept", res.BlocksRead, len(res.Candidates))
	}
}

// checkCoalesced checks reads of blocks: each starts and ends with a
// needed block and spans no gap of maxGap or more between needed blocks,
// and reads of one file are too far apart to have been one.
func checkCoalesced(t *testing.T, name string, reads []readAt, blocks map[readAt]bool) {
	t.Helper()
	slices.SortFunc(reads, func(a, b readAt) int { return cmp.Or(strings.Compare(a.path, b.path), cmp.Compare(a.off, b.off)) })
	for i, r := range reads {
		if i > 0 && reads[i-1].path == r.path && r.off-(reads[i-1].off+reads[i-1].len) < maxGap {
			t.Errorf("%s: reads %+v and %+v should have been one", name, reads[i-1], r)
		}
		var inside []int64
		for b := range blocks {
			if b.path == r.path && b.off >= r.off && b.off+b.len <= r.off+r.len {
				inside = append(inside, b.off)
			}
		}
		slices.Sort(inside)
		if len(inside) == 0 || inside[0] != r.off || inside[len(inside)-1]+sbbf.BlockBytes != r.off+r.len {
			t.Errorf("%s: read %+v does not start and end with needed blocks %v", name, r, inside)
			continue
		}
		for i := 1; i < len(inside); i++ {
			if gap := inside[i] - inside[i-1] - sbbf.BlockBytes; gap >= maxGap {
				t.Errorf("%s: read %+v spans a gap of %d bytes", name, r, gap)
			}
		}
	}
}

// TestCounts: FilesTotal counts the snapshot's files, from its summary or
// else by planning; AfterStats is what statistics left.
func TestCounts(t *testing.T) {
	fx := eventsFixture(t, 3, rowsPerFile)
	minID := int64(math.MaxInt64)
	for _, df := range fx.files {
		for _, row := range df.rows {
			minID = min(minID, row[0].(int64))
		}
	}
	res := fx.plan(iceberg.LessThan(iceberg.Reference("id"), minID), Options{})
	if res.FilesTotal != 6 || len(res.AfterStats) != 0 || len(res.Candidates) != 0 || res.SnapshotID != fx.tbl.CurrentSnapshot().SnapshotID {
		t.Errorf("id < min: snapshot %d, %d files, %d after statistics, %d candidates; want 6, 0, 0",
			res.SnapshotID, res.FilesTotal, len(res.AfterStats), len(res.Candidates))
	}
	first := fx.tbl.Metadata().Snapshots()[0].SnapshotID
	res = fx.plan(fx.where(0, fx.files[0].rows[0][0]), Options{SnapshotID: &first})
	if res.SnapshotID != first || res.FilesTotal != 1 || len(res.AfterStats) != 1 || !slices.Equal(fx.kept(res), []int{0}) {
		t.Errorf("time travel: snapshot %d, %d files, %d after statistics", res.SnapshotID, res.FilesTotal, len(res.AfterStats))
	}

	snap := *fx.tbl.CurrentSnapshot()
	snap.Summary = nil
	if n, err := countFiles(fx.ctx, fx.tbl, &snap, nil); err != nil || n != 6 {
		t.Errorf("counted %d files (%v) without a summary, want 6", n, err)
	}
}

// TestPlanErrors: a table without snapshots has no files, and filters that
// do not fit the schema fail the lookup, naming column and value.
func TestPlanErrors(t *testing.T) {
	fx := newFixture(t, columns, nil)
	if res := fx.plan(mustParse(t, "id = 5"), Options{}); res.FilesTotal != 0 || len(res.AfterStats) != 0 {
		t.Errorf("empty table: %+v", res)
	}
	for where, want := range map[string]string{
		"id = 'abc'":     "lookup: id: cannot use 'abc' as long",
		"missing = 5":    "lookup: missing: no such column",
		"amount = '1/2'": "lookup: amount: cannot use '1/2' as decimal(12, 2)",
	} {
		if _, err := Plan(fx.ctx, fx.tbl, mustParse(t, where), Options{}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want %s", where, err, want)
		}
	}
	bad := int64(42)
	if _, err := Plan(fx.ctx, fx.tbl, mustParse(t, "id = 5"), Options{SnapshotID: &bad}); err == nil {
		t.Error("no error for an unknown snapshot")
	}
}
