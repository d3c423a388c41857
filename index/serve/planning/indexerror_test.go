package planning

import (
	"context"
	"net/url"
	"os"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// TestPlanWithoutIndexIsNotCached: a plan made while the index could not
// be read keeps every file and says why, and is not kept: once the index
// can be read again, the same request is pruned (before, the unpruned plan
// was answered from the cache, to every caller, until the table changed).
func TestPlanWithoutIndexIsNotCached(t *testing.T) {
	const files = 6
	cat := servetest.AddFilesTable(t, files)
	ident := table.Identifier{"db", "events"}
	p := NewPlanner(func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &Loaded{Table: tbl}, err
	}, PlannerOptions{MemoryBudget: 64 << 20})
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for sf := range tbl.Metadata().Statistics() {
		u, err := url.Parse(sf.StatisticsPath)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, u.Path)
	}
	if len(paths) == 0 {
		t.Fatal("the table has no index")
	}
	for _, path := range paths {
		if err := os.Rename(path, path+".away"); err != nil {
			t.Fatal(err)
		}
	}
	req := rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":4}`)} // in file 1 only
	for _, filter := range [][]byte{req.Filter, []byte(`{"type":"in","term":"id","values":[4,5]}`)} {
		res, err := p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: filter})
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesPlanned != files || len(res.IndexErrors) == 0 {
			t.Fatalf("%s with the index gone: %d of %d files, index errors %q; want all, with errors", filter, res.FilesPlanned, files, res.IndexErrors)
		}
	}
	for _, path := range paths {
		if err := os.Rename(path+".away", path); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Plan(context.Background(), ident, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached || res.FilesPlanned != 1 || len(res.IndexErrors) != 0 {
		t.Fatalf("with the index back: %d files (cached %v, errors %q), want the one holding 4", res.FilesPlanned, res.Cached, res.IndexErrors)
	}
}
