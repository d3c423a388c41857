package segment

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// footerProps returns the properties of each blob of a segment's footer, by
// blob type.
func footerProps(t *testing.T, file []byte) map[puffin.BlobType][]map[string]string {
	t.Helper()
	r, err := puffin.Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[puffin.BlobType][]map[string]string{}
	for i := range r.NumBlobs() {
		b, _ := r.Blob(i)
		out[b.Type] = append(out[b.Type], b.Properties)
	}
	return out
}

// TestFormatFooterProperties pins the string forms of the informative footer
// properties (docs/format.md §2.1): decimal counts, the value type's name,
// fpp as the shortest decimal that reads back the same (exponent form below
// 0.0001), and a directory's links counted only when it has some. It also
// shows that a segment's own filters are what its entry counts count, and
// that its fields are its own and its links' (§7).
func TestFormatFooterProperties(t *testing.T) {
	link := Link{Path: "s3://b/t/metadata/icebloom-1-x.puffin", Size: 5000, FooterSize: 300, DirectoryOffset: 4000,
		DirectoryLength: 600, Fields: []int{1, 7}}
	for _, c := range []struct {
		fpp  float64
		want string
	}{{0.01, "0.01"}, {0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.0 / 3, "0.3333333333333333"}} {
		file, res := writeSegment(t, WriterOptions{}, func(w *Writer) error {
			for _, p := range []string{"s3://b/t/data/a.parquet", "s3://b/t/data/b.parquet"} {
				if err := w.Add(FilterInput{File: File{p, 10}, FieldID: 3, ValueType: iceberg.PrimitiveTypes.Int64, FPP: c.fpp,
					NDV: 1, Bits: make([]byte, 2*sbbf.BlockBytes)}); err != nil {
					return err
				}
			}
			w.Link(link)
			return nil
		})
		props := footerProps(t, file)
		wantGroup := map[string]string{"blocks": "2", "members": "2", "value-type": "long", "fpp": c.want, "hash": "xxhash64"}
		if g := props[GroupBlobType]; len(g) != 1 || !maps.Equal(g[0], wantGroup) {
			t.Errorf("fpp %v: group blob properties %v, want %v", c.fpp, g, wantGroup)
		}
		wantDir := map[string]string{"files": "2", "groups": "1", "links": "1"}
		if d := props[DirectoryBlobType]; len(d) != 1 || !maps.Equal(d[0], wantDir) {
			t.Errorf("fpp %v: directory blob properties %v, want %v", c.fpp, d, wantDir)
		}
		if got, _ := strconv.ParseFloat(c.want, 64); got != c.fpp {
			t.Errorf("%s reads back as %v, not %v", c.want, got, c.fpp)
		}
		if !maps.Equal(res.Members, map[int]int{3: 2}) || !reflect.DeepEqual(res.Fields, []int32{1, 3, 7}) {
			t.Errorf("fpp %v: members by field %v, fields %v; want the own filters {3: 2} and fields [1 3 7]", c.fpp, res.Members, res.Fields)
		}
	}
}

// TestFormatLinkingOnly: a segment that only links has no groups, so no
// entry counts (docs/format.md §7: linked filters are not counted), and its
// directory's fields are its links'.
func TestFormatLinkingOnly(t *testing.T) {
	links := []Link{
		{Path: "s3://b/t/metadata/icebloom-1-x.puffin", Size: 5000, FooterSize: 300, DirectoryOffset: 4000, DirectoryLength: 600,
			Fields: []int{4, 9}, Run: "job-7", Shard: 0, Shards: 2},
		{Path: "s3://b/t/metadata/icebloom-1-y.puffin", Size: 5000, FooterSize: 300, DirectoryOffset: 4000, DirectoryLength: 600,
			Fields: []int{1, 4}, Run: "job-7", Shard: 1, Shards: 2},
	}
	file, res := writeSegment(t, WriterOptions{}, func(w *Writer) error {
		for _, l := range links {
			w.Link(l)
		}
		return nil
	})
	if len(res.Members) != 0 || !reflect.DeepEqual(res.Fields, []int32{1, 4, 9}) {
		t.Errorf("members by field %v, fields %v; want none and [1 4 9]", res.Members, res.Fields)
	}
	props := footerProps(t, file)
	if len(props[GroupBlobType]) != 0 {
		t.Errorf("group blobs %v in a segment that only links", props[GroupBlobType])
	}
	if d := props[DirectoryBlobType]; len(d) != 1 || !maps.Equal(d[0], map[string]string{"files": "0", "groups": "0", "links": "2"}) {
		t.Errorf("directory blob properties %v", d)
	}
	dir, err := DecodeDirectory(res.Directory.Encode(), res.DirectoryOffset)
	if err != nil || dir.Files.Len() != 0 || len(dir.Groups) != 0 || !reflect.DeepEqual(dir.Links, links) {
		t.Fatalf("directory %+v, %v", dir, err)
	}
}

// TestFormatCountBounds pins the divisors of docs/format.md §2.3: a count is
// refused when above ⌊r/s⌋, r the bytes from the count to the checksum, s 2
// for files and 20 for groups; one less is refused only later, by what the
// bytes hold.
func TestFormatCountBounds(t *testing.T) {
	// The magic and chunk members, then a count and r−1 bytes of filler.
	body := func(prefix []byte, count uint64, rest int) []byte {
		b := append(append([]byte("IBD2"), binary.AppendUvarint(nil, ChunkMembers)...), prefix...)
		b = binary.AppendUvarint(b, count)
		b = append(b, make([]byte, rest)...)
		return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}
	for _, c := range []struct {
		name   string
		prefix []byte // what comes before the count
		s      int
	}{
		{"files", nil, 2},
		{"groups", []byte{0}, 20}, // no files
	} {
		const rest = 199          // r = 200: the count takes one byte
		limit := (rest + 1) / c.s // ⌊r/s⌋, below 128 so the count is one byte
		_, err := DecodeDirectory(body(c.prefix, uint64(limit+1), rest), 1<<20)
		if err == nil || !strings.Contains(err.Error(), "above "+strconv.Itoa(limit)) {
			t.Errorf("%s: a count of %d in %d bytes: %v, want refused as above %d", c.name, limit+1, rest+1, err, limit)
		}
		_, err = DecodeDirectory(body(c.prefix, uint64(limit), rest), 1<<20)
		if err == nil || strings.Contains(err.Error(), "above") {
			t.Errorf("%s: a count of %d in %d bytes: %v, want refused for what the bytes hold, not the count", c.name, limit, rest+1, err)
		}
	}
}

// TestFormatFilterCap pins docs/format.md §2.4 and §3.2 on the cap of a
// filter: it applies before the class rounding, the default 128 MiB is
// itself a size class, and a capped filter is the one kind whose
// false-positive rate exceeds its target, which is how a reader tells it.
func TestFormatFilterCap(t *testing.T) {
	const defaultCap = 128 << 20
	if n := defaultCap / sbbf.BlockBytes; n != 4_194_304 || SizeClass(n) != n || n != 32<<17 {
		t.Errorf("the default cap of %d blocks is not the size class 32·2^17 (its class is %d)", n, SizeClass(n))
	}
	const fpp, capBlocks = 0.01, 41 // 41 is not a class: above 32, classes are even
	if SizeClass(capBlocks) == capBlocks {
		t.Fatal("the test's cap is a class")
	}
	capped := 0
	for ndv := uint64(0); ndv < 2000; ndv += 13 {
		n, err := sbbf.NumBlocks(ndv, fpp, capBlocks*sbbf.BlockBytes)
		if err != nil {
			t.Fatal(err)
		}
		uncapped, _ := sbbf.NumBlocks(ndv, fpp, defaultCap)
		if n != min(uncapped, capBlocks) {
			t.Fatalf("ndv %d: %d blocks under the cap, want min(%d, %d): the cap applies to the optimal N", ndv, n, uncapped, capBlocks)
		}
		if isCapped := uncapped > capBlocks; isCapped != (sbbf.FalsePositiveRate(n, ndv) > fpp) {
			t.Fatalf("ndv %d, %d blocks: capped %v, but FPR %v against fpp %v", ndv, n, isCapped, sbbf.FalsePositiveRate(n, ndv), fpp)
		} else if isCapped {
			capped++
		}
	}
	if capped == 0 {
		t.Fatal("no ndv reached the cap")
	}
	// A filter of no values is one block that holds nothing (§3.2).
	if n, _ := sbbf.NumBlocks(0, fpp, defaultCap); n != 1 || sbbf.New(n).Check(0x0123456789abcdef) {
		t.Errorf("ndv 0: %d blocks; want one, answering no", n)
	}
}
