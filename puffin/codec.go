package puffin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The zstd coder pair is shared: EncodeAll and DecodeAll are safe for
// concurrent use, and building them per call would cost more than most
// blobs. They are made on first use so that a program that never touches
// zstd does not pay for them.
var (
	// zstdEncoder writes what Iceberg's Java reader requires: one frame
	// whose header carries the content size (single-segment frames always
	// do; klauspost leaves it out of small multi-segment frames), with a
	// checksum like Java's writer, and a valid frame even for empty input.
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil,
			zstd.WithEncoderCRC(true),
			zstd.WithSingleSegment(true),
			zstd.WithZeroFrames(true))
	})

	// zstdDecoder does not limit output itself: decompress checks the
	// declared content size against the caller's limit first, and DecodeAll
	// stops a frame that decodes past its declared size. The window limit
	// is raised from 512 MiB because a single-segment frame's window is its
	// content size, which the caller's limit already bounds; DecodeAll
	// decodes into its output, not a separate window buffer.
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxWindow(zstd.MaxWindowSize))
	})
)

// Decompress returns the content of a blob stored with codec (zstd or lz4),
// refusing content larger than limit, for a caller that read the blob's
// bytes itself (one range read of a blob whose place it knew).
func Decompress(codec string, data []byte, limit int64) ([]byte, error) {
	c, err := lookupCodec(codec)
	if err != nil {
		return nil, err
	}
	return c.decompress(data, limit)
}

// compress returns the bytes that store data in a blob compressed with
// codec, or data itself for no codec. Writing LZ4 is not offered because
// Iceberg's Java reader cannot read LZ4 blobs.
func compress(codec string, data []byte) ([]byte, error) {
	switch codec {
	case "":
		return data, nil
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(data, nil), nil
	default:
		return nil, fmt.Errorf("unsupported compression codec %q for writing (want %q or none)", codec, CodecZstd)
	}
}

// frameCodec is a compression codec blobs (and, for LZ4, footers) may be
// stored with.
type frameCodec struct {
	name string
	// contentSize checks that the stored bytes are one frame and returns
	// the content size the frame declares.
	contentSize func(data []byte) (uint64, error)
	// decode returns the content of a frame contentSize accepted. Its
	// errors name the codec, as pierrec/lz4's own do.
	decode func(data []byte, size uint64) ([]byte, error)
}

var (
	zstdCodec = &frameCodec{CodecZstd, zstdContentSize, decodeZstd}
	lz4Codec  = &frameCodec{CodecLZ4, lz4ContentSize, decodeLZ4}
)

// lookupCodec returns the codec a blob's "compression-codec" names.
func lookupCodec(name string) (*frameCodec, error) {
	switch name {
	case CodecZstd:
		return zstdCodec, nil
	case CodecLZ4:
		return lz4Codec, nil
	}
	return nil, fmt.Errorf("unsupported compression codec %q", name)
}

// decompress returns the content of data, refusing content larger than
// limit. The stored bytes must be exactly one frame that declares its
// content size, as the specification requires; checking the declaration
// before decoding refuses an oversized frame before anything is allocated
// for it, and decoding stops where the declaration says.
func (c *frameCodec) decompress(data []byte, limit int64) ([]byte, error) {
	size, err := c.contentSize(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	if size > uint64(limit) {
		return nil, fmt.Errorf("%s: content size %d exceeds the limit of %d bytes", c.name, size, limit)
	}
	return c.decode(data, size)
}

// decodeZstd decodes one zstd frame. It needs no size: DecodeAll itself
// fails a frame whose output differs from its declared size.
func decodeZstd(data []byte, _ uint64) ([]byte, error) {
	dec, err := zstdDecoder()
	if err == nil {
		data, err = dec.DecodeAll(data, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return data, nil
}

// decodeLZ4 decodes one LZ4 frame of the given content size. The output
// grows as it is read, never to a size taken from the frame on trust, and
// reading stops at the declared size: one more read then either finds the
// end of the frame, where the decoder checks the content checksum, or shows
// that the frame holds more, without decoding the rest.
func decodeLZ4(data []byte, size uint64) ([]byte, error) {
	zr := lz4.NewReader(bytes.NewReader(data))
	out, err := io.ReadAll(io.LimitReader(zr, int64(size)))
	if err != nil {
		return nil, err
	}
	var more [1]byte
	switch _, err := io.ReadFull(zr, more[:]); {
	case err == nil || uint64(len(out)) != size:
		return nil, fmt.Errorf("lz4: frame does not decode to its declared content size %d", size)
	case err != io.EOF:
		return nil, err
	}
	return out, nil
}

var errTruncatedFrame = errors.New("truncated frame")

// zstdContentSize checks that data is one zstd frame that declares its
// content size, and returns that size. It walks the block headers to find
// where the frame ends, so that a truncated frame, a second frame or
// trailing bytes are refused before decoding. The decoder checks the rest.
func zstdContentSize(data []byte) (uint64, error) {
	var h zstd.Header
	if err := h.Decode(data); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, errTruncatedFrame
		}
		return 0, err
	}
	if h.Skippable {
		return 0, errors.New("skippable frame instead of a data frame")
	}
	if !h.HasFCS {
		return 0, errors.New("frame does not declare its content size")
	}
	n := h.HeaderSize
	for last := false; !last; {
		if len(data)-n < 3 {
			return 0, errTruncatedFrame
		}
		block := int(data[n]) | int(data[n+1])<<8 | int(data[n+2])<<16
		n += 3
		last = block&1 == 1
		size := block >> 3
		if block>>1&3 == 1 {
			size = 1 // an RLE block stores its one byte once
		}
		if len(data)-n < size {
			return 0, errTruncatedFrame
		}
		n += size
	}
	if h.HasCheckSum {
		n += 4
	}
	return h.FrameContentSize, frameEnd(data, n)
}

// LZ4 frame format constants (lz4_Frame_format.md).
const (
	lz4Magic          = 0x184d2204
	lz4FlagDictID     = 1 << 0
	lz4FlagContentSum = 1 << 2
	lz4FlagSize       = 1 << 3
	lz4FlagBlockSum   = 1 << 4
	lz4Uncompressed   = 1 << 31
	lz4MaxBlockSize   = 4 << 20
)

// lz4ContentSize checks that data is one LZ4 frame that declares its
// content size, and returns that size. Like zstdContentSize it walks the
// blocks to find where the frame ends; the decoder checks the rest.
func lz4ContentSize(data []byte) (uint64, error) {
	const headerSize = 4 + 1 + 1 + 8 + 1 // magic, FLG, BD, content size, checksum
	if len(data) < 5 {
		return 0, errTruncatedFrame
	}
	if binary.LittleEndian.Uint32(data) != lz4Magic {
		return 0, errors.New("bad LZ4 frame magic")
	}
	flags := data[4]
	if flags&lz4FlagSize == 0 {
		return 0, errors.New("frame does not declare its content size")
	}
	n := headerSize
	if flags&lz4FlagDictID != 0 {
		n += 4
	}
	if len(data) < n {
		return 0, errTruncatedFrame
	}
	for {
		if len(data)-n < 4 {
			return 0, errTruncatedFrame
		}
		block := binary.LittleEndian.Uint32(data[n:])
		n += 4
		if block == 0 {
			break // end mark
		}
		size := int(block &^ lz4Uncompressed)
		if size > lz4MaxBlockSize {
			return 0, fmt.Errorf("block of %d bytes exceeds the LZ4 maximum", size)
		}
		if flags&lz4FlagBlockSum != 0 {
			size += 4
		}
		if len(data)-n < size {
			return 0, errTruncatedFrame
		}
		n += size
	}
	if flags&lz4FlagContentSum != 0 {
		n += 4
	}
	return binary.LittleEndian.Uint64(data[6:]), frameEnd(data, n)
}

// frameEnd checks that a frame found to end at n is all of data.
func frameEnd(data []byte, n int) error {
	switch {
	case n > len(data):
		return errTruncatedFrame
	case n < len(data):
		return fmt.Errorf("%d bytes after the frame", len(data)-n)
	}
	return nil
}
