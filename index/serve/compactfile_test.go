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

// getters are every answer of a DataFile.
func getters(f iceberg.DataFile) []any {
	return []any{f.ContentType(), f.FilePath(), f.FileFormat(), f.Partition(), f.Count(), f.FileSizeBytes(),
		f.ColumnSizes(), f.ValueCounts(), f.NullValueCounts(), f.NaNValueCounts(), f.DistinctValueCounts(),
		f.LowerBoundValues(), f.UpperBoundValues(), f.KeyMetadata(), f.SplitOffsets(), f.EqualityFieldIDs(),
		f.SortOrderID(), f.SpecID(), f.FirstRowID(), f.ReferencedDataFile(), f.ContentOffset(), f.ContentSizeInBytes()}
}

// TestCompactFileAnswersAsIcebergGo: the fast path's compact copy of a data
// or delete file answers every DataFile method as iceberg-go's decoded
// entry does, for data files of a partitioned table, position and equality
// deletes (format 2) and deletion vectors (format 3), and the partition
// record the partition check reads is the same; changing a map it returned
// changes nothing it holds.
func TestCompactFileAnswersAsIcebergGo(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		t.Run("format-"+version, func(t *testing.T) {
			fx := newFixture(t, newSQLCatalog(t), servetest.Seed(t), version)
			tbl := fx.load()
			tasks, err := tbl.Scan().PlanFiles(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[iceberg.ManifestEntryContent]int{}
			var withBounds, withDV int
			for _, task := range tasks {
				files := append([]iceberg.DataFile{task.File}, task.DeleteFiles...)
				files = append(append(files, task.EqualityDeleteFiles...), task.DeletionVectorFiles...)
				for _, f := range files {
					c := planning.Compact(f)
					if want, got := getters(f), getters(c); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: compact answers\n%#v\nwant\n%#v", f.FilePath(), got, want)
					}
					typ := tbl.Metadata().PartitionSpecByID(int(f.SpecID())).PartitionType(tbl.Schema())
					if got, want := table.GetPartitionRecord(c, typ), table.GetPartitionRecord(f, typ); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: partition record %v, want %v", f.FilePath(), got, want)
					}
					kinds[f.ContentType()]++
					if len(f.LowerBoundValues()) > 0 {
						withBounds++
						for id := range c.LowerBoundValues() {
							c.LowerBoundValues()[id][0] ^= 0xff
							clear(c.ValueCounts())
						}
						if want, got := getters(f), getters(c); !reflect.DeepEqual(got, want) {
							t.Fatalf("%s: changing what compact returned changed it", f.FilePath())
						}
					}
					if f.ContentOffset() != nil {
						withDV++
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
