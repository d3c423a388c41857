package planning

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// TestKeptTablesChargedBytes: the table objects kept per metadata location
// are charged an estimate of their memory from their metadata's length in
// the tables' part of the budget, shown in Stats (issue 33): a table whose
// metadata is small is kept, one whose metadata outgrows the part is not.
// Before, 64 table objects were kept whatever their metadata held, each
// counted as one.
func TestKeptTablesChargedBytes(t *testing.T) {
	const budget = 32 << 20 // the tables' part: 1 MiB
	cat := servetest.AddFilesTable(t, 3)
	ident := table.Identifier{"db", "events"}
	ctx := context.Background()
	p := NewPlanner(func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &Loaded{Table: tbl}, err
	}, PlannerOptions{MemoryBudget: budget})
	req := rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":4}`)}
	plan := func() (location string, metadataBytes int) {
		t.Helper()
		res, err := p.Plan(ctx, ident, req)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(tbl.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		return res.MetadataLocation, len(raw)
	}
	tables := func() (used, part int64) {
		c, ok := p.Stats().Caches["tables"]
		if !ok {
			t.Fatalf("Stats().Caches has no tables: %v", p.Stats().Caches)
		}
		return c.Bytes, c.Budget
	}

	small, n := plan()
	if _, ok := p.KeptTable(small); !ok {
		t.Fatalf("the table of %d bytes of metadata at %s was not kept", n, small)
	}
	if used, part := tables(); used < int64(n) || used > part || part != budget/32 {
		t.Fatalf("tables hold %d of %d bytes with one table of %d bytes of metadata kept, want at least its metadata's length within a 32nd of %d", used, part, n, budget)
	}

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(map[string]string{"comment": strings.Repeat("x", 512<<10)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	large, n := plan()
	if large == small {
		t.Fatal("the commit kept the metadata location")
	}
	if _, ok := p.KeptTable(large); ok {
		t.Fatalf("the table of %d bytes of metadata was kept in a part of %d bytes", n, budget/32)
	}
	if used, part := tables(); used > part {
		t.Fatalf("tables hold %d bytes, over their part of %d", used, part)
	}
}
