package manifestdec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// ErrUnsupported marks a manifest the decoder does not read: an unknown
// codec, a schema of another shape than the specification's, a value
// outside what the decoder is known to convert as iceberg-go does. The
// caller decodes such a manifest with iceberg-go instead; it is not a sign
// that the manifest is corrupt.
var ErrUnsupported = errors.New("not read by icebloom's manifest decoder")

// MaxBlockBytes bounds what one block may decompress to; a larger block is
// left to iceberg-go (ErrUnsupported). Writers make blocks of 64 KiB to a
// few MiB.
const MaxBlockBytes = 256 << 20

// magic opens an Avro object container file.
var magic = []byte{'O', 'b', 'j', 1}

// container is an Avro object container file's layout: its header's
// metadata and the place of each block.
type container struct {
	meta   map[string][]byte
	codec  string
	blocks []block
	header int // the header's length: where the first block starts
}

// block is one block of a container: count objects in data (compressed by
// the container's codec), ending (its sync marker included) at end.
type block struct {
	count int64
	data  []byte
	end   int
}

// parseContainer reads the header of an object container file and finds
// its blocks, checking each block's sync marker.
func parseContainer(data []byte) (*container, error) {
	if !bytes.HasPrefix(data, magic) {
		return nil, errors.New("not an Avro object container file (no magic)")
	}
	r := &reader{b: data, p: len(magic), field: "header metadata"}
	c := &container{meta: map[string][]byte{}}
	for {
		count := r.long()
		if r.err != nil {
			return nil, r.err
		}
		if count == 0 {
			break
		}
		if count < 0 {
			if count == -1<<63 {
				return nil, errors.New("header metadata: block count out of range")
			}
			count = -count
			r.long() // the block's size in bytes
		}
		if count > int64(len(data)) {
			return nil, fmt.Errorf("header metadata: %d entries in a file of %d bytes", count, len(data))
		}
		for range count {
			k := r.bytes()
			v := r.bytes()
			if r.err != nil {
				return nil, r.err
			}
			c.meta[string(k)] = v
		}
	}
	sync := r.fixed(16)
	if r.err != nil {
		return nil, fmt.Errorf("header sync marker: %w", r.err)
	}
	c.codec = "null"
	if codec, ok := c.meta["avro.codec"]; ok && len(codec) > 0 {
		c.codec = string(codec)
	}
	switch c.codec {
	case "null", "deflate", "snappy", "zstandard":
	default:
		return nil, unsupported("codec %q", c.codec)
	}
	c.header = r.p
	for i := 0; r.p < len(data); i++ {
		r.field = fmt.Sprintf("block %d", i)
		count := r.long()
		size := r.long()
		if r.err != nil {
			return nil, r.err
		}
		if count < 0 || size < 0 || size > int64(len(data)-r.p) {
			return nil, fmt.Errorf("block %d: %d objects in %d bytes, %d left in the file", i, count, size, len(data)-r.p)
		}
		b := block{count: count, data: r.fixed(int(size))}
		if s := r.fixed(16); r.err != nil || !bytes.Equal(s, sync) {
			return nil, fmt.Errorf("block %d: sync marker does not match the header's", i)
		}
		b.end = r.p
		c.blocks = append(c.blocks, b)
	}
	return c, nil
}

// decompressor decompresses blocks of one codec, reusing its state
// between blocks; one goroutine's.
type decompressor struct {
	codec string
	flate io.ReadCloser
	src   bytes.Reader
}

// zstdDecoder decompresses zstandard blocks: one decoder for every
// goroutine (DecodeAll may be called concurrently).
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxBlockBytes))
})

// decompress returns b's bytes decompressed, in out's array when it has
// room (b itself when the codec is null).
func (d *decompressor) decompress(b, out []byte) ([]byte, error) {
	switch d.codec {
	case "null":
		if len(b) > MaxBlockBytes {
			return nil, unsupported("block of %d bytes", len(b))
		}
		return b, nil
	case "deflate":
		d.src.Reset(b)
		if d.flate == nil {
			d.flate = flate.NewReader(&d.src)
		} else if err := d.flate.(flate.Resetter).Reset(&d.src, nil); err != nil {
			return nil, err
		}
		out = out[:0]
		for {
			if len(out) == cap(out) {
				if len(out) >= MaxBlockBytes {
					return nil, unsupported("block decompresses to more than %d bytes", MaxBlockBytes)
				}
				out = slices.Grow(out, max(4<<10, len(out)))
			}
			n, err := d.flate.Read(out[len(out):cap(out)])
			out = out[:len(out)+n]
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("deflate: %w", err)
			}
		}
		return out, nil
	case "snappy":
		if len(b) < 4 {
			return nil, errors.New("snappy: no checksum")
		}
		body := b[:len(b)-4]
		n, err := snappy.DecodedLen(body)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if n > MaxBlockBytes {
			return nil, unsupported("block decompresses to %d bytes", n)
		}
		if cap(out) < n {
			out = make([]byte, n)
		}
		out, err = snappy.Decode(out[:cap(out)], body)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(b[len(b)-4:]) {
			return nil, errors.New("snappy: checksum does not match")
		}
		return out, nil
	case "zstandard":
		dec, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(b, out[:0])
		if err != nil {
			return nil, fmt.Errorf("zstandard: %w", err)
		}
		return out, nil
	}
	return nil, unsupported("codec %q", d.codec)
}
