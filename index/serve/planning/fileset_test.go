package planning

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unsafe"

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
			sb.add(&manifestdec.ColumnStats{Values: 10, HasValues: true, HasNulls: true, Lower: lo, Upper: hi})
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
		s.span = s.spanOf(0, s.len())
		if s.keepsAll([]int64{2500}, [][]byte{[]byte("2500")}) {
			t.Fatalf("%s: keepsAll with a file of nulls only", typ)
		}
	}
}

// TestStatsRowsCopied: a column's statistics made of ranges of other sets'
// (a base made from the last one) hold each file's bounds as the sets they
// came from did, with the span of them all; bounds past what offsets of
// 32 bits hold are held as literals, the same.
func TestStatsRowsCopied(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	field := iceberg.NestedField{ID: 1, Name: "c", Type: iceberg.PrimitiveTypes.String}
	random := func() []byte {
		switch r.IntN(8) {
		case 0:
			return nil
		case 1:
			return append(bytes.Repeat([]byte{0xff}, 17), byte(r.IntN(256))) // held whole
		}
		return []byte(strconv.FormatInt(r.Int64N(1<<40), 36) + "@example.com")
	}
	made := func(n int) (*columnStats, []manifestdec.ColumnStats) {
		sb := newStatsBuilder(field, n)
		var raw []manifestdec.ColumnStats
		for range n {
			st := manifestdec.ColumnStats{Values: 10, HasValues: true, HasNulls: true, Nulls: int64(r.IntN(11)), Lower: random(), Upper: random()}
			sb.add(&st)
			raw = append(raw, st)
		}
		return sb.finish(), raw
	}
	a, rawA := made(300)
	b, rawB := made(200)
	for _, limit := range []int{maxSlabBytes, 4000} {
		maxSlabBytes = limit
		sb := newStatsBuilder(field, 0)
		sb.addRows(a, 0, 300)
		want := append([]manifestdec.ColumnStats{}, rawA...)
		for _, st := range rawB[:5] {
			sb.add(&st)
			want = append(want, st)
		}
		sb.addRows(b, 50, 150)
		want = append(want, rawB[50:150]...)
		got := sb.finish()
		fresh := newStatsBuilder(field, 0)
		for _, st := range want {
			fresh.add(&st)
		}
		wantStats := fresh.finish()
		if wantKind := map[bool]boundKind{true: bytesBounds, false: literalBounds}[limit > 1<<20]; got.kind != wantKind || wantStats.kind != wantKind {
			t.Fatalf("slab limit %d: kinds %d and %d, want %d", limit, got.kind, wantStats.kind, wantKind)
		}
		for i := range want {
			if got.nullsOnly[i] != wantStats.nullsOnly[i] || got.hasLower[i] != wantStats.hasLower[i] || got.hasUpper[i] != wantStats.hasUpper[i] {
				t.Fatalf("slab limit %d, file %d: flags differ", limit, i)
			}
			switch got.kind {
			case bytesBounds:
				if !bytes.Equal(got.lowerBytes(i), wantStats.lowerBytes(i)) || !bytes.Equal(got.upperBytes(i), wantStats.upperBytes(i)) {
					t.Fatalf("file %d: bounds [%q, %q], want [%q, %q]", i, got.lowerBytes(i), got.upperBytes(i), wantStats.lowerBytes(i), wantStats.upperBytes(i))
				}
			default:
				for _, pair := range [][2]iceberg.Literal{{got.lower[i], wantStats.lower[i]}, {got.upper[i], wantStats.upper[i]}} {
					if (pair[0] == nil) != (pair[1] == nil) || pair[0] != nil && !pair[0].Equals(pair[1]) {
						t.Fatalf("slab limit %d, file %d: bound %v, want %v", limit, i, pair[0], pair[1])
					}
				}
			}
		}
		if sp, want := got.span, wantStats.span; sp.ok != want.ok || sp.hasMaxLo != want.hasMaxLo || sp.hasMinHi != want.hasMinHi ||
			!bytes.Equal(sp.maxLoRaw, want.maxLoRaw) || !bytes.Equal(sp.minHiRaw, want.minHiRaw) {
			t.Fatalf("slab limit %d: span %+v, want %+v", limit, sp, want)
		}
	}
	maxSlabBytes = math.MaxInt32
}

// TestSetExtended: a set extended by the next version's files holds the
// rows a set made by copying holds, in the same order, with the same
// statistics and span; the set it extends is unchanged, a second
// extension of it is refused (and allowed once unclaimed), and the next
// extension appends in the room the last left rather than copying.
func TestSetExtended(t *testing.T) {
	ctx, fsys, fields := context.Background(), memIO{}, []int{1, 2}
	entries := eventsEntries(315, true, 1)
	var sets []*fileSet
	for k, r := range [][2]int{{0, 300}, {300, 310}, {310, 315}} { // the room the first extension leaves holds the second
		m := writeManifest(t, fsys, fmt.Sprintf("s3://warehouse/db/events/metadata/m%d.avro", k), 2, eventsDaySpec, eventsSchema, 1, entries[r[0]:r[1]], 0)
		sets = append(sets, must(manifestSet(ctx, fsys, m, eventsSchema, fields)))
	}
	copied := func(parts ...*fileSet) *fileSet {
		n := 0
		for _, p := range parts {
			n += p.len()
		}
		sb := newSetBuilder(eventsSchema, fields, n)
		for _, p := range parts {
			sb.addRows(p, 0, p.len())
		}
		return sb.finish()
	}
	rowsOf := func(s *fileSet) []string {
		var rows []string
		for i := range s.len() {
			t := s.task(i)
			id, email := s.stats[1], s.stats[2]
			file := getters(t.File)
			for k, v := range file {
				if p, ok := v.(*int); ok && p != nil {
					file[k] = *p
				}
			}
			rows = append(rows, fmt.Sprintf("%v|%v|%v %v %v %v|%v %v %q %q", file, t.Length, id.nullsOnly[i], id.hasLower[i], id.ilo[i], id.ihi[i],
				email.nullsOnly[i], email.hasUpper[i], email.lowerBytes(i), email.upperBytes(i)))
		}
		return rows
	}
	a := copied(sets[0])
	aRows := rowsOf(a)
	ext := a.extension(eventsSchema, fields)
	if ext == nil || a.extension(eventsSchema, fields) != nil {
		t.Fatal("a set not extended yet was not extended once, and once only")
	}
	ext.room(sets[1].len())
	ext.addRows(sets[1], 0, sets[1].len())
	b := ext.finish()
	if room := cap(b.records) - b.len(); room > b.len()/16 {
		t.Fatalf("the extension left room for %d files more beside %d", room, b.len())
	}
	c := b.extension(eventsSchema, fields)
	c.room(sets[2].len())
	c.addRows(sets[2], 0, sets[2].len())
	cs := c.finish()
	for _, v := range []struct {
		name      string
		got, want *fileSet
	}{{"the first extension", b, copied(sets[0], sets[1])}, {"the second", cs, copied(sets...)}} {
		if got, want := rowsOf(v.got), rowsOf(v.want); !slices.Equal(got, want) {
			t.Fatalf("%s holds %d rows, a copy %d, or others", v.name, len(got), len(want))
		}
		for id, st := range v.want.stats {
			if sp, want := v.got.stats[id].span, st.span; sp.ok != want.ok || sp.maxLo != want.maxLo || sp.minHi != want.minHi ||
				!bytes.Equal(sp.maxLoRaw, want.maxLoRaw) || !bytes.Equal(sp.minHiRaw, want.minHiRaw) {
				t.Fatalf("%s: the span of field %d is %+v, want %+v", v.name, id, sp, want)
			}
		}
	}
	if !slices.Equal(rowsOf(a), aRows) {
		t.Fatal("the set extended changed")
	}
	if unsafe.SliceData(cs.records) != unsafe.SliceData(b.records) || unsafe.SliceData(cs.stats[2].slab) != unsafe.SliceData(b.stats[2].slab) {
		t.Fatal("the second extension copied the columns the first left room in")
	}
	d := copied(sets[0])
	d.extension(eventsSchema, fields)
	d.unclaim()
	if d.extension(eventsSchema, fields) == nil {
		t.Fatal("a set given back was not extended")
	}
}
