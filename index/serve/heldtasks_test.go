package serve_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// getters are every answer of a DataFile but its column statistics.
func getters(f iceberg.DataFile) []any {
	return []any{f.ContentType(), f.FilePath(), f.FileFormat(), f.Partition(), f.Count(), f.FileSizeBytes(),
		f.KeyMetadata(), f.SplitOffsets(), f.EqualityFieldIDs(),
		f.SortOrderID(), f.SpecID(), f.FirstRowID(), f.ReferencedDataFile(), f.ContentOffset(), f.ContentSizeInBytes()}
}

// statistics are a DataFile's column statistics.
func statistics(f iceberg.DataFile) []any {
	return []any{f.ColumnSizes(), f.ValueCounts(), f.NullValueCounts(), f.NaNValueCounts(), f.DistinctValueCounts(),
		f.LowerBoundValues(), f.UpperBoundValues()}
}

// TestHeldTasksAnswerAsIcebergGo: the tasks a base plan gives back
// (planning.HeldTasks) answer every DataFile method as iceberg-go's decoded
// entries do, for data files of a partitioned table (but their column
// statistics, which are absent), position and equality deletes (format 2)
// and deletion vectors (format 3), with the same delete files; the
// partition record the partition check reads is the same; changing a map
// a file returned changes nothing it holds.
func TestHeldTasksAnswerAsIcebergGo(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		t.Run("format-"+version, func(t *testing.T) {
			fx := newFixture(t, newSQLCatalog(t), servetest.Seed(t), version)
			tbl := fx.load()
			tasks, err := tbl.Scan().PlanFiles(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			held, err := planning.HeldTasks(tasks, tbl.Schema())
			if err != nil {
				t.Fatal(err)
			}
			if len(held) != len(tasks) {
				t.Fatalf("%d tasks held of %d", len(held), len(tasks))
			}
			kinds := map[iceberg.ManifestEntryContent]int{}
			var withBounds, withDV int
			same := func(f, c iceberg.DataFile, stats bool) {
				t.Helper()
				if want, got := getters(f), getters(c); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: held answers\n%#v\nwant\n%#v", f.FilePath(), got, want)
				}
				want := statistics(f)
				if !stats {
					want = statistics(planning.NoStatistics)
				}
				if got := statistics(c); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: held statistics\n%#v\nwant\n%#v", f.FilePath(), got, want)
				}
				typ := tbl.Metadata().PartitionSpecByID(int(f.SpecID())).PartitionType(tbl.Schema())
				if got, want := table.GetPartitionRecord(c, typ), table.GetPartitionRecord(f, typ); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: partition record %v, want %v", f.FilePath(), got, want)
				}
				kinds[f.ContentType()]++
				clear(c.Partition())
				for id := range c.LowerBoundValues() {
					withBounds++
					c.LowerBoundValues()[id][0] ^= 0xff
					clear(c.ValueCounts())
				}
				if !reflect.DeepEqual(getters(c), getters(f)) || stats && !reflect.DeepEqual(statistics(c), statistics(f)) {
					t.Fatalf("%s: changing what the held file returned changed it", f.FilePath())
				}
				if f.ContentOffset() != nil {
					withDV++
				}
			}
			for i, task := range tasks {
				h := held[i]
				same(task.File, h.File, false)
				if h.Start != task.Start || h.Length != task.Length {
					t.Fatalf("%s: held task of bytes %d+%d, want %d+%d", task.File.FilePath(), h.Start, h.Length, task.Start, task.Length)
				}
				for g, group := range [][2][]iceberg.DataFile{{task.DeleteFiles, h.DeleteFiles}, {task.EqualityDeleteFiles, h.EqualityDeleteFiles},
					{task.DeletionVectorFiles, h.DeletionVectorFiles}} {
					if len(group[0]) != len(group[1]) {
						t.Fatalf("%s: %d delete files of kind %d held, want %d", task.File.FilePath(), len(group[1]), g, len(group[0]))
					}
					for j := range group[0] {
						same(group[0][j], group[1][j], true)
					}
				}
			}
			if kinds[iceberg.EntryContentData] == 0 || kinds[iceberg.EntryContentPosDeletes] == 0 || withBounds == 0 ||
				version == "2" && kinds[iceberg.EntryContentEqDeletes] == 0 || version == "3" && withDV == 0 {
				t.Fatalf("the table's files are not of every kind: %v, %d with bounds, %d deletion vectors", kinds, withBounds, withDV)
			}
		})
	}
}
