package puffin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	icepuffin "github.com/apache/iceberg-go/puffin"
)

// javaSampleBlobs are the blobs of Java's sample-metric-data files, as
// Iceberg's TestPuffinWriter adds them.
var javaSampleBlobs = []struct {
	in   BlobInput
	data string
}{
	{BlobInput{Type: "some-blob", Fields: []int32{1}, SnapshotID: 2, SequenceNumber: 1}, "abcdefghi"},
	{BlobInput{Type: "some-other-blob", Fields: []int32{2}, SnapshotID: 2, SequenceNumber: 1}, javaBlob1},
}

// writeJavaSample writes Java's sample file with the given blob codec.
func writeJavaSample(t *testing.T, codec string) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.SetProperty(CreatedBy, "Test 1234")
	for _, b := range javaSampleBlobs {
		in := b.in
		in.Codec = codec
		if _, err := w.AddBlob(in, []byte(b.data)); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), stats
}

// TestWriterJavaEmpty reproduces Java's empty file: no blobs, and no
// properties key because none were set.
func TestWriterJavaEmpty(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	stats, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if want := golden(t, "iceberg-java/empty-puffin-uncompressed.bin"); !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("wrote %q, want %q", buf.Bytes(), want)
	}
	if stats.FileSize != 32 || stats.FooterSize != 28 || stats.Blobs == nil || len(stats.Blobs) != 0 {
		t.Errorf("stats %+v", stats)
	}
}

// TestWriterJavaUncompressed reproduces Java's uncompressed sample byte for
// byte, and returns the stats a statistics entry needs.
func TestWriterJavaUncompressed(t *testing.T) {
	data, stats := writeJavaSample(t, "")
	if want := golden(t, "iceberg-java/sample-metric-data-uncompressed.bin"); !bytes.Equal(data, want) {
		t.Errorf("wrote\n%q\nwant\n%q", data, want)
	}
	want := mustOpen(t, data)
	if stats.FileSize != 355 || stats.FooterSize != 259 || !reflect.DeepEqual(stats.Blobs, want.Blobs()) {
		t.Errorf("stats %+v", stats)
	}
}

// TestWriterZstd writes the zstd sample's content compressed with zstd. Go's
// zstd bytes differ from zstd-jni's, so it compares what the files say: the
// same footer JSON but for lengths and offsets, and the same contents, as
// read by this package and by iceberg-go.
func TestWriterZstd(t *testing.T) {
	data, stats := writeJavaSample(t, CodecZstd)
	r := mustOpen(t, data)
	java := mustOpen(t, golden(t, "iceberg-java/sample-metric-data-compressed-zstd.bin"))
	for i := range javaSampleBlobs {
		got, err := r.ReadBlob(i)
		want, _ := java.ReadBlob(i)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("blob %d: %q, %v; want %q", i, got, err, want)
		}
	}
	b := stats.Blobs
	wantFooter := fmt.Sprintf(`PFA1{"blobs":[`+
		`{"type":"some-blob","fields":[1],"snapshot-id":2,"sequence-number":1,"offset":4,"length":%d,"compression-codec":"zstd"},`+
		`{"type":"some-other-blob","fields":[2],"snapshot-id":2,"sequence-number":1,"offset":%d,"length":%d,"compression-codec":"zstd"}],`+
		`"properties":{"created-by":"Test 1234"}}`, b[0].Length, b[1].Offset, b[1].Length)
	if footer := string(data[len(data)-int(stats.FooterSize) : len(data)-trailerSize]); footer != wantFooter {
		t.Errorf("footer\n%s\nwant\n%s", footer, wantFooter)
	}

	ice, err := icepuffin.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range ice.Blobs() {
		if b.CompressionCodec == nil || *b.CompressionCodec != CodecZstd {
			t.Errorf("iceberg-go sees blob %d codec %v", i, b.CompressionCodec)
		}
	}
}

// TestWriterIcebergGoReads checks that iceberg-go reads what the Writer
// writes, including the metadata Java's samples do not have.
func TestWriterIcebergGoReads(t *testing.T) {
	dv := golden(t, "iceberg-go/deletion-vector-v1-payload.bin")
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	w.SetProperties(map[string]string{CreatedBy: "icebloom test", "a<b>&c": "\u00e9\U0001F92F"})
	in := BlobInput{
		Type:           BlobTypeDeletionVector,
		SnapshotID:     -1,
		SequenceNumber: -1,
		Properties:     map[string]string{"referenced-data-file": "data/x.parquet", "cardinality": "5"},
	}
	w.AddBlob(in, dv)
	w.AddBlob(BlobInput{Type: "icebloom-sbbf", Fields: []int32{2147483645, 7}, SnapshotID: 1 << 62, SequenceNumber: 3}, make([]byte, 64))
	stats, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"fields":[],`)) || !bytes.Contains(buf.Bytes(), []byte(`"a<b>&c":"é🤯"`)) {
		t.Errorf("footer does not write nil fields as [] or escapes HTML: %s", buf.Bytes())
	}

	ice, err := icepuffin.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ice.Blobs(), stats.Blobs) || !reflect.DeepEqual(ice.Properties(), mustOpen(t, buf.Bytes()).Properties()) {
		t.Errorf("iceberg-go reads\n%+v %v\nwant\n%+v", ice.Blobs(), ice.Properties(), stats.Blobs)
	}
	got, err := ice.ReadBlob(0)
	if err != nil || !bytes.Equal(got.Data, dv) {
		t.Errorf("iceberg-go ReadBlob: %v", err)
	}
}

// TestReadIcebergGoWriter checks that this package reads what iceberg-go's
// Writer writes.
func TestReadIcebergGoWriter(t *testing.T) {
	var buf bytes.Buffer
	w, _ := icepuffin.NewWriter(&buf)
	w.SetCreatedBy("iceberg-go")
	w.AddProperties(map[string]string{"k": "v"})
	var want []BlobMetadata
	for i, data := range []string{"first", "", "third blob"} {
		b, err := w.AddBlob(icepuffin.BlobMetadataInput{
			Type:       BlobTypeDataSketchesTheta,
			SnapshotID: int64(i),
			Fields:     []int32{int32(i)},
			Properties: map[string]string{"ndv": data},
		}, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, buf.Bytes())
	if !reflect.DeepEqual(r.Blobs(), want) || !reflect.DeepEqual(r.Properties(), map[string]string{CreatedBy: "iceberg-go", "k": "v"}) {
		t.Errorf("read %+v %v, want %+v", r.Blobs(), r.Properties(), want)
	}
	for i, b := range want {
		if got, err := r.ReadBlob(i); err != nil || string(got) != b.Properties["ndv"] {
			t.Errorf("blob %d: %q, %v", i, got, err)
		}
	}
}

// TestCopyBlob copies every blob of the golden files into one new file,
// through real files, and checks that each keeps its stored bytes and all
// its metadata but the offset.
func TestCopyBlob(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "copy.puffin"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, _ := NewWriter(out)
	type source struct {
		r *Reader
		i int
	}
	var sources []source
	for _, name := range goldenFiles {
		// Copy the golden file before opening it, so that nothing can write
		// to it through the test.
		path := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(path, golden(t, name), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		info, _ := f.Stat()
		r, err := Open(f, info.Size())
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Blobs() {
			if _, err := w.CopyBlob(r, i); err != nil {
				t.Fatal(err)
			}
			sources = append(sources, source{r, i})
		}
	}
	stats, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(copied)) != stats.FileSize {
		t.Fatalf("file is %d bytes, stats say %d", len(copied), stats.FileSize)
	}
	r := mustOpen(t, copied)
	if len(r.Blobs()) != len(sources) || len(sources) != 11 {
		t.Fatalf("%d blobs copied from %d", len(r.Blobs()), len(sources))
	}
	offset := int64(MagicSize)
	for j, b := range r.Blobs() {
		src := sources[j]
		want := src.r.Blobs()[src.i]
		if b.Offset != offset {
			t.Errorf("blob %d at %d, want %d", j, b.Offset, offset)
		}
		offset += b.Length
		want.Offset = b.Offset
		if !reflect.DeepEqual(b, want) {
			t.Errorf("blob %d metadata\n%+v\nwant\n%+v", j, b, want)
		}
		got, _ := r.ReadRawBlob(j)
		raw, _ := src.r.ReadRawBlob(src.i)
		if !bytes.Equal(got, raw) {
			t.Errorf("blob %d raw bytes differ", j)
		}
		got, err := r.ReadBlob(j)
		content, _ := src.r.ReadBlob(src.i)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("blob %d content differs: %v", j, err)
		}
	}
}

// TestWriterStreams checks that a blob reaches the io.Writer when it is
// added, not at Finish.
func TestWriterStreams(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	data := make([]byte, 1<<20)
	if _, err := w.AddBlob(BlobInput{Type: "t"}, data); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != MagicSize+len(data) {
		t.Errorf("%d bytes written after AddBlob, want %d", buf.Len(), MagicSize+len(data))
	}
	if _, err := w.CopyBlob(mustOpen(t, golden(t, "iceberg-go/single-blob-dv.puffin")), 0); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != MagicSize+len(data)+50 {
		t.Errorf("%d bytes written after CopyBlob", buf.Len())
	}
}

// TestWriterErrors checks what the Writer refuses and that it stops after a
// failed write, whose bytes it cannot take back.
func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	_, err := w.AddBlob(BlobInput{}, nil)
	wantErr(t, err, "blob has no type")
	for _, codec := range []string{CodecLZ4, "gzip"} {
		_, err = w.AddBlob(BlobInput{Type: "t", Codec: codec}, nil)
		wantErr(t, err, "add blob (t): unsupported compression codec "+fmt.Sprintf("%q", codec)+" for writing")
	}
	_, err = w.CopyBlob(mustOpen(t, golden(t, "iceberg-java/empty-puffin-uncompressed.bin")), 0)
	wantErr(t, err, "blob index 0 out of range")
	if buf.Len() != MagicSize {
		t.Errorf("refused blobs wrote %d bytes", buf.Len()-MagicSize)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	_, err = w.AddBlob(BlobInput{Type: "t"}, nil)
	wantErr(t, err, "writer already finished")
	_, err = w.Finish()
	wantErr(t, err, "writer already finished")

	_, err = NewWriter(&failingWriter{})
	wantErr(t, err, "puffin: write: disk full")

	fw := &failingWriter{room: 10}
	w, _ = NewWriter(fw)
	_, err = w.AddBlob(BlobInput{Type: "t"}, []byte("0123456789"))
	wantErr(t, err, "add blob 0 (t): disk full")
	_, err = w.AddBlob(BlobInput{Type: "u"}, nil)
	wantErr(t, err, "add blob 0 (t): disk full")
	_, err = w.Finish()
	wantErr(t, err, "add blob 0 (t): disk full")

	w, _ = NewWriter(&failingWriter{room: 4, short: true})
	_, err = w.Finish()
	wantErr(t, err, "short write")

	// A source whose blob bytes cannot be read.
	java := golden(t, "iceberg-java/sample-metric-data-uncompressed.bin")
	src, _ := Open(&holeReaderAt{java, 4, 96}, int64(len(java)), WithFooterSize(259))
	w, _ = NewWriter(io.Discard)
	_, err = w.CopyBlob(src, 1)
	wantErr(t, err, "add blob 0 (some-other-blob): unexpected EOF")
}

// failingWriter takes room bytes and then fails, or with short, writes
// less than it is given without saying why.
type failingWriter struct {
	room  int
	short bool
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= f.room {
		f.room -= len(p)
		return len(p), nil
	}
	n := f.room
	f.room = 0
	if f.short {
		return n, nil
	}
	return n, errors.New("disk full")
}

// TestWriterProperties checks how file properties reach the footer.
func TestWriterProperties(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	w.SetProperties(nil)
	w.SetProperties(map[string]string{"b": "1", "a": "2"})
	w.SetProperty("b", "3")
	w.Finish()
	if !strings.HasSuffix(string(buf.Bytes()[:buf.Len()-trailerSize]), `{"blobs":[],"properties":{"a":"2","b":"3"}}`) {
		t.Errorf("footer %q", buf.Bytes())
	}
}
