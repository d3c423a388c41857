package indexer

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/internal/testfixture"
)

// TestRunRefusesAStaleSegment: a run whose segment file was finished longer
// than MaxUncommittedAge before its commit refuses to commit it (gc, whose
// grace is at least twice that, may have deleted it), removes it, and
// leaves table metadata unchanged.
func TestRunRefusesAStaleSegment(t *testing.T) {
	cat, tbl := testfixture.DictionaryTable(t)
	base := time.Now()
	calls := 0
	clock = func() time.Time { // each reading 40 minutes after the last
		calls++
		return base.Add(time.Duration(calls) * 40 * time.Minute)
	}
	defer func() { clock = time.Now }()
	_, err := Build(context.Background(), cat, tbl.Identifier(), Options{Columns: []string{"id"}})
	if !errors.Is(err, errStale) || !strings.Contains(err.Error(), "was written 40m0s ago") {
		t.Fatalf("build with a stale segment: %v", err)
	}
	after, _ := cat.LoadTable(context.Background(), tbl.Identifier())
	if after.MetadataLocation() != tbl.MetadataLocation() {
		t.Fatal("the refused commit changed table metadata")
	}
	dir := strings.TrimPrefix(tbl.Location(), "file://") + "/metadata"
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".puffin") {
			t.Errorf("the refused segment %s was left behind", e.Name())
		}
	}
}

// vanishingCatalog deletes the index files of the current snapshot right
// after a commit lands, as a forced gc racing the run would.
type vanishingCatalog struct {
	*catalogtest.Catalog
	t     *testing.T
	fired bool
}

func (c *vanishingCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	meta, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, ups)
	if err == nil && !c.fired {
		c.fired = true
		for sf := range meta.Statistics() {
			if index.HoldsEntries(sf) {
				os.Remove(strings.TrimPrefix(sf.StatisticsPath, "file://"))
			}
		}
	}
	return meta, loc, err
}

func (c *vanishingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

// TestRunRepairsAVanishedCommit: a run that finds, right after its commit,
// that the file it committed is gone removes the reference at once and
// fails saying so; the next sync indexes the files again.
func TestRunRepairsAVanishedCommit(t *testing.T) {
	inner, tbl := testfixture.DictionaryTable(t)
	cat := &vanishingCatalog{Catalog: inner, t: t}
	_, err := Build(context.Background(), cat, tbl.Identifier(), Options{Columns: []string{"id"}})
	if err == nil || !strings.Contains(err.Error(), "vanished after the commit") {
		t.Fatalf("build whose committed file vanished: %v", err)
	}
	after, _ := inner.LoadTable(context.Background(), tbl.Identifier())
	for sf := range after.Metadata().Statistics() {
		t.Fatalf("table metadata still lists %s", sf.StatisticsPath)
	}
	sum, err := Sync(context.Background(), inner, tbl.Identifier(), Options{Columns: []string{"id"}})
	if err != nil || sum.FilesIndexed == 0 || sum.FilesCovered != 0 {
		t.Fatalf("sync after the repair: %+v, %v", sum, err)
	}
}
