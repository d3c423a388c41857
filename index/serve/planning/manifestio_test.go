package planning

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// countingIO counts the manifest files opened from storage.
type countingIO struct {
	icebergio.IO
	avro *atomic.Int64
}

func (c countingIO) Open(name string) (icebergio.File, error) {
	if strings.HasSuffix(name, ".avro") {
		c.avro.Add(1)
	}
	return c.IO.Open(name)
}

// TestWarmPlansReadNoManifest: once a table's metadata location was
// planned, plans of other filters read no manifest from storage and plan
// the same files as a planner without caches.
func TestWarmPlansReadNoManifest(t *testing.T) {
	_, load, avro := idTable(t, 5)
	ident := table.Identifier{"db", "events"}
	warm := NewPlanner(load, PlannerOptions{MemoryBudget: 64 << 20})
	cold := NewPlanner(load, PlannerOptions{MemoryBudget: -1})
	plan := func(p *Planner, filter string) []string {
		t.Helper()
		res, err := p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: []byte(filter)})
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, page := range res.Pages {
			for _, task := range page.FileScanTasks {
				files = append(files, task.DataFile.FilePath)
			}
		}
		return files
	}
	plan(warm, `{"type":"eq","term":"id","value":3}`)
	first := avro.Load()
	if first == 0 {
		t.Fatal("the first plan read no manifest")
	}
	for _, f := range []string{`{"type":"eq","term":"id","value":6}`, `{"type":"in","term":"id","values":[1,8]}`, `{"type":"lt","term":"id","value":4}`} {
		got := plan(warm, f)
		if n := avro.Load() - first; n != 0 {
			t.Fatalf("a warm plan of %s read %d manifest files", f, n)
		}
		want := plan(cold, f)
		first = avro.Load()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: the warm plan has files %v, a cold one %v", f, got, want)
		}
	}
}
