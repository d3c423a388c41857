package puffin

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// fuzzLimit bounds footers and blobs while fuzzing, so that an input cannot
// make a run slow by declaring large sizes that the defaults would allow.
const fuzzLimit = 1 << 20

var fuzzLimits = []ReadOption{WithMaxBlobSize(fuzzLimit), WithMaxFooterSize(fuzzLimit)}

// seedFiles returns the golden files and handmade files for what they lack:
// compressed footers, LZ4 blobs and Go-written zstd blobs.
func seedFiles(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, name := range goldenFiles {
		seeds = append(seeds, golden(t, name))
	}
	seeds = append(seeds, readFile(t, lz4CLIFile))

	plain := golden(t, "iceberg-java/sample-metric-data-uncompressed.bin")
	payload := plain[96+MagicSize : len(plain)-trailerSize]
	seeds = append(seeds, assemble(plain[4:96], lz4Frame(t, payload), FooterFlagCompressed))
	seeds = append(seeds, oneBlobFile(CodecLZ4, lz4Frame(t, []byte(javaBlob1))))

	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	w.AddBlob(BlobInput{Type: "t", Codec: CodecZstd, Properties: map[string]string{"k": "v"}}, bytes.Repeat([]byte("block"), 100))
	w.AddBlob(BlobInput{Type: "u", Fields: []int32{1, 2}}, make([]byte, 64))
	w.Finish()
	return append(seeds, buf.Bytes())
}

// FuzzOpen opens arbitrary bytes as a Puffin file and, when they open,
// reads every blob in every way and copies the file; see checkFile.
func FuzzOpen(f *testing.F) {
	for _, seed := range seedFiles(f) {
		f.Add(seed)
	}
	f.Fuzz(checkFile)
}

// FuzzReadBlob decodes arbitrary bytes stored as a blob with a codec.
func FuzzReadBlob(f *testing.F) {
	for _, seed := range seedFiles(f) {
		r, err := openBytes(seed)
		if err != nil {
			f.Fatal(err)
		}
		for i, b := range r.Blobs() {
			raw, _ := r.ReadRawBlob(i)
			codec := ""
			if b.CompressionCodec != nil {
				codec = *b.CompressionCodec
			}
			f.Add(codec, raw)
		}
	}
	f.Fuzz(func(t *testing.T, codec string, stored []byte) {
		r, err := openBytes(oneBlobFile(codec, stored), fuzzLimits...)
		if err != nil {
			t.Fatal(err)
		}
		content, err := r.ReadBlob(0)
		switch {
		case err != nil:
		case len(content) > fuzzLimit:
			t.Fatalf("decoded %d bytes past the limit", len(content))
		case codec == "" && !bytes.Equal(content, stored):
			t.Fatal("uncompressed blob changed")
		}
	})
}

// checkFile opens data and, if it opens, checks that each blob reads
// whole, raw and in part consistently, and that copying every blob to a new
// file gives a file that opens with the same blobs.
func checkFile(t *testing.T, data []byte) {
	r, err := openBytes(data, fuzzLimits...)
	if err != nil {
		return
	}
	if r.FooterSize() < footerOverhead || r.FooterSize() > r.FileSize()-MagicSize {
		t.Fatalf("footer size %d in a file of %d bytes", r.FooterSize(), r.FileSize())
	}
	hinted, err := openBytes(data, append(fuzzLimits, WithFooterSize(r.FooterSize()))...)
	if err != nil {
		t.Fatalf("the file's own footer size %d does not open it: %v", r.FooterSize(), err)
	}
	if !sameFooter(hinted.Footer(), r.Footer()) {
		t.Fatal("the footer size gives another footer")
	}

	var copied bytes.Buffer
	w, _ := NewWriter(&copied)
	w.SetProperties(r.Properties())
	for i, b := range r.Blobs() {
		raw, err := r.ReadRawBlob(i)
		if err != nil && b.Length <= fuzzLimit || err == nil && int64(len(raw)) != b.Length {
			t.Fatalf("blob %d of %d bytes read raw as %d bytes: %v", i, b.Length, len(raw), err)
		}
		content, err := r.ReadBlob(i)
		if b.CompressionCodec == nil && raw != nil && (err != nil || !bytes.Equal(content, raw)) {
			t.Fatalf("uncompressed blob %d reads as %d bytes: %v", i, len(content), err)
		}
		if len(content) > fuzzLimit {
			t.Fatalf("blob %d decodes to %d bytes past the limit", i, len(content))
		}
		if b.CompressionCodec == nil && raw != nil {
			off := b.Length / 2
			part, err := r.ReadBlobRange(i, off, min(32, b.Length-off))
			if err != nil || !bytes.Equal(part, raw[off:off+int64(len(part))]) {
				t.Fatalf("blob %d range at %d: %v", i, off, err)
			}
		}
		if _, err := w.CopyBlob(r, i); err != nil {
			t.Fatalf("copy blob %d: %v", i, err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	c, err := openBytes(copied.Bytes(), fuzzLimits...)
	if err != nil {
		t.Fatalf("copy does not open: %v", err)
	}
	if !sameFooter(c.Footer(), r.Footer()) {
		t.Fatalf("copy has footer\n%+v\nwant\n%+v", c.Footer(), r.Footer())
	}
}

// sameFooter reports whether two footers describe the same blobs, wherever
// they are stored. A footer cannot tell an empty list or map from a missing
// one once written, so they compare equal.
func sameFooter(a, b Footer) bool {
	return maps.Equal(a.Properties, b.Properties) && slices.EqualFunc(a.Blobs, b.Blobs, func(x, y BlobMetadata) bool {
		return x.Type == y.Type && slices.Equal(x.Fields, y.Fields) &&
			x.SnapshotID == y.SnapshotID && x.SequenceNumber == y.SequenceNumber && x.Length == y.Length &&
			(x.CompressionCodec == nil) == (y.CompressionCodec == nil) &&
			(x.CompressionCodec == nil || *x.CompressionCodec == *y.CompressionCodec) &&
			maps.Equal(x.Properties, y.Properties)
	})
}

// TestMutatedInputs runs checkFile on the fuzz seeds mutated the ways
// Puffin files break, so that every go test exercises what FuzzOpen does,
// deterministically.
func TestMutatedInputs(t *testing.T) {
	seeds := seedFiles(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const runs = 20000
	opened := 0
	for range runs {
		data := bytes.Clone(seeds[rng.IntN(len(seeds))])
		for range 1 + rng.IntN(2) {
			data = mutate(rng, data)
		}
		checkFile(t, data)
		if _, err := openBytes(data, fuzzLimits...); err == nil {
			opened++
		}
	}
	// Mutations that keep a file valid reach the blob checks; make sure
	// there are enough of them for the test to mean something.
	if opened < runs/20 {
		t.Errorf("only %d of %d mutated files opened", opened, runs)
	}
	t.Logf("%d of %d mutated files opened", opened, runs)
}

// mutate changes data in one of the ways a Puffin file breaks.
func mutate(rng *rand.Rand, data []byte) []byte {
	if len(data) < trailerSize {
		return append(data, byte(rng.IntN(256)))
	}
	pos := rng.IntN(len(data))
	switch rng.IntN(9) {
	case 0: // flip a bit
		data[pos] ^= 1 << rng.IntN(8)
	case 1: // set a byte to one that means something in the format or JSON
		data[pos] = []byte{0, 1, 0x7f, 0x80, 0xff, '"', '-', '0', '9', '[', ']', '{', '}', ','}[rng.IntN(14)]
	case 2: // truncate
		data = data[:pos]
	case 3: // cut from the start
		data = data[pos:]
	case 4: // extend
		data = append(data, make([]byte, 1+rng.IntN(20))...)
	case 5: // change the payload size
		size := []uint32{0, 1, 0x7fffffff, 0x80000000, 0xffffffff, uint32(len(data)), rng.Uint32()}
		field := data[len(data)-trailerSize:]
		old := binary.LittleEndian.Uint32(field)
		binary.LittleEndian.PutUint32(field, append(size, old+1, old-1)[rng.IntN(len(size)+2)])
	case 6: // set the flags
		data[len(data)-8+rng.IntN(4)] = byte(1 << rng.IntN(8))
	case 7: // change a number, most often an offset or length in the footer
		digits := digitPositions(data)
		if len(digits) > 0 {
			data[digits[rng.IntN(len(digits))]] = "0123456789-"[rng.IntN(11)]
		}
	case 8: // insert bytes, moving what follows
		data = slices.Insert(data, pos, data[rng.IntN(len(data)):][:1]...)
	}
	return data
}

// digitPositions returns where data has an ASCII digit.
func digitPositions(data []byte) []int {
	var pos []int
	for i, c := range data {
		if '0' <= c && c <= '9' {
			pos = append(pos, i)
		}
	}
	return pos
}
