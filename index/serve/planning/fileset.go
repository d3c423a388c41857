package planning

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/serve/planning/internal/manifestdec"
)

// fileSet is a base plan held in columns: per data file only what the fast
// path's checks and the answer's tasks need, in arrays rather than objects.
// A table of 100,000 files and more is kept whole in memory for every
// lookup, and a task with its decoded DataFile costs about a kilobyte (a
// compactFile: several hundred bytes); here a file costs its path and a
// few dozen bytes, the statistics of each column the fast path checks
// included. What many files share (a partition, split offsets, a sort
// order) is kept once and referred to by number.
//
// Column statistics are kept only for the columns the set was made for
// (those of the filters that made it): a lookup of another column makes
// the base again with its statistics too. Statistics of other columns are
// not kept, so a request that asks for them (stats-fields) takes the usual
// path, which decodes the manifests again. String and binary bounds are
// held to their first 16 bytes (heldBoundBytes), widened as Iceberg's
// truncate(16) metrics mode widens them: they rule out no value the whole
// bounds would keep.
type fileSet struct {
	files   filelist.List // paths and sizes, for the index
	records []int64
	formats []uint8 // index into formatNames
	parts   []int32 // index into partValues and partSpecs: a file's spec is its partition's
	extras  []int32 // index into extraValues

	formatNames []iceberg.FileFormat
	partValues  []map[int]any
	partSpecs   []int32 // the spec of each of partValues
	extraValues []fileExtra
	// firstRowIDs is nil when no file has one; else noRowID marks those
	// without.
	firstRowIDs []int64
	// deletes are the delete files of the tasks, each once; deleteRefs[i]
	// lists file i's (kind and index into deletes), nil when no file has
	// any.
	deletes    []*compactFile
	deleteRefs [][]deleteRef

	stats map[int]*columnStats // by field id: the columns it was made for
}

// noRowID marks a file without a first row id in fileSet.firstRowIDs.
const noRowID = math.MinInt64

// fileExtra is what a data file has besides its counts, partition and
// statistics, shared by many.
type fileExtra struct {
	keyMetadata []byte
	splits      []int64
	sortOrder   *int
}

// deleteRef is one delete file of a task: its kind (the FileScanTask list
// it is in) and its index in fileSet.deletes.
type deleteRef struct {
	kind  uint8 // 0: DeleteFiles, 1: EqualityDeleteFiles, 2: DeletionVectorFiles
	index int32
}

// newFileSet holds tasks (iceberg-go's plan: one task per data file) in
// columns, with the statistics of the fields fieldIDs of schema. It
// returns an error for a plan with several tasks of one file, which it
// does not hold.
func newFileSet(tasks []table.FileScanTask, schema *iceberg.Schema, fieldIDs []int) (*fileSet, error) {
	b := newSetBuilder(schema, fieldIDs, len(tasks))
	seen := make(map[string]struct{}, len(tasks))
	for i := range tasks {
		path := tasks[i].File.FilePath()
		if _, dup := seen[path]; dup { // a file split into byte ranges
			return nil, fmt.Errorf("%s: several tasks of one data file", path)
		}
		seen[path] = struct{}{}
		b.add(&tasks[i])
	}
	return b.finish(), nil
}

// setBuilder makes a fileSet a file at a time, or a range of another
// set's files at a time (reused when a table version keeps a manifest of
// the last one), keeping what files share once.
type setBuilder struct {
	s         *fileSet
	fields    []iceberg.NestedField
	stats     []*statsBuilder // by fields
	formatIdx map[iceberg.FileFormat]uint8
	partIdx   map[string]int32
	extraIdx  map[string]int32
	deleteIdx map[iceberg.DataFile]int32
	key       []byte
	arena     boundArena // string and binary bounds, until finish lays them out
}

func newSetBuilder(schema *iceberg.Schema, fieldIDs []int, capacity int) *setBuilder {
	b := &setBuilder{
		s: &fileSet{
			records: make([]int64, 0, capacity), formats: make([]uint8, 0, capacity),
			parts: make([]int32, 0, capacity), extras: make([]int32, 0, capacity), stats: map[int]*columnStats{},
		},
		formatIdx: map[iceberg.FileFormat]uint8{}, partIdx: map[string]int32{}, extraIdx: map[string]int32{},
		deleteIdx: map[iceberg.DataFile]int32{},
	}
	b.s.files.Grow(capacity)
	for _, id := range fieldIDs {
		if field, ok := schema.FindFieldByID(id); ok {
			b.fields = append(b.fields, field)
			b.stats = append(b.stats, newStatsBuilder(field, capacity))
		}
	}
	return b
}

// add adds the data file of task t, with its delete files.
func (b *setBuilder) add(t *table.FileScanTask) {
	f := t.File
	i := b.row(f.FilePath(), f.FileSizeBytes(), f.Count(), f.SpecID(), f.FileFormat(), f.Partition(),
		fileExtra{keyMetadata: f.KeyMetadata(), splits: f.SplitOffsets(), sortOrder: copied(f.SortOrderID())}, f.FirstRowID())
	for kind, group := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
		for _, d := range group {
			b.addDelete(i, uint8(kind), d, func() *compactFile { return compact(d) })
		}
	}
	if len(b.stats) > 0 { // each getter copies its map: once for all fields
		values, nulls, nans, lower, upper := f.ValueCounts(), f.NullValueCounts(), f.NaNValueCounts(), f.LowerBoundValues(), f.UpperBoundValues()
		for _, sb := range b.stats {
			id := sb.field.ID
			var st manifestdec.ColumnStats
			st.Values, st.HasValues = values[id]
			st.Nulls, st.HasNulls = nulls[id]
			st.NaNs, st.HasNaNs = nans[id]
			st.Lower, st.Upper = lower[id], upper[id]
			sb.add(&st, &b.arena)
		}
	}
}

// addRows adds files [start, end) of src, whose statistics hold every
// field of b's.
func (b *setBuilder) addRows(src *fileSet, start, end int) {
	b.s.files.AppendFrom(&src.files, start, end)
	for i := start; i < end; i++ {
		var firstRowID *int64
		if src.firstRowIDs != nil && src.firstRowIDs[i] != noRowID {
			firstRowID = &src.firstRowIDs[i]
		}
		row := b.columns(src.records[i], src.partSpecs[src.parts[i]], src.formatNames[src.formats[i]],
			src.partValues[src.parts[i]], src.extraValues[src.extras[i]], firstRowID)
		if src.deleteRefs != nil {
			for _, ref := range src.deleteRefs[i] {
				d := src.deletes[ref.index]
				b.addDelete(row, ref.kind, d, func() *compactFile { return d })
			}
		}
	}
	for k, field := range b.fields {
		b.stats[k].addRows(src.stats[field.ID], start, end)
	}
}

// row adds one data file and returns its index.
func (b *setBuilder) row(path string, size, records int64, spec int32, format iceberg.FileFormat, part map[int]any, extra fileExtra, firstRowID *int64) int {
	b.s.files.Append(path, size)
	return b.columns(records, spec, format, part, extra, firstRowID)
}

// columns adds the columns of a data file whose path was just added, and
// returns its index.
func (b *setBuilder) columns(records int64, spec int32, format iceberg.FileFormat, part map[int]any, extra fileExtra, firstRowID *int64) int {
	s := b.s
	i := len(s.records)
	s.records = append(s.records, records)
	fi, ok := b.formatIdx[format]
	if !ok {
		fi = uint8(len(s.formatNames))
		b.formatIdx[format] = fi
		s.formatNames = append(s.formatNames, format)
	}
	s.formats = append(s.formats, fi)

	b.key = partitionKey(b.key[:0], spec, part)
	pi, ok := b.partIdx[string(b.key)]
	if !ok {
		pi = int32(len(s.partValues))
		b.partIdx[string(b.key)] = pi
		s.partValues = append(s.partValues, part)
		s.partSpecs = append(s.partSpecs, spec)
	}
	s.parts = append(s.parts, pi)

	b.key = extra.key(b.key[:0])
	ei, ok := b.extraIdx[string(b.key)]
	if !ok {
		ei = int32(len(s.extraValues))
		b.extraIdx[string(b.key)] = ei
		s.extraValues = append(s.extraValues, extra)
	}
	s.extras = append(s.extras, ei)

	if firstRowID != nil && s.firstRowIDs == nil {
		s.firstRowIDs = make([]int64, i, cap(s.records))
		for j := range s.firstRowIDs {
			s.firstRowIDs[j] = noRowID
		}
	}
	if s.firstRowIDs != nil {
		id := int64(noRowID)
		if firstRowID != nil {
			id = *firstRowID
		}
		s.firstRowIDs = append(s.firstRowIDs, id)
	}
	if s.deleteRefs != nil {
		s.deleteRefs = append(s.deleteRefs, nil)
	}
	return i
}

// addDelete adds a delete file of kind to file i, made by held the first
// time it is met.
func (b *setBuilder) addDelete(i int, kind uint8, d iceberg.DataFile, held func() *compactFile) {
	s := b.s
	di, ok := b.deleteIdx[d]
	if !ok {
		di = int32(len(s.deletes))
		b.deleteIdx[d] = di
		s.deletes = append(s.deletes, held())
	}
	if s.deleteRefs == nil {
		s.deleteRefs = make([][]deleteRef, len(s.records), cap(s.records))
	}
	s.deleteRefs[i] = append(s.deleteRefs[i], deleteRef{kind, di})
}

// finish returns the set made. A data file its manifests list twice (a
// table the specification does not allow) is held twice, and answered
// twice, as iceberg-go's planning does; the index matches the first
// (filelist.Index), so the second is always kept.
func (b *setBuilder) finish() *fileSet {
	for k, field := range b.fields {
		b.s.stats[field.ID] = b.stats[k].finish()
	}
	b.s.files.Clip()
	return b.s
}

// partitionKey appends to b what tells a file's partition apart from
// others: its spec and each field's id, type and value.
func partitionKey(b []byte, spec int32, part map[int]any) []byte {
	b = binary.AppendVarint(b, int64(spec))
	if len(part) == 0 {
		return b
	}
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b = binary.AppendVarint(b, int64(id))
		switch v := part[id].(type) {
		case int32:
			b = binary.AppendVarint(append(b, 'i'), int64(v))
		case int64:
			b = binary.AppendVarint(append(b, 'l'), v)
		case string:
			b = append(binary.AppendUvarint(append(b, 's'), uint64(len(v))), v...)
		case []byte:
			b = append(binary.AppendUvarint(append(b, 'b'), uint64(len(v))), v...)
		case nil:
			b = append(b, 'n')
		default: // the other types, rarer: told apart by their type and text
			text := fmt.Sprintf("%T:%v", v, v)
			b = append(binary.AppendUvarint(append(b, 'o'), uint64(len(text))), text...)
		}
	}
	return b
}

// key appends to b what tells e apart from other extras.
func (e fileExtra) key(b []byte) []byte {
	b = append(binary.AppendUvarint(b, uint64(len(e.keyMetadata))), e.keyMetadata...)
	b = binary.AppendUvarint(b, uint64(len(e.splits)))
	for _, off := range e.splits {
		b = binary.AppendVarint(b, off)
	}
	if e.sortOrder != nil {
		b = binary.AppendVarint(append(b, 1), int64(*e.sortOrder))
	}
	return b
}

// len is the number of data files.
func (s *fileSet) len() int { return len(s.records) }

// bytes is the memory s holds, for the cache's accounting: its columns,
// the paths' bytes, what is shared, and the statistics.
func (s *fileSet) bytes() int64 {
	n := int64(s.len())
	size := 512 + s.files.Bytes() + n*(8+1+4+4) // paths and sizes, records, format, partition, extra
	size += int64(len(s.partValues)) * 200
	for _, e := range s.extraValues {
		size += 64 + int64(len(e.keyMetadata)) + 8*int64(len(e.splits))
	}
	size += 8 * int64(len(s.firstRowIDs))
	for _, d := range s.deletes {
		size += d.bytes()
	}
	if s.deleteRefs != nil {
		size += 24 * n
		for _, refs := range s.deleteRefs {
			size += 8 * int64(cap(refs))
		}
	}
	for _, st := range s.stats {
		size += st.bytes()
	}
	return size
}

// file returns data file i as the DataFile of a task, without column
// statistics (a request asking for them takes the usual path).
func (s *fileSet) file(i int) *compactFile {
	e := s.extraValues[s.extras[i]]
	c := &compactFile{
		path: s.files.Path(i), format: s.formatNames[s.formats[i]], content: iceberg.EntryContentData, specID: s.partSpecs[s.parts[i]],
		count: s.records[i], size: s.files.Size(i), keyMetadata: e.keyMetadata, splits: e.splits, sortOrder: e.sortOrder,
	}
	for id, v := range s.partValues[s.parts[i]] {
		c.partition = append(c.partition, fieldValue{id, v})
	}
	slices.SortFunc(c.partition, func(a, b fieldValue) int { return a.id - b.id })
	if s.firstRowIDs != nil && s.firstRowIDs[i] != noRowID {
		id := s.firstRowIDs[i]
		c.firstRowID = &id
	}
	return c
}

// task returns the scan task of data file i, its delete files included.
func (s *fileSet) task(i int) table.FileScanTask {
	t := table.FileScanTask{File: s.file(i), Length: s.files.Size(i)}
	if s.deleteRefs != nil {
		for _, ref := range s.deleteRefs[i] {
			d := iceberg.DataFile(s.deletes[ref.index])
			switch ref.kind {
			case 0:
				t.DeleteFiles = append(t.DeleteFiles, d)
			case 1:
				t.EqualityDeleteFiles = append(t.EqualityDeleteFiles, d)
			default:
				t.DeletionVectorFiles = append(t.DeletionVectorFiles, d)
			}
		}
	}
	return t
}

// columnStats are one column's statistics of every file of a set, as the
// fast path's statistics check reads them: integers (int, long, date,
// time, timestamps) as int64, strings and binaries as their bytes (both
// compare bytewise, as iceberg-go's literals do), other types as decoded
// literals.
type columnStats struct {
	nullsOnly, nansOnly []bool
	kind                boundKind
	// hasLower and hasUpper say which bounds are present and decodable;
	// the others rule nothing out.
	hasLower, hasUpper []bool
	ilo, ihi           []int64 // kind intBounds
	// blo and bhi are the bounds of kind bytesBounds: file i's lower
	// bound is slab[blo[i]:blo[i+1]], its upper slab[bhi[i]:bhi[i+1]].
	blo, bhi     []uint32
	slab         []byte
	lower, upper []iceberg.Literal // kind literalBounds
	// span is what every file's statistics have in common (intBounds and
	// bytesBounds), so that a value they cannot rule out for any file
	// costs no look at each.
	span columnSpan
}

// columnSpan is the range of values that no file's bounds exclude: from
// the largest lower bound to the smallest upper bound, when no file holds
// only nulls or NaNs.
type columnSpan struct {
	ok                 bool // no file holds only nulls or NaNs
	hasMaxLo, hasMinHi bool // some file has the bound
	maxLo, minHi       int64
	maxLoRaw, minHiRaw []byte
}

// keepsAll reports whether s's bounds rule out no file for some of the
// values (as ints or raw bytes, by kind): one within every file's bounds.
func (s *columnStats) keepsAll(ints []int64, raw [][]byte) bool {
	sp := &s.span
	if !sp.ok {
		return false
	}
	switch s.kind {
	case intBounds:
		for _, v := range ints {
			if (!sp.hasMaxLo || sp.maxLo <= v) && (!sp.hasMinHi || v <= sp.minHi) {
				return true
			}
		}
	case bytesBounds:
		for _, v := range raw {
			if (!sp.hasMaxLo || bytes.Compare(sp.maxLoRaw, v) <= 0) && (!sp.hasMinHi || bytes.Compare(v, sp.minHiRaw) <= 0) {
				return true
			}
		}
	}
	return false
}

// setSpan computes s.span.
func (s *columnStats) setSpan() {
	sp := columnSpan{ok: !slices.Contains(s.nullsOnly, true) && !slices.Contains(s.nansOnly, true)}
	for i := range s.hasLower {
		switch s.kind {
		case intBounds:
			if s.hasLower[i] && (!sp.hasMaxLo || s.ilo[i] > sp.maxLo) {
				sp.hasMaxLo, sp.maxLo = true, s.ilo[i]
			}
			if s.hasUpper[i] && (!sp.hasMinHi || s.ihi[i] < sp.minHi) {
				sp.hasMinHi, sp.minHi = true, s.ihi[i]
			}
		case bytesBounds:
			if lo := s.slab[s.blo[i]:s.blo[i+1]]; s.hasLower[i] && (!sp.hasMaxLo || bytes.Compare(lo, sp.maxLoRaw) > 0) {
				sp.hasMaxLo, sp.maxLoRaw = true, lo
			}
			if hi := s.slab[s.bhi[i]:s.bhi[i+1]]; s.hasUpper[i] && (!sp.hasMinHi || bytes.Compare(hi, sp.minHiRaw) < 0) {
				sp.hasMinHi, sp.minHiRaw = true, hi
			}
		}
	}
	s.span = sp
}

// boundKind is how a column's bounds are held.
type boundKind uint8

const (
	intBounds boundKind = iota
	bytesBounds
	literalBounds
)

// boundKindOf is how the bounds of a column of typ are held.
func boundKindOf(typ iceberg.Type) boundKind {
	switch typ.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return intBounds
	case iceberg.StringType, iceberg.BinaryType:
		return bytesBounds
	}
	return literalBounds
}

// statsBuilder makes the columnStats of one field a file at a time.
type statsBuilder struct {
	field    iceberg.NestedField
	s        *columnStats
	los, his [][]byte // bytesBounds: gathered, laid out in one slab at the end
}

func newStatsBuilder(field iceberg.NestedField, capacity int) *statsBuilder {
	sb := &statsBuilder{field: field, s: &columnStats{kind: boundKindOf(field.Type), nullsOnly: make([]bool, 0, capacity),
		nansOnly: make([]bool, 0, capacity), hasLower: make([]bool, 0, capacity), hasUpper: make([]bool, 0, capacity)}}
	switch sb.s.kind {
	case intBounds:
		sb.s.ilo, sb.s.ihi = make([]int64, 0, capacity), make([]int64, 0, capacity)
	case bytesBounds:
		sb.los, sb.his = make([][]byte, 0, capacity), make([][]byte, 0, capacity)
	}
	return sb
}

// boundArena holds copies of many small byte strings (bounds of string
// and binary columns) in a few large chunks instead of one allocation
// each.
type boundArena struct{ chunk []byte }

// copy returns a copy of b held in the arena (nil for nil).
func (a *boundArena) copy(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) > 1<<10 {
		return append(make([]byte, 0, len(b)), b...)
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, 64<<10)
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[start:len(a.chunk):len(a.chunk)]
}

// copyUpper returns upperPrefix(hi) held in the arena.
func (a *boundArena) copyUpper(hi []byte) []byte {
	n := upperCut(hi)
	if n == 0 {
		return a.copy(hi)
	}
	up := a.copy(hi[:n])
	up[n-1]++
	return up
}

// add adds a file's statistics of the field, as the manifest decoder
// gives them or as setBuilder.add takes them from a DataFile's maps:
// counts present or not, bounds decoded as iceberg.LiteralFromBytes decodes
// them (an integer of another width than its type's is no bound), string
// and binary bounds copied into arena.
func (sb *statsBuilder) add(st *manifestdec.ColumnStats, arena *boundArena) {
	s := sb.s
	s.nullsOnly = append(s.nullsOnly, st.HasNulls && st.HasValues && st.Nulls == st.Values)
	s.nansOnly = append(s.nansOnly, st.HasNaNs && st.HasValues && st.NaNs == st.Values)
	switch s.kind {
	case intBounds:
		lo, lok := intBound(sb.field.Type, st.Lower)
		hi, hok := intBound(sb.field.Type, st.Upper)
		s.hasLower, s.hasUpper = append(s.hasLower, lok), append(s.hasUpper, hok)
		s.ilo, s.ihi = append(s.ilo, lo), append(s.ihi, hi)
	case bytesBounds: // strings and binaries: every byte string is a bound
		s.hasLower, s.hasUpper = append(s.hasLower, st.Lower != nil), append(s.hasUpper, st.Upper != nil)
		sb.los, sb.his = append(sb.los, arena.copy(lowerPrefix(st.Lower))), append(sb.his, arena.copyUpper(st.Upper))
	default:
		lo := decodeBound(sb.field.Type, slices.Clone(st.Lower)) // literals may keep the bytes
		hi := decodeBound(sb.field.Type, slices.Clone(st.Upper))
		s.hasLower, s.hasUpper = append(s.hasLower, lo != nil), append(s.hasUpper, hi != nil)
		s.lower, s.upper = append(s.lower, lo), append(s.upper, hi)
	}
}

// intBound is a bound of an integer column (int, long, date, time,
// timestamps), decoded as iceberg.LiteralFromBytes does: 4 bytes
// little-endian for int and date, 8 for the others, anything else no
// bound.
func intBound(typ iceberg.Type, raw []byte) (int64, bool) {
	switch typ.(type) {
	case iceberg.Int32Type, iceberg.DateType:
		if len(raw) == 4 {
			return int64(int32(binary.LittleEndian.Uint32(raw))), true
		}
	default:
		if len(raw) == 8 {
			return int64(binary.LittleEndian.Uint64(raw)), true
		}
	}
	return 0, false
}

// heldBoundBytes is how much of a string or binary bound a base holds:
// Iceberg's default metrics mode, truncate(16), writes no more, and a
// writer in mode full writes whole values (e-mail addresses, URLs), which
// at 1,000,000 files cost a base tens of megabytes for little: a value
// within 16 bytes of a bound is rare, and the index still checks the file.
const heldBoundBytes = 16

// lowerPrefix returns a lower bound of at most heldBoundBytes that is at
// most lo: its prefix.
func lowerPrefix(lo []byte) []byte {
	if len(lo) <= heldBoundBytes {
		return lo
	}
	return lo[:heldBoundBytes]
}

// upperPrefix returns an upper bound of at most heldBoundBytes that is at
// least hi, as Iceberg truncates upper bounds: its prefix with the last
// byte that can be incremented incremented; hi itself when none can.
func upperPrefix(hi []byte) []byte {
	n := upperCut(hi)
	if n == 0 {
		return hi
	}
	up := append([]byte(nil), hi[:n]...)
	up[n-1]++
	return up
}

// upperCut is the length of upperPrefix(hi) when it is a prefix of hi with
// its last byte incremented, 0 when it is hi itself.
func upperCut(hi []byte) int {
	if len(hi) <= heldBoundBytes {
		return 0
	}
	for n := heldBoundBytes; n > 0; n-- {
		if hi[n-1] < 0xff {
			return n
		}
	}
	return 0
}

// addRows adds files [start, end) of src, statistics of the same field.
func (sb *statsBuilder) addRows(src *columnStats, start, end int) {
	s := sb.s
	s.nullsOnly = append(s.nullsOnly, src.nullsOnly[start:end]...)
	s.nansOnly = append(s.nansOnly, src.nansOnly[start:end]...)
	s.hasLower = append(s.hasLower, src.hasLower[start:end]...)
	s.hasUpper = append(s.hasUpper, src.hasUpper[start:end]...)
	switch {
	case s.kind == intBounds:
		s.ilo, s.ihi = append(s.ilo, src.ilo[start:end]...), append(s.ihi, src.ihi[start:end]...)
	case s.kind == bytesBounds && src.kind == bytesBounds:
		for i := start; i < end; i++ {
			sb.los = append(sb.los, src.slab[src.blo[i]:src.blo[i+1]])
			sb.his = append(sb.his, src.slab[src.bhi[i]:src.bhi[i+1]])
		}
	case s.kind == bytesBounds: // src fell back to literals
		for i := start; i < end; i++ {
			sb.los, sb.his = append(sb.los, lowerPrefix(literalBytes(src.lower[i]))), append(sb.his, upperPrefix(literalBytes(src.upper[i])))
		}
	default:
		s.lower, s.upper = append(s.lower, src.lower[start:end]...), append(s.upper, src.upper[start:end]...)
	}
}

// finish returns the statistics made: bytes bounds laid out in one slab,
// or as literals where offsets of 32 bits would not hold them.
func (sb *statsBuilder) finish() *columnStats {
	s := sb.s
	defer s.setSpan()
	if s.kind != bytesBounds {
		return s
	}
	total := 0
	for i := range sb.los {
		total += len(sb.los[i]) + len(sb.his[i])
	}
	n := len(sb.los)
	if total > math.MaxUint32/2 {
		s.kind, s.lower, s.upper = literalBounds, make([]iceberg.Literal, n), make([]iceberg.Literal, n)
		for i := range n {
			if s.hasLower[i] {
				s.lower[i] = decodeBound(sb.field.Type, sb.los[i])
			}
			if s.hasUpper[i] {
				s.upper[i] = decodeBound(sb.field.Type, sb.his[i])
			}
		}
		return s
	}
	s.slab = make([]byte, 0, total)
	s.blo, s.bhi = make([]uint32, n+1), make([]uint32, n+1)
	for i := range n {
		s.blo[i] = uint32(len(s.slab))
		s.slab = append(s.slab, sb.los[i]...)
	}
	s.blo[n] = uint32(len(s.slab))
	for i := range n {
		s.bhi[i] = uint32(len(s.slab))
		s.slab = append(s.slab, sb.his[i]...)
	}
	s.bhi[n] = uint32(len(s.slab))
	return s
}

// literalBytes is a string or binary literal's bytes.
func literalBytes(l iceberg.Literal) []byte {
	switch l := l.(type) {
	case iceberg.TypedLiteral[string]:
		return []byte(l.Value())
	case iceberg.TypedLiteral[[]byte]:
		return l.Value()
	}
	return nil
}

// bytes is the memory s holds.
func (s *columnStats) bytes() int64 {
	n := int64(len(s.nullsOnly))
	size := 4*n + 128
	switch s.kind {
	case intBounds:
		size += 16 * n
	case bytesBounds:
		size += 8*n + int64(len(s.slab))
	default:
		size += 2 * n * (16 + 48) // an interface and what it points to
	}
	return size
}

// within reports whether one of values (of the column's type; ints when
// the column's kind is intBounds) may lie within file i's bounds: a bound
// absent or NaN rules nothing out, as in iceberg-go's inclusive metrics
// evaluator.
func (s *columnStats) within(i int, values []iceberg.Literal, ints []int64, raw [][]byte) bool {
	switch s.kind {
	case intBounds:
		for _, v := range ints {
			if s.hasLower[i] && s.ilo[i] > v || s.hasUpper[i] && s.ihi[i] < v {
				continue
			}
			return true
		}
		return false
	case bytesBounds:
		lo, hi := s.slab[s.blo[i]:s.blo[i+1]], s.slab[s.bhi[i]:s.bhi[i+1]]
		for _, v := range raw {
			if s.hasLower[i] && bytes.Compare(lo, v) > 0 || s.hasUpper[i] && bytes.Compare(hi, v) < 0 {
				continue
			}
			return true
		}
		return false
	}
	return anyWithin(values, s.lower[i], s.upper[i])
}
