package puffin

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strconv"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// testContents are blob contents of the sizes that matter to zstd frame
// headers: empty, below 256 bytes (where klauspost would otherwise leave out
// the content size), one block, and several blocks.
var testContents = [][]byte{
	nil,
	[]byte("abcdefghi"),
	[]byte(javaBlob1),
	bytes.Repeat([]byte("0123456789abcdef"), 1<<10),
	bytes.Repeat([]byte("0123456789abcdef"), 64<<10),
}

// TestZstdFrameHeader checks that what the Writer stores is what Iceberg's
// Java reader requires: one frame that declares its content size, with a
// checksum like Java's writer (whose small frames start 0x24, as ours do).
func TestZstdFrameHeader(t *testing.T) {
	for _, content := range testContents {
		stored, err := compress(CodecZstd, content)
		if err != nil {
			t.Fatal(err)
		}
		var h zstd.Header
		if err := h.Decode(stored); err != nil {
			t.Fatal(err)
		}
		if !h.HasFCS || h.FrameContentSize != uint64(len(content)) || !h.SingleSegment {
			t.Errorf("%d bytes: header %+v", len(content), h)
		}
		if len(content) > 0 && !h.HasCheckSum {
			t.Errorf("%d bytes: no checksum", len(content))
		}
		if len(content) > 0 && len(content) < 256 && stored[4] != 0x24 {
			t.Errorf("%d bytes: frame header descriptor %#x, want 0x24 as Java writes", len(content), stored[4])
		}
		got, err := zstdCodec.decompress(stored, DefaultMaxBlobSize)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%d bytes: round trip gave %d bytes, %v", len(content), len(got), err)
		}
	}
}

// TestLZ4RoundTrip decodes LZ4 frames pierrec/lz4 writes with each of its
// frame options.
func TestLZ4RoundTrip(t *testing.T) {
	options := [][]lz4.Option{
		nil,
		{lz4.ChecksumOption(false)},
		{lz4.BlockChecksumOption(true)},
		{lz4.BlockSizeOption(lz4.Block4Mb)},
		{lz4.CompressionLevelOption(lz4.Level9)},
	}
	// pierrec/lz4 cannot declare a content size of zero, which Puffin
	// requires, so empty content is left out.
	for _, content := range testContents[1:] {
		for _, opts := range options {
			got, err := lz4Codec.decompress(lz4Frame(t, content, opts...), DefaultMaxBlobSize)
			if err != nil || !bytes.Equal(got, content) {
				t.Errorf("%d bytes, %d options: %d bytes, %v", len(content), len(opts), len(got), err)
			}
		}
	}
}

// TestZstdErrors reads broken zstd blobs through the Reader.
func TestZstdErrors(t *testing.T) {
	valid, _ := compress(CodecZstd, []byte(javaBlob1))
	noSize, _ := zstd.NewWriter(nil, zstd.WithSingleSegment(false))
	corrupt := bytes.Clone(valid)
	corrupt[len(corrupt)-10] ^= 0xff
	lying := bytes.Clone(valid)
	lying[5]-- // the one-byte content size of a small single-segment frame
	skippable := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0x184d2a50), 0)
	testBlobErrors(t, CodecZstd, []blobErrorTest{
		{"empty", nil, 0, "zstd: truncated frame"},
		{"not zstd", []byte("not a zstd frame"), 0, "zstd: invalid input: magic number mismatch"},
		{"truncated header", valid[:5], 0, "zstd: truncated frame"},
		{"truncated block", valid[:20], 0, "zstd: truncated frame"},
		{"truncated checksum", valid[:len(valid)-1], 0, "zstd: truncated frame"},
		{"no content size", noSize.EncodeAll([]byte("abc"), nil), 0, "zstd: frame does not declare its content size"},
		{"trailing bytes", append(bytes.Clone(valid), "xyz"...), 0, "zstd: 3 bytes after the frame"},
		{"two frames", append(bytes.Clone(valid), valid...), 0, "zstd: " + strconv.Itoa(len(valid)) + " bytes after the frame"},
		{"skippable frame", skippable, 0, "zstd: skippable frame"},
		{"over the limit", valid, 82, "zstd: content size 83 exceeds the limit of 82 bytes"},
		{"corrupt block", corrupt, 0, "zstd: "},
		{"content size too small", lying, 0, "zstd: "},
	})
}

// blobErrorTest is a blob that ReadBlob must refuse with an error containing
// want, with the blob size limit set to limit unless it is zero.
type blobErrorTest struct {
	name   string
	stored []byte
	limit  int64
	want   string
}

func testBlobErrors(t *testing.T, codec string, tests []blobErrorTest) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []ReadOption{}
			if tt.limit > 0 {
				opts = append(opts, WithMaxBlobSize(tt.limit))
			}
			_, err := mustOpen(t, oneBlobFile(codec, tt.stored), opts...).ReadBlob(0)
			wantErr(t, err, "puffin: blob 0 (t): "+tt.want)
		})
	}
}

// TestLZ4Errors reads broken LZ4 blobs through the Reader.
func TestLZ4Errors(t *testing.T) {
	content := []byte(javaBlob1)
	valid := lz4Frame(t, content)
	noChecksum := lz4Frame(t, content, lz4.ChecksumOption(false))
	badChecksum := bytes.Clone(valid)
	badChecksum[len(badChecksum)-1] ^= 0xff
	badHeader := bytes.Clone(valid)
	badHeader[14] ^= 0xff // the header checksum
	hugeBlock := append(bytes.Clone(valid[:15]), 0xff, 0xff, 0xff, 0x7f)
	testBlobErrors(t, CodecLZ4, []blobErrorTest{
		{"empty", nil, 0, "lz4: truncated frame"},
		{"not lz4", []byte("not an lz4 frame"), 0, "lz4: bad LZ4 frame magic"},
		{"truncated header", valid[:10], 0, "lz4: truncated frame"},
		{"truncated block", valid[:30], 0, "lz4: truncated frame"},
		{"truncated checksum", valid[:len(valid)-1], 0, "lz4: truncated frame"},
		{"no content size", lz4Frame(t, content, lz4.SizeOption(0)), 0, "lz4: frame does not declare its content size"},
		{"trailing bytes", append(bytes.Clone(valid), "xyz"...), 0, "lz4: 3 bytes after the frame"},
		{"two frames", append(bytes.Clone(valid), valid...), 0, "lz4: " + strconv.Itoa(len(valid)) + " bytes after the frame"},
		{"over the limit", lz4Frame(t, make([]byte, 200)), 199, "lz4: content size 200 exceeds the limit of 199 bytes"},
		{"bad content checksum", badChecksum, 0, "lz4: "},
		{"bad header checksum", badHeader, 0, "lz4: "},
		{"block too large", hugeBlock, 0, "lz4: block of 2147483647 bytes exceeds the LZ4 maximum"},
		{"more than declared", insertLZ4Blocks(noChecksum, []byte{4, 0, 0, 0x80, 'm', 'o', 'r', 'e'}), 0, "lz4: frame does not decode to its declared content size 83"},
	})
}

// insertLZ4Blocks adds encoded blocks before the end mark of an LZ4 frame
// without a content checksum, leaving its header, and so its declared
// content size, as it was.
func insertLZ4Blocks(frame, blocks []byte) []byte {
	end := len(frame) - 4
	return append(append(bytes.Clone(frame[:end]), blocks...), frame[end:]...)
}

// TestBombs reads small frames that decode to 64 MiB and checks that they
// are stopped at the limit without allocating what they decode to.
func TestBombs(t *testing.T) {
	const bombSize = 64 << 20
	zeros := make([]byte, bombSize)

	zstdBomb, _ := compress(CodecZstd, zeros)
	zstdLying := bytes.Clone(zstdBomb)
	binary.LittleEndian.PutUint32(zstdLying[5:], 1000) // the four-byte content size

	lz4Bomb := lz4Frame(t, zeros, lz4.ChecksumOption(false))
	// The bomb's blocks behind the header of a frame declaring 3 bytes.
	lz4Lying := insertLZ4Blocks(lz4Frame(t, []byte("abc"), lz4.ChecksumOption(false)), lz4Bomb[15:len(lz4Bomb)-4])

	tests := []struct {
		name   string
		codec  string
		stored []byte
		want   string
	}{
		{"zstd declared", CodecZstd, zstdBomb, "content size 67108864 exceeds the limit of 1048576"},
		{"zstd undeclared", CodecZstd, zstdLying, "zstd: "},
		{"lz4 declared", CodecLZ4, lz4Bomb, "content size 67108864 exceeds the limit of 1048576"},
		{"lz4 undeclared", CodecLZ4, lz4Lying, "lz4: frame does not decode to its declared content size 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.stored) > bombSize/100 {
				t.Fatalf("bomb of %d bytes is not small", len(tt.stored))
			}
			r := mustOpen(t, oneBlobFile(tt.codec, tt.stored), WithMaxBlobSize(1<<20))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := r.ReadBlob(0)
			runtime.ReadMemStats(&after)
			wantErr(t, err, tt.want)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bombSize/8 {
				t.Errorf("allocated %d bytes for a bomb of %d", alloc, bombSize)
			}
		})
	}
}
