package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// partitionRows: a partition field of each kind, the value iceberg-go's
// DataFile.Partition hands out for it, and the JSON the envelope carries.
var partitionRows = []struct {
	column    string
	typ       iceberg.Type
	transform iceberg.Transform
	value     any
	json      string
}{
	{"id", iceberg.PrimitiveTypes.Int64, iceberg.BucketTransform{NumBuckets: 16}, int32(5), `5`},
	{"amount", iceberg.DecimalTypeOf(9, 2), iceberg.IdentityTransform{}, iceberg.DecimalLiteral(dec(12345, 2)), `"123.45"`},
	{"amount", iceberg.DecimalTypeOf(9, 2), iceberg.TruncateTransform{Width: 100}, iceberg.DecimalLiteral(dec(12300, 2)), `"123.00"`},
	{"ts", iceberg.PrimitiveTypes.Timestamp, iceberg.IdentityTransform{}, micros("2022-01-09T10:30:00Z"), `"2022-01-09T10:30:00.000000"`},
	{"ts", iceberg.PrimitiveTypes.Timestamp, iceberg.DayTransform{}, iceberg.Date(19001), `"2022-01-09"`},
	{"hts", iceberg.PrimitiveTypes.Timestamp, iceberg.HourTransform{}, int32(456034), `456034`},
	{"tstz", iceberg.PrimitiveTypes.TimestampTz, iceberg.IdentityTransform{}, micros("2022-01-09T10:30:00.5Z"), `"2022-01-09T10:30:00.500000+00:00"`},
	{"tsns", iceberg.PrimitiveTypes.TimestampTzNs, iceberg.IdentityTransform{}, nanos("2022-01-09T10:30:00.000000001Z"), `"2022-01-09T10:30:00.000000001+00:00"`},
	{"ratio", iceberg.PrimitiveTypes.Float64, iceberg.IdentityTransform{}, 2.0, `2.0`},
	{"f", iceberg.PrimitiveTypes.Float32, iceberg.IdentityTransform{}, float32(0.5), `0.5`},
	{"bin", iceberg.PrimitiveTypes.Binary, iceberg.IdentityTransform{}, []byte{0xab, 0xcd}, `"ABCD"`},
	{"fx", iceberg.FixedTypeOf(2), iceberg.IdentityTransform{}, []byte{0x0a, 0xff}, `"0AFF"`},
	{"u", iceberg.PrimitiveTypes.UUID, iceberg.IdentityTransform{}, someUUID, `"eb26bdb1-a1d8-4aa6-990e-da940875492c"`},
	{"d", iceberg.PrimitiveTypes.Date, iceberg.IdentityTransform{}, iceberg.Date(-3), `"1969-12-29"`},
	{"t", iceberg.PrimitiveTypes.Time, iceberg.IdentityTransform{}, iceberg.Time(1), `"00:00:00.000001"`},
	{"s", iceberg.PrimitiveTypes.String, iceberg.IdentityTransform{}, "x", `"x"`},
	{"b", iceberg.PrimitiveTypes.Bool, iceberg.IdentityTransform{}, true, `true`},
	{"n", iceberg.PrimitiveTypes.Int32, iceberg.IdentityTransform{}, nil, `null`},
}

// envelopeTable is a table partitioned by every row of partitionRows.
func envelopeTable(t *testing.T) table.Metadata {
	t.Helper()
	var fields []iceberg.NestedField
	var parts []iceberg.PartitionField
	ids := map[string]int{}
	for _, r := range partitionRows {
		if ids[r.column] == 0 {
			ids[r.column] = len(fields) + 1
			fields = append(fields, iceberg.NestedField{ID: ids[r.column], Name: r.column, Type: r.typ})
		}
		parts = append(parts, iceberg.PartitionField{SourceIDs: []int{ids[r.column]}, FieldID: 1000 + len(parts),
			Name: r.column + "_" + r.transform.String(), Transform: r.transform})
	}
	spec := iceberg.NewPartitionSpec(parts...)
	meta, err := table.NewMetadata(iceberg.NewSchema(0, fields...), &spec, table.UnsortedSortOrder, "file:///t", iceberg.Properties{"format-version": "3"})
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// column is the schema field of a column of meta's schema.
func column(t *testing.T, meta table.Metadata, name string) iceberg.NestedField {
	t.Helper()
	f, ok := meta.CurrentSchema().FindFieldByName(name)
	if !ok {
		t.Fatalf("no column %s", name)
	}
	return f
}

// file is a data or delete file of meta's spec with every partition value
// of partitionRows, as iceberg-go's DataFile.Partition hands them out.
func file(t *testing.T, meta table.Metadata, content iceberg.ManifestEntryContent, path string, format iceberg.FileFormat, set func(*iceberg.DataFileBuilder)) iceberg.DataFile {
	t.Helper()
	spec := meta.PartitionSpec()
	partition := map[int]any{}
	for i, field := range spec.Fields() {
		partition[field.FieldID] = partitionRows[i].value
	}
	b, err := iceberg.NewDataFileBuilder(spec, content, path, format, partition, nil, nil, 10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(b)
	}
	return b.Build()
}

func binary(t *testing.T, l iceberg.Literal) []byte {
	t.Helper()
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEnvelopeWireForms: a plan's envelope carries each partition value in
// its partition type's single-value form (a decimal's plan was a 500, a
// timestamp had a space, a double was 2, hex was lowercase), the bounds of
// the stats-fields as uppercase hex of their binary serialization, and
// key metadata as uppercase hex; each reads back, with ParsePartition and
// ParseBounds, to what the file held, and iceberg-go's client decodes the
// whole envelope.
func TestEnvelopeWireForms(t *testing.T) {
	meta := envelopeTable(t)
	amount, bin, ts := column(t, meta, "amount"), column(t, meta, "bin"), column(t, meta, "ts")
	lower := map[int][]byte{
		amount.ID: binary(t, iceberg.DecimalLiteral(dec(-12345, 2))),
		bin.ID:    {0x0a, 0xbc},
		ts.ID:     binary(t, iceberg.TimestampLiteral(micros("2022-01-09T10:30:00Z"))),
	}
	data := file(t, meta, iceberg.EntryContentData, "s3://b/t/data/a.parquet", iceberg.ParquetFile, func(b *iceberg.DataFileBuilder) {
		b.LowerBoundValues(lower).UpperBoundValues(lower).KeyMetadata([]byte{0xde, 0xad}).
			ValueCounts(map[int]int64{amount.ID: 10, bin.ID: 10, ts.ID: 10})
	})
	env, err := ScanTasks(meta, []table.FileScanTask{{File: data}}, map[int]bool{amount.ID: true, bin.ID: true})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	var got rest.ScanTasks
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	df := got.FileScanTasks[0].DataFile

	spec := meta.PartitionSpec()
	types, err := PartitionTypes(meta, &spec)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range partitionRows {
		if string(df.Partition[i]) != r.json {
			t.Errorf("partition %s(%s) = %s, want %s", r.transform, r.column, df.Partition[i], r.json)
		}
	}
	values, err := ParsePartition(meta, df.SpecID, df.Partition)
	if err != nil {
		t.Fatal(err)
	}
	for i, field := range spec.Fields() {
		want := partitionRows[i].value
		if want != nil {
			if want, err = canonical(types[i], want); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(values[field.FieldID], want) {
			t.Errorf("partition %s read back as %#v, want %#v", field.Name, values[field.FieldID], want)
		}
	}

	if df.KeyMetadata == nil || *df.KeyMetadata != "DEAD" {
		t.Errorf("key-metadata = %v, want DEAD", df.KeyMetadata)
	}
	wantLower := &rest.RESTValueMap{Keys: []int{amount.ID, bin.ID}, Values: []string{upperHex(lower[amount.ID]), "0ABC"}}
	if !reflect.DeepEqual(df.LowerBounds, wantLower) || !reflect.DeepEqual(df.UpperBounds, wantLower) {
		t.Errorf("bounds = %+v / %+v, want the stats-fields' %+v", df.LowerBounds, df.UpperBounds, wantLower)
	}
	if !reflect.DeepEqual(df.ValueCounts, &rest.RESTCountMap{Keys: []int{amount.ID, bin.ID}, Values: []int64{10, 10}}) {
		t.Errorf("value-counts = %+v, want the stats-fields' only", df.ValueCounts)
	}
	bounds, err := ParseBounds(df.LowerBounds)
	if err != nil {
		t.Fatal(err)
	}
	back, err := iceberg.LiteralFromBytes(amount.Type, bounds[amount.ID])
	if err != nil || !back.Equals(iceberg.DecimalLiteral(dec(-12345, 2))) {
		t.Errorf("lower bound of amount read back as %v, %v", back, err)
	}
	if !slices.Equal(bounds[bin.ID], lower[bin.ID]) {
		t.Errorf("lower bound of bin read back as %x", bounds[bin.ID])
	}

	tasks, err := rest.DecodeScanTasks(got, meta, nil, iceberg.AlwaysTrue{})
	if err != nil {
		t.Fatalf("iceberg-go's client refuses the envelope: %v", err)
	}
	for i, field := range spec.Fields() {
		v := tasks[0].File.Partition()[field.FieldID]
		if v != nil {
			if v, err = canonical(types[i], v); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(v, values[field.FieldID]) {
			t.Errorf("iceberg-go reads partition %s as %#v, we as %#v", field.Name, v, values[field.FieldID])
		}
	}
}

// TestEnvelopeTasksAndDeletes: one task per data file (the splits of a file
// are one task, with the union of their deletes and one residual), each
// delete file once per envelope and referenced by index, deletion vectors
// of one Puffin file told apart by offset.
func TestEnvelopeTasksAndDeletes(t *testing.T) {
	meta := envelopeTable(t)
	pos := file(t, meta, iceberg.EntryContentPosDeletes, "s3://b/t/data/pos.parquet", iceberg.ParquetFile, nil)
	eq := file(t, meta, iceberg.EntryContentEqDeletes, "s3://b/t/data/eq.parquet", iceberg.ParquetFile, func(b *iceberg.DataFileBuilder) {
		b.EqualityFieldIDs([]int{1})
	})
	dv := func(data string, offset int64) iceberg.DataFile {
		return file(t, meta, iceberg.EntryContentPosDeletes, "s3://b/t/data/dv.puffin", iceberg.PuffinFile, func(b *iceberg.DataFileBuilder) {
			b.ReferencedDataFile(data).ContentOffset(offset).ContentSizeInBytes(40)
		})
	}
	a := file(t, meta, iceberg.EntryContentData, "s3://b/t/data/a.parquet", iceberg.ParquetFile, nil)
	b := file(t, meta, iceberg.EntryContentData, "s3://b/t/data/b.parquet", iceberg.ParquetFile, nil)
	c := file(t, meta, iceberg.EntryContentData, "s3://b/t/data/c.parquet", iceberg.ParquetFile, nil)
	residual, err := iceberg.BindExpr(meta.CurrentSchema(), iceberg.EqualTo(iceberg.Reference("ratio"), 2.0), true)
	if err != nil {
		t.Fatal(err)
	}
	env, err := ScanTasks(meta, []table.FileScanTask{
		{File: a, DeleteFiles: []iceberg.DataFile{pos}, Residual: residual, Start: 0, Length: 500},
		{File: a, EqualityDeleteFiles: []iceberg.DataFile{eq}, Residual: residual, Start: 500, Length: 500},
		{File: b, DeletionVectorFiles: []iceberg.DataFile{dv(b.FilePath(), 4)}},
		{File: c, EqualityDeleteFiles: []iceberg.DataFile{eq}, DeletionVectorFiles: []iceberg.DataFile{dv(c.FilePath(), 100)}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	var refs [][]int
	for _, task := range env.FileScanTasks {
		paths = append(paths, task.DataFile.FilePath)
		refs = append(refs, task.DeleteFileReferences)
	}
	if want := []string{a.FilePath(), b.FilePath(), c.FilePath()}; !slices.Equal(paths, want) {
		t.Errorf("tasks of %v, want %v", paths, want)
	}
	if want := [][]int{{0, 1}, {2}, {1, 3}}; !reflect.DeepEqual(refs, want) {
		t.Errorf("delete-file-references %v, want %v", refs, want)
	}
	var deletes []string
	for _, d := range env.DeleteFiles {
		key := d.Content + " " + d.FilePath
		if d.ContentOffset != nil {
			key += fmt.Sprintf("@%d", *d.ContentOffset)
		}
		deletes = append(deletes, key)
	}
	want := []string{"position-deletes s3://b/t/data/pos.parquet", "equality-deletes s3://b/t/data/eq.parquet",
		"position-deletes s3://b/t/data/dv.puffin@4", "position-deletes s3://b/t/data/dv.puffin@100"}
	if !slices.Equal(deletes, want) {
		t.Errorf("delete-files %v, want %v", deletes, want)
	}
	if got := string(env.FileScanTasks[0].ResidualFilter); got != `{"type":"eq","term":"ratio","value":2.0}` {
		t.Errorf("residual-filter %s", got)
	}
	if env.FileScanTasks[1].ResidualFilter != nil {
		t.Errorf("residual-filter of a task without one: %s", env.FileScanTasks[1].ResidualFilter)
	}
	if _, err := rest.DecodeScanTasks(env, meta, nil, iceberg.AlwaysTrue{}); err != nil {
		t.Errorf("iceberg-go's client refuses the envelope: %v", err)
	}
}

// TestEnvelopeNamesTheFileAndField: a value that cannot be written fails
// the plan with the file and the partition field named.
func TestEnvelopeNamesTheFileAndField(t *testing.T) {
	meta := envelopeTable(t)
	spec := meta.PartitionSpec()
	partition := map[int]any{}
	for i, field := range spec.Fields() {
		partition[field.FieldID] = partitionRows[i].value
		if partitionRows[i].column == "ratio" {
			partition[field.FieldID] = uuid.Nil
		}
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://b/t/data/bad.parquet", iceberg.ParquetFile, partition, nil, nil, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ScanTasks(meta, []table.FileScanTask{{File: b.Build()}}, nil)
	if err == nil || !strings.Contains(err.Error(), "s3://b/t/data/bad.parquet: partition field ratio_identity: a uuid.UUID") || !strings.Contains(err.Error(), "is not a double value") {
		t.Errorf("err = %v, want the file, the field and the type named", err)
	}
}

// uncomparable is a bound predicate that == cannot compare (it holds a
// slice): as a map key it would panic.
type uncomparable struct {
	iceberg.BoundLiteralPredicate
	_ []int
}

// TestEnvelopeSharedResiduals: each distinct residual is written once per
// envelope (the tasks that share it share its JSON), and still every task
// carries its own: residuals equal by their nodes (one predicate, or an And
// of the same two made twice, as a partitioned plan's are) write the same
// JSON as each would alone, residuals that differ stay different, and a
// residual == cannot compare is written rather than panicking.
func TestEnvelopeSharedResiduals(t *testing.T) {
	meta := envelopeTable(t)
	schema := meta.CurrentSchema()
	bind := func(e iceberg.BooleanExpression) iceberg.BooleanExpression {
		t.Helper()
		bound, err := iceberg.BindExpr(schema, e, true)
		if err != nil {
			t.Fatal(err)
		}
		return bound
	}
	two := bind(iceberg.EqualTo(iceberg.Reference("ratio"), 2.0))
	three := bind(iceberg.EqualTo(iceberg.Reference("ratio"), 3.0))
	named := bind(iceberg.EqualTo(iceberg.Reference("s"), "x"))
	residuals := []iceberg.BooleanExpression{
		two, three, two, // one predicate twice, another between
		iceberg.NewAnd(two, named), iceberg.NewAnd(two, named), iceberg.NewAnd(three, named), // equal Ands made apart
		iceberg.AlwaysTrue{}, nil, // true, and no residual
		iceberg.EqualTo(iceberg.Reference("ratio"), 2.0), // unbound: bound to the current schema
		uncomparable{BoundLiteralPredicate: three.(iceberg.BoundLiteralPredicate)},
		two,
	}
	var tasks []table.FileScanTask
	for i, r := range residuals {
		f := file(t, meta, iceberg.EntryContentData, fmt.Sprintf("s3://b/t/data/%d.parquet", i), iceberg.ParquetFile, nil)
		tasks = append(tasks, table.FileScanTask{File: f, Residual: r})
	}
	env, err := ScanTasks(meta, tasks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(env.FileScanTasks) != len(residuals) {
		t.Fatalf("%d tasks, want %d", len(env.FileScanTasks), len(residuals))
	}
	for i, r := range residuals {
		got := env.FileScanTasks[i].ResidualFilter
		if r == nil {
			if got != nil {
				t.Errorf("task %d has no residual, written as %s", i, got)
			}
			continue
		}
		want, err := Expression(r, schema)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("task %d: residual-filter %s, want %s (its residual written alone)", i, got, want)
		}
	}
	json := func(i int) string { return string(env.FileScanTasks[i].ResidualFilter) }
	for _, pair := range [][2]int{{0, 1}, {3, 5}, {0, 3}, {6, 0}} {
		if json(pair[0]) == json(pair[1]) {
			t.Errorf("tasks %d and %d have different residuals, written alike: %s", pair[0], pair[1], json(pair[0]))
		}
	}
	if json(1) != json(9) || json(0) != json(8) {
		t.Errorf("an equal residual written differently: %s, %s; %s, %s", json(1), json(9), json(0), json(8))
	}
	shared := func(i, j int) bool {
		return &env.FileScanTasks[i].ResidualFilter[0] == &env.FileScanTasks[j].ResidualFilter[0]
	}
	if !shared(0, 2) || !shared(0, 10) || !shared(3, 4) {
		t.Error("tasks with one residual do not share its JSON: it was written more than once")
	}
	if _, err := rest.DecodeScanTasks(env, meta, nil, iceberg.AlwaysTrue{}); err != nil {
		t.Errorf("iceberg-go's client refuses the envelope: %v", err)
	}
}
