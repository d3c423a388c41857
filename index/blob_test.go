package index_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

func sampleEntry() index.Entry {
	return index.Entry{
		DataFile:       "s3://bucket/db/t/data/00000-0-abc.parquet",
		DataFileSize:   123456,
		FieldID:        3,
		ValueType:      iceberg.DecimalTypeOf(12, 2),
		NDV:            3,
		FPP:            0.01,
		SnapshotID:     3055729675574597004,
		SequenceNumber: 7,
	}
}

// TestEntryRoundTrip writes an entry as a Puffin blob, reads the file back,
// and gets the same entry and the same bitset, stored uncompressed and
// readable one block at a time.
func TestEntryRoundTrip(t *testing.T) {
	want := sampleEntry()
	filter := sbbf.New(4)
	for _, v := range []int64{100, 250, -7} {
		filter.Insert(hashing.Int64(v))
	}

	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBlob(puffin.BlobInput{Type: "apache-datasketches-theta-v1", Fields: []int32{1}}, []byte("sketch")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBlob(want.BlobInput(), filter.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}

	r, err := puffin.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	blobs := r.Blobs()
	if index.IsEntry(blobs[0]) || !index.IsEntry(blobs[1]) {
		t.Fatalf("IsEntry wrong for %v, %v", blobs[0].Type, blobs[1].Type)
	}
	if blobs[1].CompressionCodec != nil {
		t.Fatalf("bitset stored with codec %s", *blobs[1].CompressionCodec)
	}
	got, err := index.DecodeEntry(blobs[1])
	if err != nil {
		t.Fatal(err)
	}
	want.Offset, want.Length = blobs[1].Offset, int64(len(filter.Bytes()))
	if got.ValueType.String() != want.ValueType.String() {
		t.Fatalf("value type %v, want %v", got.ValueType, want.ValueType)
	}
	got.ValueType = want.ValueType
	if got != want {
		t.Fatalf("decoded %+v\nwant    %+v", got, want)
	}
	if got.NumBlocks() != 4 || !got.Covers(want.DataFile, want.DataFileSize) ||
		got.Covers(want.DataFile, want.DataFileSize+1) || got.Covers(want.DataFile+"x", want.DataFileSize) {
		t.Fatal("NumBlocks or Covers wrong")
	}
	if p := blobs[1].Properties; p["value-type"] != "decimal(12,2)" || p["hash"] != "xxhash64" || p["ndv"] != "3" ||
		p["fpp"] != "0.01" || p["data-file-size-in-bytes"] != "123456" {
		t.Fatalf("properties %v", p)
	}
	// One block, read alone, answers as the whole filter does.
	h := hashing.Int64(250)
	block := int64(sbbf.BlockIndex(h, got.NumBlocks()))
	b, err := r.ReadBlobRange(1, block*sbbf.BlockBytes, sbbf.BlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !sbbf.CheckBlock(b, h) {
		t.Fatal("the block of an inserted value does not hold it")
	}
}

// TestDecodeEntryRejects shows that every malformed entry is refused with an
// error naming the problem, so the reader treats its file as unindexed.
func TestDecodeEntryRejects(t *testing.T) {
	zstd := "zstd"
	good := func() puffin.BlobMetadata {
		in := sampleEntry().BlobInput()
		return puffin.BlobMetadata{Type: in.Type, Fields: in.Fields, SnapshotID: in.SnapshotID,
			SequenceNumber: in.SequenceNumber, Properties: in.Properties, Offset: 4, Length: 64}
	}
	if _, err := index.DecodeEntry(good()); err != nil {
		t.Fatalf("the good blob was rejected: %v", err)
	}
	cases := []struct {
		name, want string
		edit       func(*puffin.BlobMetadata)
	}{
		{"other type", "type", func(m *puffin.BlobMetadata) { m.Type = "bloom-filter-v1" }},
		{"no field", "field", func(m *puffin.BlobMetadata) { m.Fields = nil }},
		{"two fields", "field", func(m *puffin.BlobMetadata) { m.Fields = []int32{1, 2} }},
		{"compressed", "compressed", func(m *puffin.BlobMetadata) { m.CompressionCodec = &zstd }},
		{"empty", "length", func(m *puffin.BlobMetadata) { m.Length = 0 }},
		{"partial block", "length", func(m *puffin.BlobMetadata) { m.Length = 40 }},
		{"other hash", "hash", func(m *puffin.BlobMetadata) { m.Properties["hash"] = "murmur3" }},
		{"no hash", "hash", func(m *puffin.BlobMetadata) { delete(m.Properties, "hash") }},
		{"no data file", "referenced-data-file", func(m *puffin.BlobMetadata) { delete(m.Properties, "referenced-data-file") }},
		{"bad size", "data-file-size-in-bytes", func(m *puffin.BlobMetadata) { m.Properties["data-file-size-in-bytes"] = "12k" }},
		{"negative size", "data-file-size-in-bytes", func(m *puffin.BlobMetadata) { m.Properties["data-file-size-in-bytes"] = "-1" }},
		{"bad ndv", "ndv", func(m *puffin.BlobMetadata) { m.Properties["ndv"] = "" }},
		{"bad fpp", "fpp", func(m *puffin.BlobMetadata) { m.Properties["fpp"] = "1.5" }},
		{"bad value type", "value-type", func(m *puffin.BlobMetadata) { m.Properties["value-type"] = "list<int>" }},
	}
	for _, c := range cases {
		m := good()
		c.edit(&m)
		_, err := index.DecodeEntry(m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}
