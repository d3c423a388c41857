package puffin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// TestGoldenFiles reads every golden file and compares the footer and blob
// contents with what expected.json records, with and without a footer size.
func TestGoldenFiles(t *testing.T) {
	for _, name := range goldenFiles {
		t.Run(name, func(t *testing.T) {
			data, want := golden(t, name), expected(t, name)
			var wantFooter Footer
			if err := json.Unmarshal(want.FooterJSON, &wantFooter); err != nil {
				t.Fatal(err)
			}
			for _, opts := range [][]ReadOption{nil, {WithFooterSize(want.FooterSizeTotal)}} {
				r := mustOpen(t, data, opts...)
				if got := r.Footer(); !reflect.DeepEqual(got, wantFooter) {
					t.Errorf("footer\n got %+v\nwant %+v", got, wantFooter)
				}
				if r.FileSize() != want.Size || r.FooterSize() != want.FooterSizeTotal {
					t.Errorf("FileSize, FooterSize = %d, %d; want %d, %d", r.FileSize(), r.FooterSize(), want.Size, want.FooterSizeTotal)
				}
				if len(r.Blobs()) != len(want.Blobs) {
					t.Fatalf("%d blobs, want %d", len(r.Blobs()), len(want.Blobs))
				}
				for i, b := range r.Blobs() {
					if !reflect.DeepEqual(b.CompressionCodec, want.Blobs[i].Codec) {
						t.Errorf("blob %d codec %v, want %v", i, b.CompressionCodec, want.Blobs[i].Codec)
					}
					content, err := r.ReadBlob(i)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(content, unhex(t, want.Blobs[i].DecompressedHex)) {
						t.Errorf("blob %d content %x, want %s", i, content, want.Blobs[i].DecompressedHex)
					}
					raw, err := r.ReadRawBlob(i)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(raw, data[b.Offset:b.Offset+b.Length]) {
						t.Errorf("blob %d raw bytes differ from the file's", i)
					}
				}
			}
		})
	}
}

// TestGoldenFacts pins the facts the Iceberg projects' own tests assert, in
// case expected.json were wrong in the same way as the reader.
func TestGoldenFacts(t *testing.T) {
	footerSizes := map[string]int64{
		"iceberg-java/empty-puffin-uncompressed.bin":          28,
		"iceberg-java/sample-metric-data-uncompressed.bin":    259,
		"iceberg-java/sample-metric-data-compressed-zstd.bin": 314,
	}
	for name, want := range footerSizes {
		if got := mustOpen(t, golden(t, name)).FooterSize(); got != want {
			t.Errorf("%s: FooterSize %d, want %d", name, got, want)
		}
	}

	r := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-uncompressed.bin"))
	if got := r.Properties(); !reflect.DeepEqual(got, map[string]string{CreatedBy: "Test 1234"}) {
		t.Errorf("properties %v", got)
	}
	b0, _ := r.ReadBlob(0)
	b1, _ := r.ReadBlob(1)
	if string(b0) != "abcdefghi" || string(b1) != javaBlob1 {
		t.Errorf("blobs %q, %q", b0, b1)
	}

	dv := mustOpen(t, golden(t, "iceberg-go/single-blob-dv.puffin"))
	got, err := dv.ReadBlob(0)
	if err != nil || !bytes.Equal(got, golden(t, "iceberg-go/deletion-vector-v1-payload.bin")) {
		t.Errorf("DV blob %x, %v; want deletion-vector-v1-payload.bin", got, err)
	}
	if b := dv.Blobs()[0]; b.Fields[0] != 2147483645 || b.SnapshotID != -1 || b.Properties["cardinality"] != "5" {
		t.Errorf("DV blob metadata %+v", b)
	}

	trino := mustOpen(t, golden(t, "iceberg-python-trino/theta-sketches.puffin"))
	for i, b := range trino.Blobs() {
		sketch, err := trino.ReadBlob(i)
		if err != nil || len(sketch) != 56 || b.Fields[0] != int32(i+1) || b.SnapshotID != 3906904963261072048 {
			t.Errorf("sketch %d: %d bytes, %v, %+v", i, len(sketch), err, b)
		}
	}
}

// TestReaderCopies checks that callers cannot change the Reader's footer
// through what it returns.
func TestReaderCopies(t *testing.T) {
	r := mustOpen(t, golden(t, "iceberg-python-trino/theta-sketches.puffin"))
	f := r.Footer()
	f.Blobs[0].Fields[0] = 99
	f.Blobs[0].Properties["ndv"] = "x"
	*f.Blobs[0].CompressionCodec = "x"
	f.Properties[CreatedBy] = "x"
	if !reflect.DeepEqual(r.Footer(), mustOpen(t, golden(t, "iceberg-python-trino/theta-sketches.puffin")).Footer()) {
		t.Error("changing a returned footer changed the Reader")
	}
}

// TestFooterSizeHint checks the hint as Iceberg's Java TestPuffinReader
// does: the right size opens the file, a size off by a little fails on the
// start magic and one off by a lot is refused outright.
func TestFooterSizeHint(t *testing.T) {
	data := golden(t, "iceberg-java/sample-metric-data-compressed-zstd.bin")
	const footerSize = 314
	mustOpen(t, data, WithFooterSize(footerSize))
	for _, delta := range []int64{-10, -1, 1, 10} {
		_, err := openBytes(data, WithFooterSize(footerSize+delta))
		wantErr(t, err, "expected magic at offset")
	}
	for _, hint := range []int64{footerSize + 10000, footerSize - 10000, -1, 15, int64(len(data)) - 3} {
		_, err := openBytes(data, WithFooterSize(hint))
		wantErr(t, err, "invalid footer size")
	}
	_, err := openBytes(data, WithFooterSize(footerSize), WithMaxFooterSize(100))
	wantErr(t, err, "exceeds the limit")

	empty := golden(t, "iceberg-java/empty-puffin-uncompressed.bin")
	mustOpen(t, empty, WithFooterSize(28))
	_, err = openBytes(empty, WithFooterSize(32))
	wantErr(t, err, "invalid footer size")

	// A hint that happens to land on a magic is caught by the trailer's
	// payload size: the blob ends with "PFA1" just before the footer.
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	w.AddBlob(BlobInput{Type: "t"}, []byte("xxxxPFA1"))
	stats, _ := w.Finish()
	_, err = openBytes(buf.Bytes(), WithFooterSize(stats.FooterSize+4))
	wantErr(t, err, "does not match the payload size")
}

// TestOpenReads counts the ReadAt calls Open makes, which are requests on
// object storage.
func TestOpenReads(t *testing.T) {
	build := func(blobSize, propSize int) []byte {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf)
		w.SetProperty("pad", strings.Repeat("p", propSize))
		w.AddBlob(BlobInput{Type: "t"}, make([]byte, blobSize))
		w.Finish()
		return buf.Bytes()
	}
	tests := []struct {
		name  string
		data  []byte
		hint  bool
		reads int
	}{
		{"small file", build(10, 10), false, 1},
		{"large file", build(1<<20, 10), false, 1},
		{"large file with hint", build(1<<20, 10), true, 1},
		{"large footer", build(1<<20, 40<<10), false, 2},
		{"large footer with hint", build(1<<20, 40<<10), true, 1},
		{"footer spanning the file", build(0, 40<<10), false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			footerSize := mustOpen(t, tt.data).FooterSize()
			c := &countingReaderAt{r: bytes.NewReader(tt.data)}
			var opts []ReadOption
			if tt.hint {
				opts = append(opts, WithFooterSize(footerSize))
			}
			if _, err := Open(c, int64(len(tt.data)), opts...); err != nil {
				t.Fatal(err)
			}
			if len(c.reads) != tt.reads {
				t.Fatalf("%d reads %v, want %d", len(c.reads), c.reads, tt.reads)
			}
			var total int64
			for _, rd := range c.reads {
				total += rd[1]
			}
			want := min(max(footerSize, defaultTailSize), int64(len(tt.data)))
			if tt.hint {
				want = footerSize
			}
			if total != want {
				t.Errorf("read %d bytes %v; footer is %d", total, c.reads, footerSize)
			}
		})
	}
}

// TestLZ4Footer reads compressed footers from two LZ4 encoders; no Iceberg
// implementation writes them yet.
func TestLZ4Footer(t *testing.T) {
	plain := golden(t, "iceberg-java/sample-metric-data-uncompressed.bin")
	want := mustOpen(t, plain).Footer()
	payload := plain[96+MagicSize : len(plain)-trailerSize]
	data := assemble(plain[4:96], lz4Frame(t, payload), FooterFlagCompressed)
	r := mustOpen(t, data)
	if !reflect.DeepEqual(r.Footer(), want) {
		t.Errorf("footer %+v, want %+v", r.Footer(), want)
	}
	if blob, _ := r.ReadBlob(1); string(blob) != javaBlob1 {
		t.Errorf("blob 1 %q", blob)
	}
	mustOpen(t, data, WithFooterSize(r.FooterSize()))

	cli := mustOpen(t, readFile(t, lz4CLIFile))
	if got := cli.Properties()["source"]; got != "lz4-cli" || len(cli.Blobs()) != 0 {
		t.Errorf("lz4 CLI footer: %+v", cli.Footer())
	}
}

// TestLZ4Blob reads a blob stored as an LZ4 frame.
func TestLZ4Blob(t *testing.T) {
	content := bytes.Repeat([]byte("bloom filter block "), 1000)
	r := mustOpen(t, oneBlobFile(CodecLZ4, lz4Frame(t, content)))
	got, err := r.ReadBlob(0)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("ReadBlob = %d bytes, %v", len(got), err)
	}
}

// TestOpenErrors feeds Open broken files and checks that each is refused
// with an error naming what is wrong.
func TestOpenErrors(t *testing.T) {
	java := golden(t, "iceberg-java/sample-metric-data-uncompressed.bin")
	payloadStart := 96 + MagicSize // the footer starts at 96
	modified := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(java))
	}
	setPayloadSize := func(n uint32) []byte {
		return modified(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-trailerSize:], n)
			return b
		})
	}
	footerWith := func(blobs string) []byte {
		return assemble(make([]byte, 16), []byte(`{"blobs":[`+blobs+`]}`), 0)
	}
	blob := func(offset, length string) string {
		return `{"type":"t","fields":[],"snapshot-id":1,"sequence-number":1,"offset":` + offset + `,"length":` + length + `}`
	}
	emptyPayload := []byte(`{"blobs":[]}`)
	tests := []struct {
		name string
		data []byte
		opts []ReadOption
		want string
	}{
		{"empty", nil, nil, "too small"},
		{"too small", java[:19], nil, "too small"},
		{"header magic", modified(func(b []byte) []byte { b[0] = 'X'; return b }), nil, `expected magic at offset 0, found "XFA1"`},
		{"footer magic", modified(func(b []byte) []byte { b[96] = 'X'; return b }), nil, "expected magic at offset 96"},
		{"trailer magic", modified(func(b []byte) []byte { b[len(b)-1] = 'X'; return b }), nil, "expected magic at offset 351"},
		{"truncated", java[:len(java)-1], nil, "expected magic"},
		{"truncated start", java[10:], nil, "expected magic at offset 0"},
		{"extended", append(bytes.Clone(java), 0), nil, "expected magic"},
		{"negative payload size", setPayloadSize(0xffffffff), nil, "negative footer payload size -1"},
		{"payload size past the file", setPayloadSize(uint32(len(java))), nil, "does not fit in a file of 355 bytes"},
		{"payload size past the header", setPayloadSize(243 + 96 - 3), nil, "does not fit"},
		{"payload size too large", setPayloadSize(math.MaxInt32), nil, "exceeds the limit"},
		{"payload size over the option", java, []ReadOption{WithMaxFooterSize(242)}, "footer payload size 243 exceeds the limit of 242"},
		{"payload size off by one", setPayloadSize(242), nil, "expected magic at offset 97"},
		{"unknown flag bit", modified(func(b []byte) []byte { b[len(b)-8] = 2; return b }), nil, "unknown footer flags 02000000"},
		{"unknown flag byte", modified(func(b []byte) []byte { b[len(b)-5] = 0x80; return b }), nil, "unknown footer flags 00000080"},
		{"compressed flag on plain JSON", modified(func(b []byte) []byte { b[len(b)-8] = 1; return b }), nil, "compressed footer: lz4: bad LZ4 frame magic"},
		{"bad JSON", modified(func(b []byte) []byte { b[payloadStart] = '['; return b }), nil, "decode footer JSON"},
		{"trailing content after JSON", assemble(nil, []byte(`{"blobs":[]}x`), 0), nil, "after top-level value"},
		{"second JSON value", assemble(nil, []byte(`{"blobs":[]}{}`), 0), nil, "after top-level value"},
		{"JSON null", assemble(nil, []byte(`null`), 0), nil, `no "blobs" list`},
		{"no blobs key", assemble(nil, []byte(`{"properties":{}}`), 0), nil, `no "blobs" list`},
		{"empty payload", assemble(nil, nil, 0), nil, "decode footer JSON"},
		{"wrong JSON type", assemble(nil, []byte(`{"blobs":[{"type":"t","fields":["a"]}]}`), 0), nil, "decode footer JSON"},
		{"field id out of range", assemble(nil, []byte(`{"blobs":[{"type":"t","fields":[2147483648]}]}`), 0), nil, "decode footer JSON"},
		{"no type", footerWith(`{"fields":[],"offset":4,"length":1}`), nil, "blob 0 (): blob has no type"},
		{"negative offset", footerWith(blob("-4", "1")), nil, "offset -4 is before the end of the header magic"},
		{"offset in the header magic", footerWith(blob("3", "1")), nil, "offset 3 is before the end of the header magic"},
		{"negative length", footerWith(blob("4", "-1")), nil, "negative length -1"},
		{"into the footer", footerWith(blob("4", "17")), nil, "reaches past the footer start at 20"},
		{"past the file", footerWith(blob("4", "1000")), nil, "reaches past the footer"},
		{"huge length", footerWith(blob("4", "1099511627776")), nil, "reaches past the footer"},
		{"offset+length overflow", footerWith(blob("4", "9223372036854775807")), nil, "reaches past the footer"},
		{"offset past the file", footerWith(blob("9223372036854775807", "1")), nil, "reaches past the footer"},
		{"second blob bad", footerWith(blob("4", "16") + "," + blob("4", "-1")), nil, "blob 1 (t): negative length"},
		{"zero blob limit", java, []ReadOption{WithMaxBlobSize(0)}, "size limits must be positive"},
		{"negative footer limit", java, []ReadOption{WithMaxFooterSize(-1)}, "size limits must be positive"},
		{"lz4 footer truncated", assemble(nil, lz4Frame(t, emptyPayload)[:20], FooterFlagCompressed), nil, "compressed footer: lz4: truncated frame"},
		{"lz4 footer over the limit", assemble(nil, lz4Frame(t, []byte(`{"blobs":[]`+strings.Repeat(" ", 200)+`}`)), FooterFlagCompressed), []ReadOption{WithMaxFooterSize(100)}, "content size 212 exceeds the limit of 100"},
		{"lz4 footer without content size", assemble(nil, lz4Frame(t, emptyPayload, lz4.SizeOption(0)), FooterFlagCompressed), nil, "does not declare its content size"},
		{"lz4 footer decodes past its size", assemble(nil, insertLZ4Blocks(lz4Frame(t, emptyPayload, lz4.ChecksumOption(false)), []byte{1, 0, 0, 0x80, ' '}), FooterFlagCompressed), nil, "compressed footer: lz4: frame does not decode to its declared content size 12"},
		{"lz4 footer bad JSON", assemble(nil, lz4Frame(t, []byte(`{"blobs":`)), FooterFlagCompressed), nil, "decode footer JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openBytes(tt.data, tt.opts...)
			wantErr(t, err, tt.want)
		})
	}
}

// TestTruncatedReaderAt opens files whose io.ReaderAt holds fewer bytes
// than the size Open is given.
func TestTruncatedReaderAt(t *testing.T) {
	java := golden(t, "iceberg-java/sample-metric-data-uncompressed.bin")
	_, err := Open(bytes.NewReader(java[:100]), int64(len(java)))
	wantErr(t, err, "read footer: unexpected EOF")

	// The footer is intact but the blobs are gone; the footer size keeps
	// Open from reading them.
	r, err := Open(&holeReaderAt{java, 4, 96}, int64(len(java)), WithFooterSize(259))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadBlob(1)
	wantErr(t, err, "blob 1 (some-other-blob): unexpected EOF")
}

// holeReaderAt reads data but fails reads that touch [from, to).
type holeReaderAt struct {
	data     []byte
	from, to int64
}

func (h *holeReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < h.to && off+int64(len(p)) > h.from {
		return 0, io.ErrUnexpectedEOF
	}
	return bytes.NewReader(h.data).ReadAt(p, off)
}

// TestReadBlobErrors checks the errors of reading blobs of a file that
// opened.
func TestReadBlobErrors(t *testing.T) {
	java := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-uncompressed.bin"))
	zstdFile := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-compressed-zstd.bin"))
	for _, i := range []int{-1, 2} {
		_, err := java.ReadBlob(i)
		wantErr(t, err, "blob index "+strconv.Itoa(i)+" out of range (file has 2 blobs)")
		_, err = java.ReadRawBlob(i)
		wantErr(t, err, "out of range")
		_, err = java.ReadBlobRange(i, 0, 1)
		wantErr(t, err, "out of range")
	}

	_, err := mustOpen(t, oneBlobFile("brotli", []byte("x"))).ReadBlob(0)
	wantErr(t, err, `puffin: blob 0 (t): unsupported compression codec "brotli"`)
	_, err = mustOpen(t, oneBlobFile("", []byte("x"))).ReadBlob(0)
	if err != nil {
		t.Errorf("uncompressed blob: %v", err)
	}

	limited := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-uncompressed.bin"), WithMaxBlobSize(20))
	_, err = limited.ReadBlob(1)
	wantErr(t, err, "blob 1 (some-other-blob): read of 83 bytes exceeds the limit of 20 bytes")
	_, err = limited.ReadRawBlob(1)
	wantErr(t, err, "exceeds the limit")
	if part, err := limited.ReadBlobRange(1, 10, 20); err != nil || string(part) != javaBlob1[10:30] {
		t.Errorf("range read under the limit: %q, %v", part, err)
	}
	_, err = limited.ReadBlobRange(1, 0, 21)
	wantErr(t, err, "exceeds the limit")

	limitedZstd := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-compressed-zstd.bin"), WithMaxBlobSize(82))
	_, err = limitedZstd.ReadBlob(1)
	wantErr(t, err, "blob 1 (some-other-blob): zstd: content size 83 exceeds the limit of 82 bytes")

	_, err = zstdFile.ReadBlobRange(0, 0, 1)
	wantErr(t, err, `blob 0 (some-blob): cannot read part of a blob compressed with "zstd"`)
	if raw, err := zstdFile.ReadRawBlob(0); err != nil || len(raw) != 22 {
		t.Errorf("raw zstd blob: %d bytes, %v", len(raw), err)
	}
}

// TestReadBlobRange reads parts of an uncompressed blob and checks the
// bounds.
func TestReadBlobRange(t *testing.T) {
	r := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-uncompressed.bin"))
	for _, rg := range [][2]int64{{0, 83}, {0, 0}, {83, 0}, {5, 32}, {51, 32}, {82, 1}} {
		got, err := r.ReadBlobRange(1, rg[0], rg[1])
		if err != nil || string(got) != javaBlob1[rg[0]:rg[0]+rg[1]] {
			t.Errorf("range %v: %q, %v", rg, got, err)
		}
	}
	for _, rg := range [][2]int64{{-1, 1}, {0, -1}, {84, 0}, {52, 32}, {0, 84}, {1, math.MaxInt64}, {math.MaxInt64, 1}} {
		_, err := r.ReadBlobRange(1, rg[0], rg[1])
		wantErr(t, err, "outside the blob's 83 bytes")
	}
}

// TestConcurrentReads reads one Reader from several goroutines, for the
// race detector.
func TestConcurrentReads(t *testing.T) {
	r := mustOpen(t, golden(t, "iceberg-python-trino/theta-sketches.puffin"))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range r.Blobs() {
				if _, err := r.ReadBlob(i); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// javaBlob1 is the second blob of Java's sample files.
const javaBlob1 = "some blob \x00 binary data \U0001F92F that is not very very very very very very long, is it?"
