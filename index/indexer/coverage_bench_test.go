package indexer

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// statsOnly is table metadata that lists statistics files; index.Load
// reads nothing else of it.
type statsOnly struct {
	table.Metadata
	stats []table.StatisticsFile
}

func (m statsOnly) Statistics() iter.Seq[table.StatisticsFile] { return slices.Values(m.stats) }

// BenchmarkSyncCoverage is the part of a sync of one new file that decides
// which live files the index covers, on an index of 300,000 files × 2
// columns in one segment: "match" is the sync's (job.coverage: one pass
// over the segment's list of files, TableIndex.Match), "lookup" what it did
// before (TableIndex.Lookup per file and column, which first builds a map
// of every entry of the index). Each iteration loads the index afresh, as
// every sync does; "load" is that load alone.
//
//	go test -run XXX -bench BenchmarkSyncCoverage ./index/indexer
func BenchmarkSyncCoverage(b *testing.B) {
	const files = 300_000
	fs := icebergio.LocalFS{}
	path := filepath.Join(b.TempDir(), "segment.puffin")
	sw, err := indexfile.Create(fs, path, segment.WriterOptions{SnapshotID: 1, SequenceNumber: 1}, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	bits := make([]byte, sbbf.BlockBytes)
	bits[0] = 1
	live := make([]filescan.File, files+1) // and one new file, not covered
	for i := range live {
		live[i] = filescan.File{Path: fmt.Sprintf("s3://bucket/table/data/%08d.parquet", i), Size: int64(1000 + i)}
		if i == files {
			break
		}
		for field := 1; field <= 2; field++ {
			err := sw.Add(segment.FilterInput{File: segment.File{Path: live[i].Path, Size: live[i].Size}, FieldID: field,
				ValueType: iceberg.PrimitiveTypes.Int64, FPP: 0.01, NDV: 1, Bits: bits})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	seg, err := sw.Finish()
	if err != nil {
		b.Fatal(err)
	}
	meta := statsOnly{stats: []table.StatisticsFile{seg.StatisticsFile(&table.Snapshot{SnapshotID: 1, SequenceNumber: 1}, nil)}}
	load := func() *index.TableIndex {
		ix, errs := index.Load(context.Background(), fs, meta, nil)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		return ix
	}
	cols := []Column{{Column: filescan.Column{Field: iceberg.NestedField{ID: 1}}}, {Column: filescan.Column{Field: iceberg.NestedField{ID: 2}}}}
	count := func(b *testing.B, uncovered int) {
		if uncovered != 1 {
			b.Fatalf("%d files uncovered, want the new one", uncovered)
		}
	}
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			load()
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			ix := load()
			uncovered := 0
			for _, f := range live {
				for _, c := range cols {
					if _, ok := ix.Lookup(f.Path, f.Size, c.Field.ID); !ok {
						uncovered++
						break
					}
				}
			}
			count(b, uncovered)
		}
	})
	b.Run("match", func(b *testing.B) {
		for b.Loop() {
			j := &job{ix: load(), cols: cols, sum: &Summary{PerColumn: make([]ColumnSummary, len(cols))}}
			cov := j.coverage(live)
			uncovered := 0
			for i := range live {
				if m := j.missing(cov, i); m == nil || len(m) > 0 { // nil: none covered

					uncovered++
				}
			}
			count(b, uncovered)
		}
	})
}
