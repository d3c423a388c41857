package planning

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"
)

// memIO is storage in memory for manifests made by tests: name to bytes.
type memIO map[string][]byte

func (m memIO) Open(name string) (icebergio.File, error) {
	b, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return newMemFile(name, b), nil
}

func (m memIO) Remove(name string) error {
	delete(m, name)
	return nil
}

// eventsSchema is the benchmark's table: two indexed columns (id, email)
// and a few others with statistics, as Spark writes them.
var eventsSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 6, Name: "country", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 7, Name: "clicks", Type: iceberg.PrimitiveTypes.Int32},
)

// eventsDaySpec partitions eventsSchema by day(ts).
var eventsDaySpec = iceberg.NewPartitionSpecID(1,
	iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}})

func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// eventsEntries are n added entries of eventsSchema's data files, named
// as Spark names them (a UUID each), with statistics of every column; a
// partition of spec's day(ts) when partitioned, over 100 days.
func eventsEntries(n int, partitioned bool, snapshotID int64) []iceberg.ManifestEntry {
	spec := *iceberg.UnpartitionedSpec
	if partitioned {
		spec = eventsDaySpec
	}
	day0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := make([]iceberg.ManifestEntry, n)
	for i := range entries {
		u := uuid.NewSHA1(uuid.NameSpaceOID, binary.AppendVarint(nil, int64(i)))
		day := i % 100
		dir := "s3://warehouse/db/events/data/"
		var part map[int]any
		if partitioned {
			dir += "ts_day=" + day0.AddDate(0, 0, day).Format(time.DateOnly) + "/"
			part = map[int]any{1000: iceberg.Date(int32(day0.Unix()/86400) + int32(day))}
		}
		path := fmt.Sprintf("%s%05d-%d-%s-0-%05d.parquet", dir, i%200, 17+i%8, u, i)
		ts := day0.AddDate(0, 0, day).UnixMicro()
		lo, hi := int64(i)*1000, int64(i)*1000+999
		df, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, path, iceberg.ParquetFile, part, nil, nil,
			1000, 64<<20+int64(i))
		if err != nil {
			panic(err)
		}
		df.ColumnSizes(map[int]int64{1: 8000, 2: 30000, 3: 8000, 4: 8000, 5: 12000, 6: 2000, 7: 4000}).
			ValueCounts(map[int]int64{1: 1000, 2: 1000, 3: 1000, 4: 1000, 5: 1000, 6: 1000, 7: 1000}).
			NullValueCounts(map[int]int64{1: 0, 2: 3, 3: 0, 4: 10, 5: 0, 6: 0, 7: 0}).
			NaNValueCounts(map[int]int64{4: 0}).
			LowerBoundValues(map[int][]byte{1: le64(lo), 2: fmt.Appendf(nil, "a%07d@example.com", i), 3: le64(ts),
				4: binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.5)), 5: []byte("Aaron"), 6: []byte("AD"), 7: le32(0)}).
			UpperBoundValues(map[int][]byte{1: le64(hi), 2: fmt.Appendf(nil, "z%07d@example.com", i), 3: le64(ts + 86399999999),
				4: binary.LittleEndian.AppendUint64(nil, math.Float64bits(9999.5)), 5: []byte("Zoe"), 6: []byte("ZW"), 7: le32(500)}).
			SplitOffsets([]int64{4}).SortOrderID(0)
		snap := snapshotID
		entries[i] = iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snap, nil, nil, df.Build())
	}
	return entries
}

// writeManifest writes entries as a manifest of format version at name in
// fsys, with iceberg-go's writer; firstRowID is the v3 manifest's, from
// its manifest list.
func writeManifest(t testing.TB, fsys memIO, name string, version int, spec iceberg.PartitionSpec, schema *iceberg.Schema,
	snapshotID int64, entries []iceberg.ManifestEntry, firstRowID int64) iceberg.ManifestFile {
	t.Helper()
	var buf bytes.Buffer
	var mf iceberg.ManifestFile
	var err error
	if version == 3 {
		mf, _, err = iceberg.WriteManifestV3(name, &buf, firstRowID, spec, schema, snapshotID, entries)
	} else {
		mf, err = iceberg.WriteManifest(name, &buf, version, spec, schema, snapshotID, entries)
	}
	if err != nil {
		t.Fatalf("write manifest %s: %v", name, err)
	}
	fsys[name] = buf.Bytes()
	return mf
}

// BenchmarkManifestSet makes the set of one manifest of 100,000 Spark-like
// entries, with the statistics of two columns (id and email), both ways:
// with iceberg-go's decoding and with icebloom's.
func BenchmarkManifestSet(b *testing.B) {
	ways := []struct {
		name string
		set  func(context.Context, icebergio.IO, iceberg.ManifestFile, *iceberg.Schema, []int) (*fileSet, error)
	}{{"iceberg-go", manifestSetIceberg}, {"icebloom", decodeManifestSet}}
	for _, partitioned := range []bool{false, true} {
		fsys := memIO{}
		spec := *iceberg.UnpartitionedSpec
		if partitioned {
			spec = eventsDaySpec
		}
		m := writeManifest(b, fsys, "s3://warehouse/db/events/metadata/m0.avro", 2, spec, eventsSchema, 1, eventsEntries(100_000, partitioned, 1), 0)
		for _, way := range ways {
			b.Run(fmt.Sprintf("partitioned=%t/%s", partitioned, way.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					set, err := way.set(context.Background(), fsys, m, eventsSchema, []int{1, 2})
					if err != nil {
						b.Fatal(err)
					}
					if set.len() != 100_000 {
						b.Fatalf("%d files", set.len())
					}
				}
			})
		}
	}
}
