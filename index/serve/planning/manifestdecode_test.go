package planning

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/serve/internal/servetest"
)

// allTypes has a column of every primitive type iceberg-go writes.
var allTypes = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 3, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 4, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 5, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 6, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 7, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 8, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 9, Name: "tm", Type: iceberg.PrimitiveTypes.Time},
	iceberg.NestedField{ID: 10, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 11, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 12, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 13, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 14, Name: "fx", Type: iceberg.FixedTypeOf(4)},
	iceberg.NestedField{ID: 15, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 16, Name: "dec38", Type: iceberg.DecimalTypeOf(38, 10)},
	iceberg.NestedField{ID: 17, Name: "tsns", Type: iceberg.PrimitiveTypes.TimestampNs},
	iceberg.NestedField{ID: 18, Name: "tstzns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
)

// allTypeIDs are the ids of allTypes' columns.
var allTypeIDs = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}

// identitySpec partitions allTypes by each column but id.
func identitySpec() iceberg.PartitionSpec {
	var fields []iceberg.PartitionField
	for id := 2; id <= 18; id++ {
		if id == 16 { // iceberg-go's writer names every decimal "fixed": one a spec
			continue
		}
		f, _ := allTypes.FindFieldByID(id)
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{id}, FieldID: 1000 + id, Name: f.Name + "_p", Transform: iceberg.IdentityTransform{}})
	}
	return iceberg.NewPartitionSpecID(3, fields...)
}

// transformSpec partitions allTypes by every other transform.
func transformSpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpecID(4,
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: iceberg.BucketTransform{NumBuckets: 16}},
		iceberg.PartitionField{SourceIDs: []int{12}, FieldID: 1001, Name: "s_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}},
		iceberg.PartitionField{SourceIDs: []int{12}, FieldID: 1002, Name: "s_trunc", Transform: iceberg.TruncateTransform{Width: 2}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1003, Name: "l_trunc", Transform: iceberg.TruncateTransform{Width: 10}},
		iceberg.PartitionField{SourceIDs: []int{10}, FieldID: 1004, Name: "ts_year", Transform: iceberg.YearTransform{}},
		iceberg.PartitionField{SourceIDs: []int{11}, FieldID: 1005, Name: "tstz_month", Transform: iceberg.MonthTransform{}},
		iceberg.PartitionField{SourceIDs: []int{8}, FieldID: 1006, Name: "dt_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{10}, FieldID: 1007, Name: "ts_hour", Transform: iceberg.HourTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1008, Name: "i_void", Transform: iceberg.VoidTransform{}},
		iceberg.PartitionField{SourceIDs: []int{11}, FieldID: 1009, Name: "tstz_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{13}, FieldID: 1010, Name: "u_bucket", Transform: iceberg.BucketTransform{NumBuckets: 8}},
		iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1011, Name: "dec_trunc", Transform: iceberg.TruncateTransform{Width: 50}},
		iceberg.PartitionField{SourceIDs: []int{15}, FieldID: 1012, Name: "bin_trunc", Transform: iceberg.TruncateTransform{Width: 2}},
		iceberg.PartitionField{SourceIDs: []int{17}, FieldID: 1013, Name: "tsns_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{18}, FieldID: 1014, Name: "tstzns_hour", Transform: iceberg.HourTransform{}},
	)
}

// typeValue is a value of allTypes' column id drawn from a few, NaN,
// -0, extremes and the empty string among them; nil (NULL) one time in
// six.
func typeValue(rng *rand.Rand, id int) any {
	if rng.IntN(6) == 0 {
		return nil
	}
	k := rng.IntN(5)
	switch id {
	case 1, 4:
		return []int64{0, -1, 1 << 40, math.MinInt64, math.MaxInt64}[k]
	case 2:
		return k%2 == 0
	case 3:
		return []int32{0, -1, 7, math.MinInt32, math.MaxInt32}[k]
	case 5:
		return []float32{2, float32(math.Copysign(0, -1)), float32(math.NaN()), 1.5, float32(math.Inf(-1))}[k]
	case 6:
		return []float64{2, math.Copysign(0, -1), math.NaN(), -1.25, math.Inf(1)}[k]
	case 7:
		return iceberg.Decimal{Val: decimal128.FromI64([]int64{15025, -1, 0, 999999950, -999999950}[k]), Scale: 2}
	case 16:
		v, _ := decimal128.FromString([]string{"12345678901234567890.1234567890", "-1", "0", "99999999999999999999999999.9999999999", "-3.5"}[k], 38, 10)
		return iceberg.Decimal{Val: v, Scale: 10}
	case 8:
		return iceberg.Date([]int32{19001, 0, -1, -719162, 2932896}[k])
	case 9:
		return iceberg.Time([]int64{0, 3_600_000_000, 86_399_999_999, 1, 12}[k])
	case 10, 11:
		return iceberg.Timestamp([]int64{0, -1, 1_641_724_200_000_000, -62135596800000000, 253402300799999999}[k])
	case 12:
		return []string{"abc", "", "é", "xyz", "a\x00b"}[k]
	case 13:
		return uuid.NewSHA1(uuid.NameSpaceURL, []byte{byte(k)})
	case 14:
		return []byte{byte(k), 0xF9, 0x23, 0}
	case 15:
		return [][]byte{{}, {0xF9}, {1, 2, 3}, {0}, {0xFF, 0xFF}}[k]
	case 17, 18:
		return iceberg.TimestampNano([]int64{0, -1, 1_641_724_200_000_000_123, math.MinInt64 + 1, math.MaxInt64}[k])
	}
	panic(id)
}

// partitionValue is spec field pf's value of a row of values by column id.
func partitionValue(t testing.TB, pf iceberg.PartitionField, values map[int]any) any {
	v := values[pf.SourceIDs[0]]
	if v == nil {
		return nil
	}
	f, _ := allTypes.FindFieldByID(pf.SourceIDs[0])
	lit, err := literalOf(f.Type, v)
	if err != nil {
		t.Fatal(err)
	}
	out := pf.Transform.Apply(iceberg.Optional[iceberg.Literal]{Val: lit, Valid: true})
	if !out.Valid {
		return nil
	}
	return out.Val.Any()
}

// literalOf is v (typeValue's value of a column of typ) as a literal.
func literalOf(typ iceberg.Type, v any) (iceberg.Literal, error) {
	switch v := v.(type) {
	case iceberg.Decimal:
		return iceberg.DecimalLiteral(v), nil
	case []byte:
		if _, ok := typ.(iceberg.FixedType); ok {
			return iceberg.FixedLiteral(v), nil
		}
		return iceberg.BinaryLiteral(v), nil
	case iceberg.Date:
		return iceberg.DateLiteral(v), nil
	case iceberg.Time:
		return iceberg.TimeLiteral(v), nil
	case iceberg.Timestamp:
		return iceberg.TimestampLiteral(v), nil
	case iceberg.TimestampNano:
		return iceberg.TimestampNsLiteral(v), nil
	case uuid.UUID:
		return iceberg.UUIDLiteral(v), nil
	case bool:
		return iceberg.NewLiteral(v), nil
	case int32:
		return iceberg.NewLiteral(v), nil
	case int64:
		return iceberg.NewLiteral(v), nil
	case float32:
		return iceberg.NewLiteral(v), nil
	case float64:
		return iceberg.NewLiteral(v), nil
	case string:
		return iceberg.NewLiteral(v), nil
	}
	return nil, fmt.Errorf("no literal of %T", v)
}

// boundBytes is v's single-value serialization, as a bound.
func boundBytes(t testing.TB, typ iceberg.Type, v any) []byte {
	lit, err := literalOf(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lit.MarshalBinary()
	if err != nil {
		t.Fatalf("%s %v: %v", typ, v, err)
	}
	return b
}

// typedEntries are n entries of data files of allTypes partitioned by
// spec: statuses drawn from added, existing and deleted (all added when
// v1, which iceberg-go writes so), statistics of some columns, some
// missing, some of the wrong width, nulls and NaNs counted.
func typedEntries(t testing.TB, rng *rand.Rand, n, version int, spec iceberg.PartitionSpec, snapshotID int64) []iceberg.ManifestEntry {
	var entries []iceberg.ManifestEntry
	for i := range n {
		values := map[int]any{}
		for id := 1; id <= 18; id++ {
			values[id] = typeValue(rng, id)
		}
		part := map[int]any{}
		for _, pf := range spec.Fields() {
			part[pf.FieldID] = partitionValue(t, pf, values)
		}
		df, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("file:///data/%d-%s.parquet", i, uuid.NewString()),
			[]iceberg.FileFormat{iceberg.ParquetFile, iceberg.OrcFile, iceberg.AvroFile}[rng.IntN(3)], part, nil, nil, int64(rng.IntN(1000)), int64(100+rng.IntN(1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(5) > 0 { // statistics, a few of each column missing
			counts, nulls, nans := map[int]int64{}, map[int]int64{}, map[int]int64{}
			lower, upper := map[int][]byte{}, map[int][]byte{}
			for _, id := range allTypeIDs {
				f, _ := allTypes.FindFieldByID(id)
				if rng.IntN(8) > 0 {
					counts[id] = int64(rng.IntN(3))
				}
				if rng.IntN(8) > 0 {
					nulls[id] = int64(rng.IntN(3))
				}
				if (id == 5 || id == 6) && rng.IntN(8) > 0 {
					nans[id] = int64(rng.IntN(3))
				}
				lo, hi := typeValue(rng, id), typeValue(rng, id)
				if lo != nil {
					lower[id] = boundBytes(t, f.Type, lo)
				}
				if hi != nil {
					upper[id] = boundBytes(t, f.Type, hi)
				}
				if rng.IntN(20) == 0 { // a bound of another width (a promoted column's)
					lower[id] = []byte{1, 2, 3, 4}
				}
			}
			df.ValueCounts(counts).NullValueCounts(nulls).NaNValueCounts(nans).LowerBoundValues(lower).UpperBoundValues(upper).
				ColumnSizes(map[int]int64{1: 10, 2: 20})
		}
		switch rng.IntN(4) {
		case 0:
			df.KeyMetadata([]byte{byte(i), 2, 3})
		case 1:
			df.KeyMetadata([]byte{})
		}
		switch rng.IntN(4) {
		case 0:
			df.SplitOffsets([]int64{4})
		case 1:
			df.SplitOffsets([]int64{4, int64(1000 + rng.IntN(3))})
		case 2:
			df.SplitOffsets([]int64{})
		}
		if k := rng.IntN(3); k > 0 {
			df.SortOrderID(k - 1)
		}
		if version == 3 && rng.IntN(3) == 0 {
			df.FirstRowID(int64(rng.IntN(1 << 20)))
		}
		status := iceberg.EntryStatusADDED
		if version > 1 {
			status = []iceberg.ManifestEntryStatus{iceberg.EntryStatusADDED, iceberg.EntryStatusEXISTING, iceberg.EntryStatusDELETED}[rng.IntN(3)]
		}
		snap := snapshotID
		var seq *int64
		if status != iceberg.EntryStatusADDED {
			s := int64(rng.IntN(5))
			seq = &s
		}
		entries = append(entries, iceberg.NewManifestEntry(status, &snap, seq, seq, df.Build()))
	}
	return entries
}

// setsBothWays makes m's set with icebloom's decoder, requiring that it
// read m, and with iceberg-go's, and fails t unless they are the same.
func setsBothWays(t *testing.T, fsys memIO, m iceberg.ManifestFile, schema *iceberg.Schema, fields []int) *fileSet {
	t.Helper()
	ours, err := decodeManifestSet(context.Background(), fsys, m, schema, fields)
	if err != nil {
		t.Fatalf("icebloom's decoder: %v", err)
	}
	theirs, err := manifestSetIceberg(context.Background(), fsys, m, schema, fields)
	if err != nil {
		t.Fatalf("iceberg-go's decoding: %v", err)
	}
	requireSameSet(t, ours, theirs)
	return ours
}

// requireSameSet fails t, naming the first column that differs, unless
// sets a and b are the same.
func requireSameSet(t *testing.T, a, b *fileSet) {
	t.Helper()
	if reflect.DeepEqual(a, b) {
		return
	}
	for _, c := range []struct {
		name string
		a, b any
	}{
		{"files", a.files, b.files}, {"records", a.records, b.records}, {"formats", a.formats, b.formats},
		{"parts", a.parts, b.parts}, {"extras", a.extras, b.extras}, {"formatNames", a.formatNames, b.formatNames},
		{"partValues", a.partValues, b.partValues}, {"partSpecs", a.partSpecs, b.partSpecs},
		{"extraValues", a.extraValues, b.extraValues}, {"firstRowIDs", a.firstRowIDs, b.firstRowIDs},
		{"deletes", a.deletes, b.deletes}, {"deleteRefs", a.deleteRefs, b.deleteRefs},
	} {
		if !reflect.DeepEqual(c.a, c.b) && (c.name != "partValues" || !samePartitions(a.partValues, b.partValues)) {
			t.Fatalf("column %s differs:\nours:    %.3000s\ntheirs:  %.3000s", c.name, fmt.Sprintf("%#v", c.a), fmt.Sprintf("%#v", c.b))
		}
	}
	if len(a.stats) != len(b.stats) {
		t.Fatalf("statistics of %d and %d columns", len(a.stats), len(b.stats))
	}
	for id, sa := range a.stats {
		sb := b.stats[id]
		if sb == nil {
			t.Fatalf("statistics of field %d: theirs are missing", id)
		}
		la, lb, ua, ub := sa.lower, sb.lower, sa.upper, sb.upper
		ca, cb := *sa, *sb
		ca.lower, ca.upper, cb.lower, cb.upper = nil, nil, nil, nil
		if !reflect.DeepEqual(ca, cb) {
			t.Fatalf("statistics of field %d differ:\nours:   %.3000v\ntheirs: %.3000v", id, ca, cb)
		}
		if !sameLiterals(la, lb) || !sameLiterals(ua, ub) {
			t.Fatalf("bounds of field %d differ:\nours:   %v %v\ntheirs: %v %v", id, la, ua, lb, ub)
		}
	}
}

// samePartitions reports whether a and b are the same partitions, values
// of the same types, a NaN the same as a NaN of the same bits.
func samePartitions(a, b []map[int]any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || (a[i] == nil) != (b[i] == nil) {
			return false
		}
		for id, x := range a[i] {
			y, ok := b[i][id]
			if !ok {
				return false
			}
			switch x := x.(type) {
			case float32:
				if y, ok := y.(float32); !ok || math.Float32bits(x) != math.Float32bits(y) {
					return false
				}
			case float64:
				if y, ok := y.(float64); !ok || math.Float64bits(x) != math.Float64bits(y) {
					return false
				}
			default:
				if !reflect.DeepEqual(x, y) {
					return false
				}
			}
		}
	}
	return true
}

// sameLiterals reports whether a and b hold the same literals, a NaN the
// same as a NaN of the same bits.
func sameLiterals(a, b []iceberg.Literal) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch x := a[i].(type) {
		case iceberg.Float32Literal:
			y, ok := b[i].(iceberg.Float32Literal)
			if !ok || math.Float32bits(float32(x)) != math.Float32bits(float32(y)) {
				return false
			}
		case iceberg.Float64Literal:
			y, ok := b[i].(iceberg.Float64Literal)
			if !ok || math.Float64bits(float64(x)) != math.Float64bits(float64(y)) {
				return false
			}
		default:
			if !reflect.DeepEqual(a[i], b[i]) {
				return false
			}
		}
	}
	return true
}

// TestManifestSetDecodersAgree makes sets of manifests of every format
// version, partitioned by every type and transform, both ways.
func TestManifestSetDecodersAgree(t *testing.T) {
	specs := map[string]iceberg.PartitionSpec{"unpartitioned": *iceberg.UnpartitionedSpec, "identity": identitySpec(), "transforms": transformSpec(),
		"decimal38": iceberg.NewPartitionSpecID(5, iceberg.PartitionField{SourceIDs: []int{16}, FieldID: 1000, Name: "dec38", Transform: iceberg.IdentityTransform{}})}
	for _, version := range []int{1, 2, 3} {
		for name, spec := range specs {
			t.Run(fmt.Sprintf("v%d/%s", version, name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(version), uint64(len(name))))
				fsys := memIO{}
				m := writeManifest(t, fsys, "mem://m.avro", version, spec, allTypes, 7, typedEntries(t, rng, 400, version, spec, 7), 1000)
				before := manifestFallbacks.Load()
				for _, fields := range [][]int{nil, {1}, {12, 1}, allTypeIDs} {
					set := setsBothWays(t, fsys, m, allTypes, fields)
					if set.len() == 0 || set.len() == 400 && version > 1 {
						t.Fatalf("%d live files of 400, want some deleted", set.len())
					}
					if (set.firstRowIDs != nil) != (version == 3) {
						t.Fatalf("v%d: first row ids %v", version, set.firstRowIDs != nil)
					}
					got, err := manifestSet(context.Background(), fsys, m, allTypes, fields)
					if err != nil {
						t.Fatal(err)
					}
					requireSameSet(t, got, set)
				}
				if n := manifestFallbacks.Load() - before; n != 0 {
					t.Fatalf("%d manifests decoded by iceberg-go, want none", n)
				}
			})
		}
	}
}

// TestManifestSetOfEvents makes the benchmark's manifests' sets both ways:
// Spark-like files of one partition spec, v1 to v3.
func TestManifestSetOfEvents(t *testing.T) {
	files := 3000
	if raceEnabled { // the decoders run in one goroutine: the race detector only slows them (18 s of CI)
		files = 500
	}
	for _, version := range []int{1, 2, 3} {
		for _, partitioned := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d/partitioned=%t", version, partitioned), func(t *testing.T) {
				fsys := memIO{}
				spec := *iceberg.UnpartitionedSpec
				if partitioned {
					spec = eventsDaySpec
				}
				m := writeManifest(t, fsys, "mem://events.avro", version, spec, eventsSchema, 1, eventsEntries(files, partitioned, 1), 42)
				setsBothWays(t, fsys, m, eventsSchema, []int{1, 2})
				setsBothWays(t, fsys, m, eventsSchema, []int{1, 2, 3, 4, 5, 6, 7, 99})
			})
		}
	}
}

// TestManifestSetErrorsName checks that a corrupt manifest is an error
// naming the manifest and the block, from either decoder, not a panic.
func TestManifestSetErrorsName(t *testing.T) {
	fsys := memIO{}
	m := writeManifest(t, fsys, "mem://c.avro", 2, eventsDaySpec, eventsSchema, 1, eventsEntries(50, true, 1), 0)
	good := fsys["mem://c.avro"]
	for name, corrupt := range map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)-20] },
		"sync":      func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"block content": func(b []byte) []byte { // a path's length made negative
			b = reencode(t, b, nil, 1000)
			i := bytes.Index(b, []byte("s3://warehouse"))
			b[i-2] = 0x7f
			return b
		},
		"entries": func(b []byte) []byte { // more entries than the block holds
			b = reencode(t, b, nil, 1000)
			i := bytes.Index(b, []byte("s3://warehouse")) // the first entry's path follows the block's count and size
			for j := i - 2; j > 0; j-- {
				if v, k := binary.Varint(b[j:]); k > 0 && v == 50 { // the block's count, zig-zag 100
					b[j] = 102 // 51
					break
				}
			}
			return b
		},
		"a later block": func(b []byte) []byte { // blocks decoded by several goroutines, the fourth corrupt
			b = reencode(t, b, nil, 5)
			i := 0
			for range 16 { // the 16th path is the first of the fourth block
				i += 1 + bytes.Index(b[i:], []byte("s3://warehouse"))
			}
			b[i-2] = 0x7f
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			fsys["mem://c.avro"] = corrupt(append([]byte(nil), good...))
			_, err := decodeManifestSet(context.Background(), fsys, m, eventsSchema, []int{1})
			if err == nil {
				t.Fatal("no error")
			}
			block := "block 0"
			if name == "a later block" {
				block = "block 3"
			}
			if !strings.Contains(err.Error(), "mem://c.avro") || !strings.Contains(err.Error(), block) {
				t.Fatalf("error %q does not name the manifest and block", err)
			}
			t.Log(err)
			if _, err := manifestSet(context.Background(), fsys, m, eventsSchema, []int{1}); err == nil {
				t.Fatal("manifestSet: no error")
			}
		})
	}
}

// TestPlanDecodesManifestsItself checks that a plan of a table made by
// iceberg-go (add_files, indexed) decodes its manifests with icebloom's
// decoder, none with iceberg-go's.
func TestPlanDecodesManifestsItself(t *testing.T) {
	cat := servetest.AddFilesTable(t, 30)
	ident := table.Identifier{"db", "events"}
	load := func(ctx context.Context, ident table.Identifier) (*Loaded, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		return &Loaded{Table: tbl}, err
	}
	p := NewPlanner(load, PlannerOptions{MemoryBudget: 1 << 30})
	decodes, fallbacks := manifestDecodes.Load(), manifestFallbacks.Load()
	res, err := p.Plan(context.Background(), ident, rest.PlanTableScanRequest{Filter: []byte(`{"type":"eq","term":"id","value":4}`)})
	if err != nil || !res.FastPath {
		t.Fatalf("plan: %v (fast path %v)", err, res != nil && res.FastPath)
	}
	if n := manifestFallbacks.Load() - fallbacks; n != 0 {
		t.Fatalf("%d manifests decoded by iceberg-go, want none", n)
	}
	if n := manifestDecodes.Load() - decodes; n == 0 {
		t.Fatal("no manifest decoded by icebloom's decoder")
	}
}

// TestManifestSetOfOlderManifestInV3List makes both ways the set of a v2
// manifest listed by a v3 table's manifest list, which gives it a first
// row id: its files inherit row ids though the manifest is v2.
func TestManifestSetOfOlderManifestInV3List(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	fsys := memIO{}
	spec := transformSpec()
	m := writeManifest(t, fsys, "mem://m.avro", 2, spec, allTypes, 7, typedEntries(t, rng, 200, 2, spec, 7), 0)
	var list bytes.Buffer
	seq := int64(3)
	if err := iceberg.WriteManifestList(3, &list, 7, nil, &seq, 5000, []iceberg.ManifestFile{m}); err != nil {
		t.Fatal(err)
	}
	listed, err := iceberg.ReadManifestList(&list)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].FirstRowID() == nil || *listed[0].FirstRowID() != 5000 {
		t.Fatalf("the listed manifest's first row id: %v", listed)
	}
	set := setsBothWays(t, fsys, listed[0], allTypes, []int{1})
	if set.firstRowIDs == nil || set.firstRowIDs[0] != 5000 {
		t.Fatalf("first row ids %v, want inherited from 5000", set.firstRowIDs)
	}
}
