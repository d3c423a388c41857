package hashing_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/internal/testfixture"
	"github.com/icebloom/icebloom/index/sbbf"
)

// columnFacts is what the fixtures' EXPECTED.json files record about one
// column: values it holds and values verified absent, as JSON (numbers are
// unscaled for decimals).
type columnFacts struct {
	icebergType string // empty where the fixture does not say
	present     []json.RawMessage
	absent      []json.RawMessage
}

// writerFacts reads parquet-bloom/EXPECTED.json and the partition_integer
// table's EXPECTED.json, keyed by file path and column path.
func writerFacts(t *testing.T) map[[2]string]columnFacts {
	t.Helper()
	facts := map[[2]string]columnFacts{}
	var bloom map[string]struct {
		Columns []struct {
			Path     string            `json:"path"`
			Distinct []json.RawMessage `json:"distinct_values"`
			Probes   map[string]bool   `json:"probes_not_in_column"`
		} `json:"columns"`
	}
	testfixture.DecodeJSON(t, &bloom, "parquet-bloom", "EXPECTED.json")
	for name, f := range bloom {
		for _, c := range f.Columns {
			cf := columnFacts{present: c.Distinct}
			for probe, inFilter := range c.Probes {
				if inFilter {
					t.Fatalf("%s %s: probe %q is recorded as present", name, c.Path, probe)
				}
				cf.absent = append(cf.absent, json.RawMessage(strconv.Quote(probe)))
			}
			facts[[2]string{testfixture.External("parquet-bloom", name), c.Path}] = cf
		}
	}
	var table struct {
		Files map[string]struct {
			Columns map[string]struct {
				Path   string            `json:"parquet_path"`
				Type   string            `json:"iceberg_type"`
				Values []json.RawMessage `json:"values"`
				Absent []json.RawMessage `json:"absent_values_verified"`
			} `json:"columns_by_field_id"`
		} `json:"current_data_files"`
	}
	testfixture.DecodeJSON(t, &table, "iceberg-tables", "duckdb-iceberg", "data", "persistent", "partition_integer", "EXPECTED.json")
	for name, f := range table.Files {
		for _, c := range f.Columns {
			facts[[2]string{testfixture.External("iceberg-tables", "duckdb-iceberg", name), c.Path}] = columnFacts{c.Type, c.Values, c.Absent}
		}
	}
	return facts
}

// icebergType derives the Iceberg type of a column from its Parquet logical
// type, as a table created from these files would have it.
func icebergType(t *testing.T, col *schema.Column) iceberg.PrimitiveType {
	t.Helper()
	switch lt := col.LogicalType().(type) {
	case schema.IntLogicalType:
		if lt.BitWidth() == 64 {
			return iceberg.PrimitiveTypes.Int64
		}
		return iceberg.PrimitiveTypes.Int32
	case schema.DecimalLogicalType:
		return iceberg.DecimalTypeOf(int(lt.Precision()), int(lt.Scale()))
	case schema.StringLogicalType:
		return iceberg.PrimitiveTypes.String
	case schema.DateLogicalType:
		return iceberg.PrimitiveTypes.Date
	}
	t.Fatalf("column %s: no Iceberg type for %s", col.Path(), col.LogicalType())
	return nil
}

// factLiteral turns a recorded value (a JSON number or string; probes are
// always strings) into the literal of a query for it.
func factLiteral(t *testing.T, typ iceberg.PrimitiveType, raw json.RawMessage) iceberg.Literal {
	t.Helper()
	s := string(raw)
	if unquoted, err := strconv.Unquote(s); err == nil {
		s = unquoted
	}
	if _, ok := typ.(iceberg.StringType); ok {
		return iceberg.StringLiteral(s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("value %s of a %s column: %v", raw, typ, err)
	}
	switch typ := typ.(type) {
	case iceberg.Int32Type:
		return iceberg.Int32Literal(n)
	case iceberg.Int64Type:
		return iceberg.Int64Literal(n)
	case iceberg.DateType:
		return iceberg.DateLiteral(n)
	case iceberg.DecimalType:
		return iceberg.DecimalLiteral{Val: decimal128.FromI64(n), Scale: typ.Scale()}
	}
	t.Fatalf("no literal for a %s column", typ)
	return nil
}

// The filters real writers stored in their Parquet files (DuckDB, parquet-mr,
// parquet-rs) are rebuilt byte for byte from the column values hashed by
// Column, with the Iceberg type derived from the Parquet logical type. The
// writer's filter then answers Literal hashes: true for every recorded
// value, false for the verified-absent probes.
func TestRebuildWriterFilters(t *testing.T) {
	facts := writerFacts(t)
	partitions, err := filepath.Glob(testfixture.External("iceberg-tables", "duckdb-iceberg", "data", "persistent", "partition_integer", "data", "*", "*.parquet"))
	if err != nil || len(partitions) != 2 {
		t.Fatalf("partition_integer data files: %v, %v", partitions, err)
	}
	wantFilters := map[string]int{
		testfixture.External("parquet-bloom", "duckdb", "lineitem_u1.parquet"):                                    8,
		testfixture.External("parquet-bloom", "parquet-testing", "data_index_bloom_encoding_stats.parquet"):       1,
		testfixture.External("parquet-bloom", "parquet-testing", "data_index_bloom_encoding_with_length.parquet"): 1,
		partitions[0]: 2,
		partitions[1]: 2,
	}
	total := 0
	for path, want := range wantFilters {
		got := rebuildFileFilters(t, path, facts)
		if got != want {
			t.Errorf("%s: %d bloom filters, want %d", filepath.Base(path), got, want)
		}
		total += got
	}
	if total < 14 {
		t.Errorf("%d bloom filters rebuilt, want at least 14", total)
	}
}

// rebuildFileFilters checks every bloom filter of a file and returns how
// many it found.
func rebuildFileFilters(t *testing.T, path string, facts map[[2]string]columnFacts) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	found := 0
	for g := range rdr.NumRowGroups() {
		rg := rdr.RowGroup(g)
		for i := range rg.NumColumns() {
			md, err := rg.MetaData().ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			offset := md.BloomFilterOffset()
			if offset <= 0 {
				continue
			}
			end := int64(len(raw)) // parquet-mr 1.13 does not record the length
			if n := md.BloomFilterLength(); n > 0 {
				end = offset + int64(n)
			}
			bitset, err := testfixture.ParquetBloomBitset(raw[offset:end])
			if err != nil {
				t.Fatalf("%s column %d: %v", path, i, err)
			}
			found++
			col := rdr.MetaData().Schema.Column(i)
			name := filepath.Base(path) + " " + col.Path()
			typ := icebergType(t, col)
			c, err := hashing.NewColumn(typ, col)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			rebuilt := sbbf.New(len(bitset) / sbbf.BlockBytes)
			rebuilt.InsertMany(hashChunk(t, rg, i, c, nil))
			if !bytes.Equal(rebuilt.Bytes(), bitset) {
				t.Errorf("%s as %s: rebuilt filter differs from the writer's %d bytes", name, hashing.FormatValueType(typ), len(bitset))
			}
			checkFacts(t, name, typ, bitset, facts[[2]string{path, col.Path()}])
		}
	}
	return found
}

// checkFacts asks the writer's own filter about the recorded values through
// Literal.
func checkFacts(t *testing.T, name string, typ iceberg.PrimitiveType, bitset []byte, f columnFacts) {
	t.Helper()
	if len(f.present) == 0 || len(f.absent) == 0 {
		t.Errorf("%s: no recorded values or probes", name)
	}
	if f.icebergType != "" && f.icebergType != hashing.FormatValueType(typ) {
		t.Errorf("%s: derived type %s, the fixture says %s", name, hashing.FormatValueType(typ), f.icebergType)
	}
	filter, err := sbbf.FromBytes(bitset)
	if err != nil {
		t.Fatal(err)
	}
	for want, values := range map[bool][]json.RawMessage{true: f.present, false: f.absent} {
		for _, v := range values {
			lit := factLiteral(t, typ, v)
			h, out, err := hashing.Literal(typ, lit)
			if err != nil || out != hashing.CheckHash {
				t.Errorf("%s: Literal(%s) = %v, %v", name, lit, out, err)
			} else if filter.Check(h) != want {
				t.Errorf("%s: the writer's filter says %v for %s, want %v", name, !want, lit, want)
			}
		}
	}
}
