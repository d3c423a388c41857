package planning

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/serve/planning/internal/manifestdec"
)

// TestBoundPrefixes: the bounds a base holds of long strings and binaries
// are no more than heldBoundBytes and never narrower than the whole ones:
// every value between the whole bounds lies between the held ones.
func TestBoundPrefixes(t *testing.T) {
	long := []byte("0123456789abcdefXYZ") // 19 bytes
	for _, c := range []struct {
		name         string
		lo, hi       []byte
		wantLo, want []byte
	}{
		{"short", []byte("a@x.org"), []byte("z@x.org"), []byte("a@x.org"), []byte("z@x.org")},
		{"long", long, long, long[:16], []byte("0123456789abcdeg")},
		{"ff tail", long, append([]byte("0123456789abcd\xff\xff"), 'z'), long[:16], []byte("0123456789abce")},
		{"all ff", long, bytes.Repeat([]byte{0xff}, 20), long[:16], bytes.Repeat([]byte{0xff}, 20)},
	} {
		lo, hi := lowerPrefix(c.lo), upperPrefix(c.hi)
		if !bytes.Equal(lo, c.wantLo) || !bytes.Equal(hi, c.want) {
			t.Errorf("%s: held [%q, %q], want [%q, %q]", c.name, lo, hi, c.wantLo, c.want)
		}
		if bytes.Compare(lo, c.lo) > 0 || bytes.Compare(hi, c.hi) < 0 {
			t.Errorf("%s: held [%q, %q] narrower than [%q, %q]", c.name, lo, hi, c.lo, c.hi)
		}
		if len(c.hi) > heldBoundBytes && c.want[0] != 0xff && len(hi) > heldBoundBytes {
			t.Errorf("%s: held upper bound of %d bytes", c.name, len(hi))
		}
	}
}

// TestColumnSpan: a value the span says no file's bounds rule out is
// within every file's bounds (so statsKeep may skip looking at each), and
// the span says so of the values between the largest lower bound and the
// smallest upper one alone; a file of nulls only turns it off.
func TestColumnSpan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []iceberg.PrimitiveType{iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.String} {
		field := iceberg.NestedField{ID: 1, Name: "c", Type: typ}
		sb := newStatsBuilder(field, 0)
		for range 500 {
			a, b := 1000+r.Int64N(1000), 3000+r.Int64N(1000)
			lo, hi := must(iceberg.Int64Literal(a).MarshalBinary()), must(iceberg.Int64Literal(b).MarshalBinary())
			if typ == iceberg.PrimitiveTypes.String {
				lo, hi = []byte(strconv.FormatInt(a, 10)), []byte(strconv.FormatInt(b, 10))
			}
			sb.add(&manifestdec.ColumnStats{Values: 10, HasValues: true, HasNulls: true, Lower: lo, Upper: hi}, &boundArena{})
		}
		s := sb.finish()
		for v := int64(0); v < 5000; v += 7 {
			ints, raw := []int64{v}, [][]byte{[]byte(strconv.FormatInt(v, 10))}
			all := true
			for i := range s.hasLower {
				all = all && s.within(i, nil, ints, raw)
			}
			if got := s.keepsAll(ints, raw); got != all {
				t.Fatalf("%s: keepsAll(%d) = %t, every file within: %t", typ, v, got, all)
			}
		}
		s.nullsOnly[7] = true
		s.setSpan()
		if s.keepsAll([]int64{2500}, [][]byte{[]byte("2500")}) {
			t.Fatalf("%s: keepsAll with a file of nulls only", typ)
		}
	}
}
