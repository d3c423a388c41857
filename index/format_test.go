package index_test

import (
	"bufio"
	"encoding/hex"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
)

// workedExamples are the literals of docs/format.md §4.1, keyed by the
// table's first two columns.
var workedExamples = map[string]iceberg.Literal{
	"boolean|`true`":                         iceberg.BoolLiteral(true),
	"int|`42`":                               iceberg.Int32Literal(42),
	"long|`7842913`":                         iceberg.Int64Literal(7842913),
	"float|`1.5`":                            iceberg.Float32Literal(1.5),
	"double|`3.14`":                          iceberg.Float64Literal(3.14),
	"double|`-0.0` (as `0.0`)":               iceberg.Float64Literal(negativeZero()),
	"date|`2024-01-31` (19753)":              iceberg.DateLiteral(19753),
	"time|`10:00:00.123456`":                 iceberg.TimeLiteral(36_000_123_456),
	"timestamp|`2024-01-31T10:00:00.123456`": iceberg.TimestampLiteral(1_706_695_200_123_456),
	"timestamptz|`2024-01-31T10:00:00.123456+00:00`":       iceberg.TimestampLiteral(1_706_695_200_123_456),
	"timestamp_ns|`2024-01-31T10:00:00.123456789`":         iceberg.TimestampNsLiteral(1_706_695_200_123_456_789),
	"timestamptz_ns|`2024-01-31T10:00:00.123456789+00:00`": iceberg.TimestampNsLiteral(1_706_695_200_123_456_789),
	"string|`'alice@example.com'`":                         iceberg.StringLiteral("alice@example.com"),
	"uuid|`f79c3e09-677c-4bbd-a479-3f349cb785e7`":          iceberg.UUIDLiteral(uuid.MustParse("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
	"fixed[4]|`X'deadbeef'`":                               iceberg.FixedLiteral{0xde, 0xad, 0xbe, 0xef},
	"binary|`X'000102'`":                                   iceberg.BinaryLiteral{0, 1, 2},
	"decimal(9,2)|`123.45`":                                decimalLiteral("12345", 2),
	"decimal(18,2)|`123.45`":                               decimalLiteral("12345", 2),
	"decimal(38,2)|`123.45`":                               decimalLiteral("12345", 2),
	"decimal(20,0)|`-1`":                                   decimalLiteral("-1", 0),
}

func negativeZero() float64 { z := 0.0; return -z }

func decimalLiteral(unscaled string, scale int) iceberg.Literal {
	v, _ := new(big.Int).SetString(unscaled, 10)
	return iceberg.DecimalLiteral(iceberg.Decimal{Val: decimal128.FromBigInt(v), Scale: scale})
}

// TestFormatWorkedExamples keeps the specification honest: every row of the
// worked-examples table in docs/format.md must be what the code computes —
// the literal hashes to the stated bytes' XXH64, lands in the stated block.
func TestFormatWorkedExamples(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "docs", "format.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "### 4.1") {
			inTable = true
			continue
		}
		if !inTable || !strings.HasPrefix(line, "| `") {
			if inTable && strings.HasPrefix(line, "### ") {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		typeName := strings.Trim(cells[0], "`")
		key := typeName + "|" + cells[1]
		lit, ok := workedExamples[key]
		if !ok {
			t.Errorf("no literal for the row %q", key)
			continue
		}
		seen[key] = true
		valueType, err := hashing.ParseValueType(typeName)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := hex.DecodeString(strings.Trim(cells[2], "`"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := strconv.ParseUint(strings.Fields(cells[3])[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := strconv.Atoi(cells[4])
		h, outcome, err := hashing.Literal(valueType, lit)
		if err != nil || outcome != hashing.CheckHash {
			t.Errorf("%s: Literal = %v, %v", key, outcome, err)
		}
		if h != want || hashing.Bytes(raw) != want {
			t.Errorf("%s: hash %d, hash of the stated bytes %d, table says %d", key, h, hashing.Bytes(raw), want)
		}
		if got := sbbf.BlockIndex(h, 100); got != block {
			t.Errorf("%s: block %d, table says %d", key, got, block)
		}
	}
	if len(seen) != len(workedExamples) {
		t.Errorf("the table has %d of the %d worked examples", len(seen), len(workedExamples))
	}
}
