// Package manifestdec decodes Iceberg manifest files (Avro object
// container files) for planning: per live data file, the fields a scan
// task needs and the statistics of a few columns, without decoding the
// rest. It exists because iceberg-go's decoding (reflection into structs,
// every statistic of every column into maps, about 80 allocations a file)
// is most of the time a cold plan of a large table takes.
//
// The decoder reads what iceberg-go's ManifestReader reads, and gives the
// same values (the partition's Go types included); what it is not known to
// give the same for — an unknown codec, a schema of another shape than the
// specification's, a partition type iceberg-go converts in ways of its own
// — it refuses with ErrUnsupported, and the caller decodes that manifest
// with iceberg-go. A corrupt manifest is an error naming the block, entry
// and field.
package manifestdec

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
)

// Manifest is a manifest file opened for decoding: its header read, its
// blocks found and its schema compiled into a program. Blocks are decoded
// by Decoders, one per goroutine, in any order.
type Manifest struct {
	c    *container
	prog *program
	// Version is the manifest's format version (1 when its metadata does
	// not say).
	Version int
}

// Open reads the header of manifest data, listed as m in its manifest
// list, to decode its data files with the statistics of the columns
// statsFields. It checks the header as iceberg-go's reader does; a header
// iceberg-go would refuse, or one the decoder does not read, is
// ErrUnsupported (the caller's iceberg-go decoding then reports it).
func Open(data []byte, m iceberg.ManifestFile, statsFields []int) (*Manifest, error) {
	c, err := parseContainer(data)
	if err != nil {
		return nil, err
	}
	version := 1
	if raw := c.meta["format-version"]; len(raw) > 0 {
		if version, err = strconv.Atoi(string(raw)); err != nil {
			return nil, unsupported("format-version %q", raw)
		}
	}
	if version < 1 || version > 3 || version > m.Version() {
		return nil, unsupported("format-version %d in a v%d manifest list", version, m.Version())
	}
	switch content := string(c.meta["content"]); {
	case content == "" && version == 1, content == "data":
	default:
		return nil, unsupported("content %q of format-version %d", content, version)
	}
	if m.ManifestContent() != iceberg.ManifestContentData {
		return nil, unsupported("a delete manifest")
	}
	schema, ok := c.meta["avro.schema"]
	if !ok {
		return nil, unsupported("no avro.schema")
	}
	root, err := parseSchema(schema)
	if err != nil {
		return nil, err
	}
	prog, err := compile(root, dayFields(c.meta["partition-spec"]), statsFields)
	if err != nil {
		return nil, err
	}
	return &Manifest{c: c, prog: prog, Version: version}, nil
}

// dayFields are the partition fields of day transforms in a manifest's
// partition-spec metadata: iceberg-go gives their values as iceberg.Date
// whatever their Avro type says. Absent or malformed metadata is ignored,
// as iceberg-go ignores it.
func dayFields(spec []byte) map[int]bool {
	days := map[int]bool{}
	if len(spec) == 0 {
		return days
	}
	var fields []iceberg.PartitionField
	if err := json.Unmarshal(spec, &fields); err != nil {
		return days
	}
	for _, f := range fields {
		if _, ok := f.Transform.(iceberg.DayTransform); ok {
			days[f.FieldID] = true
		}
	}
	return days
}

// Blocks is the number of blocks of the manifest.
func (m *Manifest) Blocks() int { return len(m.c.blocks) }

// Objects is the number of entries block i holds, deleted ones included.
func (m *Manifest) Objects(i int) int64 { return m.c.blocks[i].count }

// Entry is a live (added or existing) data file of a manifest, as the
// decoder gives it. Its Partition, SplitOffsets and SortOrderID may be
// shared with other entries and must not be changed.
type Entry struct {
	Status       iceberg.ManifestEntryStatus
	Path         string
	Format       iceberg.FileFormat
	Partition    map[int]any // by partition field id, as iceberg-go's DataFile.Partition gives it
	Records      int64
	Size         int64
	KeyMetadata  []byte
	SplitOffsets []int64
	SortOrderID  *int
	// FirstRowID is the file's own first row id (v3), without the
	// inheritance from the manifest's that the caller applies.
	FirstRowID    int64
	HasFirstRowID bool
}

// ColumnStats are a data file's statistics of one column; each is absent
// when the file's map has no entry for the column. The bounds alias the
// Block's decompressed bytes: they are valid until the Block is decoded
// into again.
type ColumnStats struct {
	Values, Nulls, NaNs          int64
	HasValues, HasNulls, HasNaNs bool
	Lower, Upper                 []byte // nil when absent
}

// Block is a decoded block: its live entries and their statistics, those
// of entry i at Stats[i*n:(i+1)*n] for the n statistics fields asked for.
type Block struct {
	Entries []Entry
	Stats   []ColumnStats
	buf     []byte // the decompressed block
}

// Decoder decodes blocks of one manifest, reusing its buffers and keeping
// the values that files share (partitions, split offsets) once. It is one
// goroutine's.
type Decoder struct {
	m         *Manifest
	dec       decompressor
	r         reader
	parts     map[string]map[int]any
	splits    map[string][]int64
	sortOrder map[int32]*int
	scratch   []int64
	paths     []byte
	pathEnds  []int
	format    iceberg.FileFormat
}

// maxShared bounds the values a Decoder keeps to share between files: a
// manifest of that many distinct partitions starts sharing anew.
const maxShared = 1 << 16

// NewDecoder returns a decoder of m's blocks.
func (m *Manifest) NewDecoder() *Decoder {
	return &Decoder{m: m, dec: decompressor{codec: m.c.codec}, parts: map[string]map[int]any{},
		splits: map[string][]int64{}, sortOrder: map[int32]*int{}}
}

// Decode decodes block i into blk, reusing its slices. A corrupt block is
// an error naming the block, the entry and the field; a value the decoder
// does not convert as iceberg-go does is ErrUnsupported.
func (d *Decoder) Decode(i int, blk *Block) error {
	b := d.m.c.blocks[i]
	data, err := d.dec.decompress(b.data, blk.buf)
	if err != nil {
		return fmt.Errorf("block %d: %w", i, err)
	}
	if d.dec.codec != "null" {
		blk.buf = data
	}
	blk.Entries, blk.Stats = blk.Entries[:0], blk.Stats[:0]
	d.paths, d.pathEnds = d.paths[:0], d.pathEnds[:0]
	d.r = reader{b: data}
	if b.count > int64(len(data))/max(1, int64(d.m.prog.minSize)) {
		return fmt.Errorf("block %d: %d entries in %d bytes", i, b.count, len(data))
	}
	for e := range b.count {
		if err := d.entry(blk); err != nil {
			return fmt.Errorf("block %d: entry %d: %w", i, e, err)
		}
	}
	if d.r.p != len(data) {
		return fmt.Errorf("block %d: %d bytes after its %d entries", i, len(data)-d.r.p, b.count)
	}
	paths := string(d.paths) // one string for the block's paths
	start := 0
	for k, end := range d.pathEnds {
		blk.Entries[k].Path = paths[start:end]
		start = end
	}
	return nil
}
