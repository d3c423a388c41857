package filescan

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/index/segment"
)

// batchSize is how many values one read decodes: enough to amortise the
// call, small enough for the buffers to stay in cache.
const batchSize = 4096

// ColumnFilter is one column's filter built from one data file, or why the
// column could not be indexed.
type ColumnFilter struct {
	Col    int // index into the scanner's columns
	NDV    int64
	Filter sbbf.Filter
	// Err is set when the column could not be read: there is no filter,
	// and the file stays uncovered for the column (never pruned by it)
	// while its other columns are indexed. It names the column and the
	// cause; the caller knows the file.
	Err error
}

// Scanner builds the filters of data files, one file at a time. Each
// worker has its own, so the value and hash buffers are reused from file to
// file and never shared.
type Scanner struct {
	fs          icebergio.IO
	cols        []Column
	nameMapping iceberg.NameMapping
	maxBytes    int
	// noDictShortcut decodes every data page even when the dictionary
	// page alone would do (Config.NoDictShortcut).
	noDictShortcut bool

	// insertHook, for tests, replaces the insertion of a column's hashes
	// into its filter; nil: sbbf.Filter.InsertMany.
	insertHook func(sbbf.Filter, []uint64)

	// Counters of how chunks were read, for tests: chunks hashed from
	// their dictionary page, chunks whose shortcut failed and were decoded
	// instead, and ReadBatch calls of the normal path.
	dictChunks, dictFallbacks, readBatches int

	// OnDistinct, when set, is given each column's distinct hashes (by
	// index into cols) before its filter is built: verify checks them
	// against the stored filter.
	OnDistinct func(col int, unique []uint64)

	filters  *FilterPool               // the job's, shared by its workers; nil: none
	props    *parquet.ReaderProperties // of a page buffer pool of its own (readerProperties)
	chunk    []byte                    // the fetched column chunk (chunkReader)
	file     *chunkReader              // the data file being read
	hashes   []uint64                  // hashes not yet in distinct
	distinct distinctSet
	defs     []int16
	i32      []int32
	i64      []int64
	i96      []parquet.Int96
	f32      []float32
	f64      []float64
	bools    []bool
	ba       []parquet.ByteArray
	flba     []parquet.FixedLenByteArray
}

// NewScanner returns a Scanner of cols in the files of fs, with filters of
// at most maxBytes; nm tells apart the columns of files without field ids;
// noDictShortcut decodes every data page even where the dictionary page
// alone would do.
func NewScanner(fs icebergio.IO, cols []Column, nm iceberg.NameMapping, maxBytes int, noDictShortcut bool) *Scanner {
	return &Scanner{
		fs: fs, cols: cols, nameMapping: nm, maxBytes: maxBytes, noDictShortcut: noDictShortcut,
		defs: make([]int16, batchSize), props: readerProperties(),
	}
}

// Scan reads the indexed columns of one data file (those df.Columns lists,
// when set) and returns a filter per column read, in the order of x.cols.
// Only those columns' chunks are read.
//
// Columns fail one by one: a column whose chunks cannot be decoded, whose
// decoder panics, or whose filter comes out corrupt gets a ColumnFilter with err
// set and no filter, and the other columns are still read. The error is the file's only when the file
// cannot be read at all: it cannot be opened, its footer is bad, its columns
// cannot be told apart, or ctx is done. A decoder that panics while the file
// is opened makes a file error too; a data file is untrusted input, and a
// panic reading it must not end the run (as arrow-go's pqarrow reader turns
// its decoders' panics into errors).
func (x *Scanner) Scan(ctx context.Context, df File) (out []ColumnFilter, err error) {
	return x.indexRead(ctx, &readAhead{df: df})
}

// indexRead is index of the data file ra was read ahead for: its footer
// and column chunks come from ra's memory when they were read ahead, from
// the file otherwise, so what was read ahead decides speed, never results.
func (x *Scanner) indexRead(ctx context.Context, ra *readAhead) (out []ColumnFilter, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, recovered(p)
		}
	}()
	df, f := ra.df, ra.file // a file the prefetcher opened, it closes
	if f == nil {
		if ra.openErr != nil {
			return nil, ra.openErr
		}
		if f, err = x.fs.Open(df.Path); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	x.file = newChunkReader(f, x.props, &x.chunk)
	x.file.hold(ra.spans)
	defer x.file.hold(nil) // the spans go back to the prefetcher's pool
	opts := []file.ReadOption{file.WithReadProps(x.props)}
	if ra.meta != nil {
		opts = append(opts, file.WithMetadata(ra.meta)) // parsed by the prefetcher as arrow-go would
	}
	rdr, err := file.NewParquetReader(x.file, opts...)
	if err != nil {
		return nil, fmt.Errorf("read Parquet footer: %w", err)
	}
	defer rdr.Close()

	leaves, err := leafColumns(rdr.MetaData().Schema, x.nameMapping)
	if err != nil {
		return nil, err
	}
	out = make([]ColumnFilter, 0, len(x.cols))
	for ci := range x.cols {
		if df.Columns != nil && !slices.Contains(df.Columns, ci) {
			continue // covered already: its chunks are not read
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, x.indexColumn(rdr, leaves, ci, df))
	}
	return out, nil
}

// indexColumn builds the filter of column ci of the open data file, or
// returns why it cannot: a read error, a panic of the decoder, or a filter
// that came out corrupt.
func (x *Scanner) indexColumn(rdr *file.Reader, leaves map[int]int, ci int, df File) (fo ColumnFilter) {
	col := x.cols[ci]
	defer func() {
		if p := recover(); p != nil {
			fo = ColumnFilter{Col: ci, Err: fmt.Errorf("column %s: %w", col.Name, recovered(p))}
		}
	}()
	x.hashes = x.hashes[:0]
	x.distinct.reset()
	if leaf, ok := leaves[col.Field.ID]; ok {
		if err := x.readColumn(rdr, leaf, col); err != nil {
			return ColumnFilter{Col: ci, Err: fmt.Errorf("column %s: %w", col.Name, err)}
		}
	} else if err := x.missingColumn(col, df); err != nil {
		return ColumnFilter{Col: ci, Err: fmt.Errorf("column %s (not in the file): %w", col.Name, err)}
	}
	x.flush()
	unique := x.distinct.hashes()
	if x.OnDistinct != nil {
		x.OnDistinct(ci, unique)
	}
	blocks, err := sbbf.NumBlocks(uint64(len(unique)), col.FPP, x.maxBytes)
	if err != nil {
		return ColumnFilter{Col: ci, Err: fmt.Errorf("column %s: %w", col.Name, err)}
	}
	if c := segment.SizeClass(blocks); c*sbbf.BlockBytes <= x.maxBytes {
		blocks = c // filters of one size class share a group
	}
	filter := x.filters.get(blocks)
	x.insert(filter, unique)
	if len(unique) > 0 && allZero(filter.Bytes()) {
		// A correct build cannot make this; a filter with no bit set
		// would prune every lookup of the column, so it is never written
		// (nor its bitset reused, in case another holds it too).
		return ColumnFilter{Col: ci, Err: fmt.Errorf("column %s: corrupt filter: no bit set for %d distinct values", col.Name, len(unique))}
	}
	return ColumnFilter{Col: ci, NDV: int64(len(unique)), Filter: filter}
}

// insert adds the hashes to the filter: sbbf.Filter.InsertMany, unless a
// test replaces it.
func (x *Scanner) insert(f sbbf.Filter, hs []uint64) {
	if x.insertHook != nil {
		x.insertHook(f, hs)
		return
	}
	f.InsertMany(hs)
}

// allZero reports whether no byte of b is set.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// recovered turns a panic while reading a data file into an error.
func recovered(p any) error {
	if err, ok := p.(error); ok {
		return fmt.Errorf("panic while reading: %w", err)
	}
	return fmt.Errorf("panic while reading: %v", p)
}

// leafColumns maps Iceberg field ids to the file's leaf columns. Files
// written by Iceberg writers carry field ids; for a file without any (added
// with add_files, written by another engine) the table's name mapping
// (schema.name-mapping.default) tells which column is which, as iceberg-go's
// reader resolves them. Without a mapping such a file cannot be read by id,
// and readers disagree on how to guess, so it is an error: the file stays
// unindexed rather than indexed as all NULL. Leaves inside lists and maps
// are left out: a value there is not a row's value of the field.
func leafColumns(sc *schema.Schema, nm iceberg.NameMapping) (map[int]int, error) {
	leaves := map[int]int{}
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		if col.MaxRepetitionLevel() > 0 {
			continue
		}
		if id := col.SchemaNode().FieldID(); id >= 0 {
			leaves[int(id)] = i
		}
	}
	if len(leaves) > 0 {
		return leaves, nil
	}
	if nm == nil {
		return nil, fmt.Errorf("the file has no field ids and the table no name mapping (schema.name-mapping.default)")
	}
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		if col.MaxRepetitionLevel() > 0 {
			continue
		}
		if id, ok := mappedID(nm, col.ColumnPath()); ok {
			leaves[id] = i
		}
	}
	return leaves, nil
}

func mappedID(fields []iceberg.MappedField, path []string) (int, bool) {
	for _, f := range fields {
		if !slices.Contains(f.Names, path[0]) {
			continue
		}
		if len(path) == 1 {
			if f.FieldID == nil {
				return 0, false
			}
			return *f.FieldID, true
		}
		return mappedID(f.Fields, path[1:])
	}
	return 0, false
}

// readColumn appends the hashes of every non-null value of the leaf column,
// row group after row group: those of the chunk's dictionary when that is
// known to hold every value of the chunk (see dictionaryOnly), else those of
// every decoded value.
func (x *Scanner) readColumn(rdr *file.Reader, leaf int, col Column) error {
	descr := rdr.MetaData().Schema.Column(leaf)
	hc, err := hashing.NewColumn(col.Type, descr)
	if err != nil {
		return err
	}
	for rg := range rdr.NumRowGroups() {
		rgr := rdr.RowGroup(rg)
		md, err := rgr.MetaData().ColumnChunk(leaf)
		if err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
		if x.tryDictionary(rgr, md, leaf, descr, hc) {
			x.flush() // dictionaries of many row groups repeat each other
			continue
		}
		x.file.Fetch(md, false)
		cr, err := rgr.Column(leaf)
		if err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
		err = x.readChunk(cr, hc)
		// Closing releases the chunk's page buffers to x.props's pool for
		// the next chunk.
		if cerr := cr.(interface{ Close() error }).Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
	}
	return nil
}

// tryDictionary hashes the chunk's dictionary page instead of its values
// when the shortcut is enabled and the chunk's metadata allows it, and
// reports whether it did. A failure is not an error: the caller decodes the
// chunk, which reports any real damage.
func (x *Scanner) tryDictionary(rg *file.RowGroupReader, md *metadata.ColumnChunkMetaData, leaf int, descr *schema.Column, hc *hashing.Column) bool {
	if x.noDictShortcut || !dictionaryOnly(md) {
		return false
	}
	x.file.Fetch(md, true)
	if err := x.hashDictionary(rg, leaf, descr, hc); err != nil {
		x.dictFallbacks++
		return false
	}
	x.dictChunks++
	return true
}

// readChunk hashes the values of a column chunk. It reads with
// ReadBatchInPage, whose byte array values alias the page buffer: they are
// hashed before the next read, so the copy of every value that ReadBatch
// makes (and the garbage collection it causes) is not needed.
func (x *Scanner) readChunk(cr file.ColumnChunkReader, hc *hashing.Column) error {
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.Bools, &x.bools)
	case *file.Int32ColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.Int32s, &x.i32)
	case *file.Int64ColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.Int64s, &x.i64)
	case *file.Int96ColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.Int96s, &x.i96)
	case *file.Float32ColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.Float32s, &x.f32)
	case *file.Float64ColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.Float64s, &x.f64)
	case *file.ByteArrayColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.ByteArrays, &x.ba)
	case *file.FixedLenByteArrayColumnChunkReader:
		return drain(x, r.ReadBatchInPage, hc.FixedLenByteArrays, &x.flba)
	}
	return fmt.Errorf("column chunk of Parquet physical type %s cannot be read", cr.Type())
}

// drain reads a column chunk to its end in batches and hashes the non-null
// values. The hashes of each batch go into the distinct set, so memory
// follows the file's distinct values rather than its row count.
func drain[T any](x *Scanner,
	read func(int64, []T, []int16, []int16) (int64, int, error),
	hash func([]uint64, []T) ([]uint64, error),
	buf *[]T,
) error {
	if len(*buf) < batchSize {
		*buf = make([]T, batchSize)
	}
	vals := *buf
	for {
		levels, n, err := read(batchSize, vals, x.defs, nil)
		x.readBatches++
		if err != nil {
			return err
		}
		if levels == 0 {
			return nil
		}
		if x.hashes, err = hash(x.hashes, vals[:n]); err != nil {
			return err
		}
		x.flush()
	}
}

// flush moves the pending hashes into the distinct set. Counting distinct
// hashes is counting distinct values: two values share a 64-bit hash with
// negligible probability, and if they do the filter is the same either way.
func (x *Scanner) flush() {
	x.distinct.addAll(x.hashes)
	x.hashes = x.hashes[:0]
}

// missingColumn handles a column the file does not store. Readers fill in
// an identity partition column from the file's partition value, and a
// column added to the table after the file was written with the field's
// initial default (format v3), or else NULL, which is never inserted.
func (x *Scanner) missingColumn(col Column, df File) error {
	value, isPartition := df.Identity[col.Field.ID]
	if !isPartition {
		value = col.Field.InitialDefault
	}
	if value == nil {
		return nil
	}
	lit, err := nativeLiteral(value, col.Field.Type)
	if err != nil {
		return err
	}
	h, outcome, err := hashing.Literal(col.Type, lit)
	if err != nil {
		return err
	}
	if outcome != hashing.CheckHash {
		return fmt.Errorf("value %v cannot be indexed", value)
	}
	x.hashes = append(x.hashes, h)
	return nil
}

// nativeLiteral turns a value as iceberg-go decodes it from table metadata
// or a manifest (an initial default, a partition value) into a literal of
// type t. A form it does not know is an error, so the file is left unindexed
// for the column rather than indexed without the value.
func nativeLiteral(value any, t iceberg.Type) (iceberg.Literal, error) {
	var lit iceberg.Literal
	switch v := value.(type) {
	case bool:
		lit = iceberg.BoolLiteral(v)
	case int32:
		lit = iceberg.Int32Literal(v)
	case int64:
		lit = iceberg.Int64Literal(v)
	case int:
		lit = iceberg.Int64Literal(v)
	case float32:
		lit = iceberg.Float32Literal(v)
	case float64:
		lit = iceberg.Float64Literal(v)
	case string:
		lit = iceberg.StringLiteral(v)
	case []byte:
		lit = iceberg.BinaryLiteral(v)
	case iceberg.Date:
		lit = iceberg.DateLiteral(v)
	case iceberg.Time:
		lit = iceberg.TimeLiteral(v)
	case iceberg.Timestamp:
		lit = iceberg.TimestampLiteral(v)
	case iceberg.TimestampNano:
		lit = iceberg.TimestampNsLiteral(v)
	case iceberg.Decimal:
		lit = iceberg.DecimalLiteral(v)
	case uuid.UUID:
		lit = iceberg.UUIDLiteral(v)
	default:
		return nil, fmt.Errorf("value %v is in no form known for %s values", v, t)
	}
	return lit.To(t)
}
