package filescan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/icebloom/icebloom/index/hashing"
)

// The dictionary shortcut. When every data page of a column chunk is
// dictionary-encoded, each non-null value of the chunk is an entry of its
// dictionary, so hashing the dictionary page alone yields the chunk's
// distinct values without decoding (or decompressing) a data page. A
// dictionary may hold entries no row uses (a writer is free to keep them):
// that adds false positives to the filter, never a false negative. NULLs are
// never dictionary entries, as they are never inserted.
//
// Whether a chunk qualifies is decided from its metadata only, and only when
// the metadata says so for certain; a chunk in doubt is decoded. Reading the
// dictionary page can still fail (a damaged or unexpected page): the chunk is
// then decoded as if the shortcut did not exist, so no value is ever lost.

// dictionaryOnly reports whether the metadata proves that every data page of
// the chunk is dictionary-encoded and that there is a dictionary page.
func dictionaryOnly(md *metadata.ColumnChunkMetaData) bool {
	// Booleans are never dictionary-encoded by writers, and RLE is also a
	// boolean data encoding, so Encodings below could not tell levels from
	// values: never take the shortcut for them.
	if md.Type() == parquet.Types.Boolean || !md.HasDictionaryPage() {
		return false
	}
	if stats := md.EncodingStats(); len(stats) > 0 {
		// Page counts by type and encoding: exact when present.
		dictPage := false
		for _, s := range stats {
			switch s.PageType {
			case file.PageTypeDictionaryPage:
				dictPage = true
			case file.PageTypeDataPage, file.PageTypeDataPageV2:
				if !isDictEncoding(s.Encoding) {
					return false
				}
			}
		}
		return dictPage
	}
	// Without page stats, the chunk's set of encodings: the data encodings
	// must all be dictionary encodings. RLE and BIT_PACKED are level
	// encodings (booleans are excluded above). Any other encoding, PLAIN
	// included, means some data page may not be dictionary-encoded: a
	// writer that fell back lists PLAIN, and writers that list PLAIN for the
	// dictionary page itself are indistinguishable from that, so they are
	// decoded too.
	dict := false
	for _, e := range md.Encodings() {
		switch e {
		case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
			dict = true
		case parquet.Encodings.RLE, parquet.Encodings.BitPacked:
		default:
			return false
		}
	}
	return dict
}

func isDictEncoding(e parquet.Encoding) bool {
	return e == parquet.Encodings.PlainDict || e == parquet.Encodings.RLEDict
}

// hashDictionary appends the hashes of the dictionary of column leaf in the
// row group, read through the page reader: only the first page (the
// dictionary page) is read and decompressed. On error x.hashes is left as it
// was, for the caller to decode the chunk instead.
func (x *Scanner) hashDictionary(rg *file.RowGroupReader, leaf int, descr *schema.Column, hc *hashing.Column) (err error) {
	pr, err := rg.GetColumnPageReader(leaf)
	if err != nil {
		return fmt.Errorf("page reader: %w", err)
	}
	defer pr.Close()
	if !pr.Next() {
		if err := pr.Err(); err != nil {
			return fmt.Errorf("dictionary page: %w", err)
		}
		return errors.New("no dictionary page")
	}
	dp, ok := pr.Page().(*file.DictionaryPage)
	if !ok {
		return fmt.Errorf("first page is a %v page, not a dictionary page", pr.Page().Type())
	}
	if enc := parquet.Encoding(dp.Encoding()); enc != parquet.Encodings.Plain && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("dictionary page encoding %v is not PLAIN", enc)
	}
	before := len(x.hashes)
	defer func() {
		if err != nil {
			x.hashes = x.hashes[:before]
		}
	}()
	p := plain{data: dp.Data()}
	n := int(dp.NumValues())
	if n < 0 {
		return fmt.Errorf("dictionary page with %d values", n)
	}
	// The values are decoded as a typed ReadBatch would return them and
	// hashed by the same hashing.Column methods, so every conversion
	// (promotion, decimal, time unit) is the one of the normal path.
	switch descr.PhysicalType() {
	case parquet.Types.Int32:
		return hashPlain(x, n, p.int32, hc.Int32s, &x.i32)
	case parquet.Types.Int64:
		return hashPlain(x, n, p.int64, hc.Int64s, &x.i64)
	case parquet.Types.Int96:
		return hashPlain(x, n, p.int96, hc.Int96s, &x.i96)
	case parquet.Types.Float:
		return hashPlain(x, n, p.float32, hc.Float32s, &x.f32)
	case parquet.Types.Double:
		return hashPlain(x, n, p.float64, hc.Float64s, &x.f64)
	case parquet.Types.ByteArray:
		return hashPlain(x, n, p.byteArray, hc.ByteArrays, &x.ba)
	case parquet.Types.FixedLenByteArray:
		p.width = descr.TypeLength()
		return hashPlain(x, n, p.fixedLenByteArray, hc.FixedLenByteArrays, &x.flba)
	}
	return fmt.Errorf("no dictionary shortcut for %v columns", descr.PhysicalType())
}

// hashPlain decodes n values with next and hashes them, batchSize at a time
// in buf. Byte array values point into the page, which outlives the call.
func hashPlain[T any](x *Scanner, n int, next func() (T, error), hash func([]uint64, []T) ([]uint64, error), buf *[]T) error {
	if len(*buf) < batchSize {
		*buf = make([]T, batchSize)
	}
	vals := *buf
	for n > 0 {
		k := min(n, batchSize)
		for i := range k {
			v, err := next()
			if err != nil {
				return err
			}
			vals[i] = v
		}
		var err error
		if x.hashes, err = hash(x.hashes, vals[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// plain decodes PLAIN-encoded values (the only encoding of a dictionary
// page) one at a time. arrow-go's decoders are internal to its module, and
// the format is simple: fixed-width little-endian values, byte arrays
// prefixed with their 4-byte little-endian length.
type plain struct {
	data  []byte
	width int // FIXED_LEN_BYTE_ARRAY length
}

var errShortPage = errors.New("dictionary page ends within a value")

func (p *plain) take(n int) ([]byte, error) {
	if n < 0 || len(p.data) < n {
		return nil, errShortPage
	}
	b := p.data[:n:n]
	p.data = p.data[n:]
	return b, nil
}

func (p *plain) int32() (int32, error) {
	b, err := p.take(4)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b)), nil
}

func (p *plain) int64() (int64, error) {
	b, err := p.take(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

func (p *plain) int96() (parquet.Int96, error) {
	var v parquet.Int96
	b, err := p.take(len(v))
	if err != nil {
		return v, err
	}
	copy(v[:], b)
	return v, nil
}

func (p *plain) float32() (float32, error) {
	v, err := p.int32()
	return math.Float32frombits(uint32(v)), err
}

func (p *plain) float64() (float64, error) {
	v, err := p.int64()
	return math.Float64frombits(uint64(v)), err
}

func (p *plain) byteArray() (parquet.ByteArray, error) {
	b, err := p.take(4)
	if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(p.data)) {
		return nil, errShortPage
	}
	return p.take(int(n))
}

func (p *plain) fixedLenByteArray() (parquet.FixedLenByteArray, error) {
	if p.width <= 0 {
		return nil, fmt.Errorf("fixed length %d", p.width)
	}
	return p.take(p.width)
}
