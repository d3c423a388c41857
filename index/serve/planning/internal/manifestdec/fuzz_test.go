package manifestdec

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

var fuzzSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 4, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 5, Name: "dec", Type: iceberg.DecimalTypeOf(10, 2)},
	iceberg.NestedField{ID: 6, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
)

// seedManifest is a small manifest of version, partitioned by several
// types, made by iceberg-go's writer.
func seedManifest(t testing.TB, version int) []byte {
	spec := iceberg.NewPartitionSpecID(1,
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "s", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "d", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1002, Name: "u", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1003, Name: "dec", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{6}, FieldID: 1004, Name: "ts", Transform: iceberg.HourTransform{}},
	)
	var entries []iceberg.ManifestEntry
	for i := range 5 {
		part := map[int]any{1000: fmt.Sprint("p", i%2), 1001: iceberg.Date(19000 + i), 1002: uuid.New(),
			1003: iceberg.Decimal{Scale: 2}, 1004: int32(i)}
		if i == 3 {
			part[1000] = nil
		}
		df, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("s3://b/t/data/%d.parquet", i), iceberg.ParquetFile,
			part, nil, nil, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		df.ValueCounts(map[int]int64{1: 10, 2: 10}).NullValueCounts(map[int]int64{1: 0, 2: 1}).
			LowerBoundValues(map[int][]byte{1: {1, 0, 0, 0, 0, 0, 0, 0}, 2: []byte("a")}).
			UpperBoundValues(map[int][]byte{1: {9, 0, 0, 0, 0, 0, 0, 0}, 2: []byte("z")}).
			SplitOffsets([]int64{4}).SortOrderID(0).KeyMetadata([]byte{1})
		snap := int64(1)
		status := iceberg.EntryStatusADDED
		var seq *int64
		if version > 1 && i == 4 {
			status, seq = iceberg.EntryStatusDELETED, &snap
		}
		entries = append(entries, iceberg.NewManifestEntry(status, &snap, seq, seq, df.Build()))
	}
	var buf bytes.Buffer
	var err error
	if version == 3 {
		_, _, err = iceberg.WriteManifestV3("m", &buf, 0, spec, fuzzSchema, 1, entries)
	} else {
		_, err = iceberg.WriteManifest("m", &buf, version, spec, fuzzSchema, 1, entries)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeAll opens data as a manifest of a v3 list and decodes every block.
func decodeAll(data []byte) (entries int, err error) {
	m := iceberg.NewManifestFile(3, "m", int64(len(data)), 1, 1).Build()
	md, err := Open(data, m, []int{1, 2, 6})
	if err != nil {
		return 0, err
	}
	dec := md.NewDecoder()
	var blk Block
	for i := range md.Blocks() {
		if err := dec.Decode(i, &blk); err != nil {
			return entries, err
		}
		entries += len(blk.Entries)
		if len(blk.Stats) != 3*len(blk.Entries) {
			return entries, fmt.Errorf("%d statistics of %d entries", len(blk.Stats), len(blk.Entries))
		}
	}
	return entries, nil
}

// TestDecodeSeeds checks that the fuzz seeds decode: live entries only.
func TestDecodeSeeds(t *testing.T) {
	for version := 1; version <= 3; version++ {
		n, err := decodeAll(seedManifest(t, version))
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		want := 4
		if version == 1 {
			want = 5
		}
		if n != want {
			t.Fatalf("v%d: %d live entries, want %d", version, n, want)
		}
	}
}

// TestDecodeTruncated checks that every prefix of a manifest is an error,
// not a panic nor a manifest of fewer entries, but those that end where a
// block ends: an object container file has no trailer, so those are
// files of fewer blocks (iceberg-go reads them so too).
func TestDecodeTruncated(t *testing.T) {
	data := seedManifest(t, 2)
	c, err := parseContainer(data)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int]bool{c.header: true}
	for _, b := range c.blocks {
		ends[b.end] = true
	}
	for n := range len(data) {
		_, err := decodeAll(data[:n])
		if err == nil && !ends[n] {
			t.Fatalf("a prefix of %d bytes of %d decoded", n, len(data))
		}
	}
}

// FuzzDecode decodes any bytes as a manifest: an error or entries, never a
// panic or a hang.
func FuzzDecode(f *testing.F) {
	for version := 1; version <= 3; version++ {
		f.Add(seedManifest(f, version))
	}
	data := seedManifest(f, 2)
	f.Add(bytes.Replace(data, []byte(`"deflate"`), []byte(`"null"`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := decodeAll(data)
		if err != nil && errors.Is(err, ErrUnsupported) && !strings.Contains(err.Error(), ErrUnsupported.Error()) {
			t.Fatalf("error %q", err)
		}
	})
}
