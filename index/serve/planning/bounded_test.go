package planning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// TestLargeINWorksInBoundedMemory: a lookup's working memory does not grow
// with files × values: an IN of lookup.MaxTestValues values over 3,000
// files (3 million checks) works in one chunk of files' probes at a time,
// its scratch (counted: the capacities it holds) within lookup.WorkBytes
// and far under what holding every probe took, and still keeps the file
// that holds a value and prunes files that hold none; a larger IN is not
// checked against the index at all and keeps every file.
func TestLargeINWorksInBoundedMemory(t *testing.T) {
	const files = 3000
	cat := servetest.AddFilesTable(t, files)
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	in := func(n int) iceberg.BooleanExpression {
		values := []int64{2*7 + 2} // in file 7 only
		for v := int64(1); len(values) < n; v += 2 {
			values = append(values, v) // odd: in no file
		}
		return iceberg.IsIn(iceberg.Reference("id"), values...)
	}
	res, err := lookup.Plan(context.Background(), tbl, in(lookup.MaxTestValues), lookup.Options{CaseSensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := iceberg.BindExpr(tbl.Schema(), in(lookup.MaxTestValues), true)
	if err != nil {
		t.Fatal(err)
	}
	reserved := lookup.WorkBytes(files, []iceberg.BoundPredicate{bound.(iceberg.BoundPredicate)})
	everyProbe := int64(files) * lookup.MaxTestValues * 64
	t.Logf("an IN of %d values over %d files: %d candidates, scratch %d bytes, reserved %d, every probe at once %d",
		lookup.MaxTestValues, files, len(res.Candidates), res.ScratchBytes, reserved, everyProbe)
	if res.ScratchBytes == 0 || res.ScratchBytes > reserved || res.ScratchBytes > everyProbe/8 {
		t.Errorf("scratch %d bytes: want within the %d reserved and under an eighth of every probe at once (%d)", res.ScratchBytes, reserved, everyProbe)
	}
	if !slices.ContainsFunc(res.Candidates, func(task table.FileScanTask) bool {
		return strings.HasSuffix(task.File.FilePath(), fmt.Sprintf("f%07d.parquet", 7))
	}) {
		t.Error("the file holding a value of the IN was pruned")
	}
	if len(res.Candidates) == files {
		t.Error("no file was pruned: the index was not consulted")
	}

	res, err = lookup.Plan(context.Background(), tbl, in(lookup.MaxTestValues+1), lookup.Options{CaseSensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != files || res.ScratchBytes != 0 {
		t.Errorf("an IN of %d values: %d of %d files kept, scratch %d; want every file kept without checking", lookup.MaxTestValues+1, len(res.Candidates), files, res.ScratchBytes)
	}
}
