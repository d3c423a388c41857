package hashing_test

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/internal/testfixture"
)

// vectors is the part of sbbf-vectors/sbbf_test_vectors.json these tests use
// (MANIFEST.md §2c).
type vectors struct {
	Looping struct {
		Seed0 []uint64 `json:"seed0_uint64"`
	} `json:"xxh64_looping_bytes"`
	Empty struct {
		Input    string `json:"input_utf8"`
		Seed     int    `json:"seed"`
		Expected uint64 `json:"expected_uint64"`
	} `json:"xxh64_empty_string"`
	Typed struct {
		Values []typedVector `json:"values"`
	} `json:"typed_value_hashes_derived"`
	BooleanNote string `json:"boolean_note"`
}

type typedVector struct {
	Physical       string `json:"physical_type"`
	Description    string `json:"description"`
	PlainHex       string `json:"plain_encoded_bytes_hex"`
	Hash           uint64 `json:"xxh64_seed0"`
	IcebergMeaning string `json:"iceberg_meaning"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	var v vectors
	testfixture.DecodeJSON(t, &v, "sbbf-vectors", "sbbf_test_vectors.json")
	return v
}

func (v typedVector) plain(t *testing.T) []byte {
	t.Helper()
	b, err := hex.DecodeString(v.PlainHex)
	if err != nil {
		t.Fatalf("%s: %v", v.Description, err)
	}
	return b
}

// vectorHash finds the hash the vectors give for a physical type and PLAIN
// encoding, so that tests compare with the file rather than with the package.
func vectorHash(t *testing.T, vs vectors, physical, plainHex string) uint64 {
	t.Helper()
	for _, v := range vs.Typed.Values {
		if v.Physical == physical && v.PlainHex == plainHex {
			return v.Hash
		}
	}
	t.Fatalf("no %s vector for %s", physical, plainHex)
	return 0
}

// The upstream XXH64 vectors (parquet-java testXxHashCorrectness and
// arrow-rs) hold for Bytes: seed 0 over bytes(range(i)) and over "".
func TestBytesUpstreamVectors(t *testing.T) {
	vs := loadVectors(t)
	if len(vs.Looping.Seed0) != 32 {
		t.Fatalf("got %d looping vectors, want 32", len(vs.Looping.Seed0))
	}
	for i, want := range vs.Looping.Seed0 {
		in := make([]byte, i)
		for j := range in {
			in[j] = byte(j)
		}
		if got := hashing.Bytes(in); got != want {
			t.Errorf("Bytes(range(%d)) = %d, want %d", i, got, want)
		}
	}
	if vs.Empty.Seed != 0 || vs.Empty.Expected == 0 {
		t.Fatalf("unexpected empty-string vector %+v", vs.Empty)
	}
	if got := hashing.Bytes([]byte(vs.Empty.Input)); got != vs.Empty.Expected {
		t.Errorf("Bytes(%q) = %d, want %d", vs.Empty.Input, got, vs.Empty.Expected)
	}
}

// Every typed vector hashes to its recorded value through the function for
// its physical type. The FLOAT/DOUBLE -0.0 vectors are the raw hash of the
// -0.0 bits, which Uint32/Uint64 give; Float32/Float64 must instead give the
// +0.0 vector, because -0.0 = +0.0 in SQL.
func TestTypedVectors(t *testing.T) {
	vs := loadVectors(t)
	seen := map[string]int{}
	for _, v := range vs.Typed.Values {
		b := v.plain(t)
		seen[v.Physical]++
		var got, raw uint64 // raw: the hash of a float's bits as they are
		ok, negZero := true, false
		switch v.Physical {
		case "INT32":
			got = hashing.Int32(int32(binary.LittleEndian.Uint32(b)))
		case "INT64":
			got = hashing.Int64(int64(binary.LittleEndian.Uint64(b)))
		case "FLOAT":
			bits := binary.LittleEndian.Uint32(b)
			f := math.Float32frombits(bits)
			got, ok = hashing.Float32(f)
			raw, negZero = hashing.Uint32(bits), f == 0 && math.Signbit(float64(f))
		case "DOUBLE":
			bits := binary.LittleEndian.Uint64(b)
			f := math.Float64frombits(bits)
			got, ok = hashing.Float64(f)
			raw, negZero = hashing.Uint64(bits), f == 0 && math.Signbit(f)
		case "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY":
			got = hashing.Bytes(b)
		default:
			t.Fatalf("%s: unknown physical type %s", v.Description, v.Physical)
		}
		want := v.Hash
		if negZero {
			if raw != v.Hash {
				t.Errorf("%s: raw bits hash to %d, want %d", v.Description, raw, v.Hash)
			}
			want = vectorHash(t, vs, v.Physical, strings.Repeat("00", len(b)))
		}
		if !ok || got != want {
			t.Errorf("%s %s: got %d, %v; want %d", v.Physical, v.Description, got, ok, want)
		}
	}
	for physical, atLeast := range map[string]int{"INT32": 8, "INT64": 8, "FLOAT": 4, "DOUBLE": 4, "BYTE_ARRAY": 8, "FIXED_LEN_BYTE_ARRAY": 2} {
		if seen[physical] < atLeast {
			t.Errorf("%d %s vectors, want at least %d", seen[physical], physical, atLeast)
		}
	}
}

// The vectors that carry an Iceberg meaning come out of Literal for the
// right literal and type: the hash a reader checks equals the hash a
// conforming writer inserted.
func TestIcebergMeaningVectors(t *testing.T) {
	vs := loadVectors(t)
	decimal12345 := iceberg.DecimalLiteral{Val: decimal128.FromI64(12345), Scale: 2}
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
	ts := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC).UnixMicro()
	type lit struct {
		typ iceberg.PrimitiveType
		lit iceberg.Literal
	}
	cases := map[string][]lit{ // keyed by physical type and PLAIN hex
		"INT32 0b4d0000":         {{iceberg.PrimitiveTypes.Date, iceberg.DateLiteral(date)}},
		"INT32 39300000":         {{iceberg.DecimalTypeOf(9, 2), decimal12345}},
		"INT64 3930000000000000": {{iceberg.DecimalTypeOf(18, 2), decimal12345}},
		"INT64 00401e18240a0600": {
			{iceberg.PrimitiveTypes.Timestamp, iceberg.TimestampLiteral(ts)},
			{iceberg.PrimitiveTypes.TimestampTz, iceberg.TimestampLiteral(ts)},
		},
		"FIXED_LEN_BYTE_ARRAY f79c3e09677c4bbda4793f349cb785e7": {
			{iceberg.PrimitiveTypes.UUID, iceberg.UUIDLiteral(uuid.MustParse("f79c3e09-677c-4bbd-a479-3f349cb785e7"))},
		},
		"FIXED_LEN_BYTE_ARRAY 00000000000000000000000000003039": {{iceberg.DecimalTypeOf(38, 2), decimal12345}},
	}
	found := 0
	for _, v := range vs.Typed.Values {
		if v.IcebergMeaning == "" {
			continue
		}
		key := v.Physical + " " + v.PlainHex
		lits, ok := cases[key]
		if !ok {
			t.Errorf("vector %s (%s) has no Literal case", key, v.IcebergMeaning)
			continue
		}
		found++
		for _, l := range lits {
			expectLiteral(t, l.typ, l.lit, v.Hash)
		}
	}
	if found != len(cases) {
		t.Errorf("found %d vectors with an Iceberg meaning, want %d", found, len(cases))
	}
}

// expectLiteral requires Literal to say CheckHash with hash want.
func expectLiteral(t *testing.T, typ iceberg.PrimitiveType, lit iceberg.Literal, want uint64) {
	t.Helper()
	h, out, err := hashing.Literal(typ, lit)
	if err != nil || out != hashing.CheckHash || h != want {
		t.Errorf("Literal(%s, %s) = %d, %v, %v; want %d, CheckHash", hashing.FormatValueType(typ), lit, h, out, err, want)
	}
}

// Bool hashes one byte 0 or 1, the values the vectors' boolean_note gives.
func TestBoolVectors(t *testing.T) {
	m := regexp.MustCompile(`xxh64\(\[0x00\]\)=(\d+) xxh64\(\[0x01\]\)=(\d+)`).FindStringSubmatch(loadVectors(t).BooleanNote)
	if m == nil {
		t.Fatal("boolean_note has no hashes")
	}
	for i, v := range []bool{false, true} {
		want, _ := strconv.ParseUint(m[i+1], 10, 64)
		if got := hashing.Bool(v); got != want {
			t.Errorf("Bool(%v) = %d, want %d", v, got, want)
		}
		expectLiteral(t, iceberg.PrimitiveTypes.Bool, iceberg.BoolLiteral(v), want)
	}
}

// The specialised Uint32/Uint64 equal the general XXH64 over the 4 or 8
// little-endian bytes, for edge values and many random ones.
func TestUintMatchesXXHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	u32 := []uint32{0, 1, 0x80000000, math.MaxUint32, math.MaxInt32}
	u64 := []uint64{0, 1, 1 << 63, math.MaxUint64, math.MaxInt64, math.Float64bits(1.5)}
	for range 20000 {
		u32 = append(u32, rng.Uint32())
		u64 = append(u64, rng.Uint64())
	}
	var b [8]byte
	for _, v := range u32 {
		binary.LittleEndian.PutUint32(b[:4], v)
		if got, want := hashing.Uint32(v), xxhash.Sum64(b[:4]); got != want {
			t.Fatalf("Uint32(%#x) = %d, want %d", v, got, want)
		}
	}
	for _, v := range u64 {
		binary.LittleEndian.PutUint64(b[:], v)
		if got, want := hashing.Uint64(v), xxhash.Sum64(b[:]); got != want {
			t.Fatalf("Uint64(%#x) = %d, want %d", v, got, want)
		}
	}
}

// Float32/Float64 skip NaN (every NaN payload) and fold -0.0 into +0.0;
// other values hash their bits.
func TestFloatSpecialValues(t *testing.T) {
	for _, nan := range []uint64{0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001} {
		if _, ok := hashing.Float64(math.Float64frombits(nan)); ok {
			t.Errorf("Float64(NaN %#x) was hashed", nan)
		}
		if _, ok := hashing.Float32(float32(math.Float64frombits(nan))); ok {
			t.Errorf("Float32(NaN from %#x) was hashed", nan)
		}
	}
	for _, f := range []float64{math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, -1.5} {
		if h, ok := hashing.Float64(f); !ok || h != hashing.Uint64(math.Float64bits(f)) {
			t.Errorf("Float64(%v) = %d, %v", f, h, ok)
		}
		if h, ok := hashing.Float32(float32(f)); !ok || h != hashing.Uint32(math.Float32bits(float32(f))) {
			t.Errorf("Float32(%v) = %d, %v", float32(f), h, ok)
		}
	}
	if a, b := hashing.Uint64(math.Float64bits(math.Copysign(0, -1))), hashing.Uint64(0); a == b {
		t.Fatal("the raw -0.0 and +0.0 hashes coincide; the folding tests prove nothing")
	}
}

// DecimalBytes gives the bytes of Iceberg's TypeUtil.decimalRequiredBytes
// (the same Impala/Spark table as arrow-go's pqarrow.DecimalSize) for every
// precision: the first precision needing each byte count.
func TestDecimalBytes(t *testing.T) {
	firstNeeding := []int{1, 3, 5, 7, 10, 12, 15, 17, 19, 22, 24, 27, 29, 32, 34, 36} // 1..16 bytes
	for p := 1; p <= hashing.MaxDecimalPrecision; p++ {
		want := 0
		for want < len(firstNeeding) && firstNeeding[want] <= p {
			want++
		}
		if got := hashing.DecimalBytes(p); got != want {
			t.Errorf("DecimalBytes(%d) = %d, want %d", p, got, want)
		}
	}
}

// Decimal hashes the unscaled value as INT32 for P ≤ 9, INT64 for P ≤ 18 and
// as DecimalBytes(P) big-endian two's complement bytes beyond, checked
// against an encoding built with math/big.
func TestDecimal(t *testing.T) {
	for _, p := range []int{1, 9, 10, 18, 19, 25, 38} {
		max := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil), big.NewInt(1))
		for _, v := range []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(-1), max, new(big.Int).Neg(max)} {
			var want uint64
			switch {
			case p <= 9:
				want = hashing.Int32(int32(v.Int64()))
			case p <= 18:
				want = hashing.Int64(v.Int64())
			default:
				want = hashing.Bytes(twosComplement(v, hashing.DecimalBytes(p)))
			}
			n := decimal128.FromBigInt(v)
			if got := hashing.Decimal(p, n.HighBits(), n.LowBits()); got != want {
				t.Errorf("Decimal(%d, %s) = %d, want %d", p, v, got, want)
			}
		}
	}
}

// twosComplement returns v as n big-endian two's complement bytes.
func twosComplement(v *big.Int, n int) []byte {
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	return u.FillBytes(make([]byte, n))
}

// allValueTypes lists a type of every kind an index can record.
var allValueTypes = []iceberg.PrimitiveType{
	iceberg.PrimitiveTypes.Bool, iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64,
	iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Date,
	iceberg.PrimitiveTypes.Time, iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.TimestampTz,
	iceberg.PrimitiveTypes.TimestampNs, iceberg.PrimitiveTypes.TimestampTzNs, iceberg.PrimitiveTypes.String,
	iceberg.PrimitiveTypes.UUID, iceberg.PrimitiveTypes.Binary,
	iceberg.FixedTypeOf(1), iceberg.FixedTypeOf(16),
	iceberg.DecimalTypeOf(1, 0), iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(12, 2),
	iceberg.DecimalTypeOf(38, 0), iceberg.DecimalTypeOf(38, 38),
}

// FormatValueType and ParseValueType round-trip every supported type, and
// SupportsType accepts them.
func TestValueTypeRoundTrip(t *testing.T) {
	for _, typ := range allValueTypes {
		s := hashing.FormatValueType(typ)
		got, err := hashing.ParseValueType(s)
		if err != nil || !got.Equals(typ) {
			t.Errorf("ParseValueType(%q) = %v, %v; want %s", s, got, err, typ)
		}
		if !hashing.SupportsType(typ) {
			t.Errorf("SupportsType(%s) = false", typ)
		}
	}
	if s := hashing.FormatValueType(iceberg.DecimalTypeOf(12, 2)); s != "decimal(12,2)" {
		t.Errorf("FormatValueType(decimal(12, 2)) = %q, want no space", s)
	}
}

// ParseValueType takes other spellings of a type and rejects what an index
// cannot hold.
func TestParseValueType(t *testing.T) {
	for s, want := range map[string]iceberg.PrimitiveType{
		"decimal(12, 2)":     iceberg.DecimalTypeOf(12, 2),
		"decimal( 12 ,2 )":   iceberg.DecimalTypeOf(12, 2),
		" fixed[16] ":        iceberg.FixedTypeOf(16),
		"fixed[ 16 ]":        iceberg.FixedTypeOf(16),
		"LONG":               iceberg.PrimitiveTypes.Int64,
		"\ttimestamptz_ns\n": iceberg.PrimitiveTypes.TimestampTzNs,
	} {
		got, err := hashing.ParseValueType(s)
		if err != nil || !got.Equals(want) {
			t.Errorf("ParseValueType(%q) = %v, %v; want %s", s, got, err, want)
		}
	}
	for _, s := range []string{
		"decimal(39,2)", "decimal(2,3)", "decimal(0,0)", "decimal(10)", "decimal(-1,0)",
		"fixed[0]", "fixed[-1]", "fixed[16", "fixed", "list<int>", "map<int,int>",
		"struct<a:int>", "", " ", "geometry", "variant", "unknown", "int32", "longer",
	} {
		if got, err := hashing.ParseValueType(s); err == nil {
			t.Errorf("ParseValueType(%q) = %s, want an error", s, got)
		}
	}
}

// SupportsType refuses the types whose values are not hashed.
func TestSupportsTypeRefuses(t *testing.T) {
	for _, typ := range []iceberg.Type{
		iceberg.UnknownType{}, iceberg.VariantType{},
		&iceberg.ListType{ElementID: 1, Element: iceberg.PrimitiveTypes.Int32},
		&iceberg.StructType{}, iceberg.FixedTypeOf(0),
	} {
		if hashing.SupportsType(typ) {
			t.Errorf("SupportsType(%s) = true", typ)
		}
	}
}
