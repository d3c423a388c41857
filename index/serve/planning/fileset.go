package planning

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

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

	// extended is set once a set of s's files and more shares s's columns
	// and appends in their room (extension): one set may, the others copy.
	extended atomic.Bool
	// sharedAt is how many partitions and extras s had when a set was
	// last made by copying (setBuilder.addRows, which keeps each once):
	// an extension keeps the new files' own apart from the ones before.
	sharedAt int
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
	extending bool // s shares the columns of the set it extends (extension)
	fields    []iceberg.NestedField
	stats     []*statsBuilder // by fields
	formatIdx map[iceberg.FileFormat]uint8
	partIdx   map[string]int32
	extraIdx  map[string]int32
	deleteIdx map[iceberg.DataFile]int32
	key       []byte
}

func newSetBuilder(schema *iceberg.Schema, fieldIDs []int, capacity int) *setBuilder {
	b := builderOf(&fileSet{
		records: make([]int64, 0, capacity), formats: make([]uint8, 0, capacity),
		parts: make([]int32, 0, capacity), extras: make([]int32, 0, capacity), stats: map[int]*columnStats{},
	})
	b.s.files.Grow(capacity)
	for _, id := range fieldIDs {
		if field, ok := schema.FindFieldByID(id); ok {
			b.fields = append(b.fields, field)
			b.stats = append(b.stats, newStatsBuilder(field, capacity))
		}
	}
	return b
}

// builderOf returns a builder appending to s, which holds no format,
// partition, extra or delete file it would find again.
func builderOf(s *fileSet) *setBuilder {
	return &setBuilder{s: s, formatIdx: map[iceberg.FileFormat]uint8{}, partIdx: map[string]int32{},
		extraIdx: map[string]int32{}, deleteIdx: map[iceberg.DataFile]int32{}}
}

// extension returns a builder of a set of s's files followed by others,
// which shares s's columns and appends in their room rather than copying
// them: the base of a table version that keeps every manifest of the last
// one and adds some (an append) costs the new manifests' files. It claims
// s, and returns nil when another set claimed it first, when s has delete
// files or lacks statistics of one of fieldIDs, or when the partitions and
// extras extensions added apart from the others (each keeps the new
// files' own) are as many as those s was made with: a set made by copying
// keeps each once again. Unclaim gives s back when the builder is not
// used.
func (s *fileSet) extension(schema *iceberg.Schema, fieldIDs []int) *setBuilder {
	if s.deletes != nil || !s.has(fieldIDs) || len(s.partValues)+len(s.extraValues) > 2*s.sharedAt+64 ||
		!s.extended.CompareAndSwap(false, true) {
		return nil
	}
	n := &fileSet{
		files: s.files.Extension(), records: s.records, formats: s.formats, parts: s.parts, extras: s.extras,
		formatNames: s.formatNames, partValues: s.partValues, partSpecs: s.partSpecs, extraValues: s.extraValues,
		firstRowIDs: s.firstRowIDs, stats: map[int]*columnStats{}, sharedAt: s.sharedAt,
	}
	b := builderOf(n)
	b.extending = true
	for i, f := range s.formatNames {
		b.formatIdx[f] = uint8(i)
	}
	for _, id := range fieldIDs {
		field, ok := schema.FindFieldByID(id)
		if !ok {
			continue
		}
		st := *s.stats[id] // its slices shared, appended to in their room
		b.fields = append(b.fields, field)
		b.stats = append(b.stats, &statsBuilder{field: field, s: &st, spanned: st.len(), span: st.span, extending: true})
	}
	return b
}

// room makes room in the columns of an extending builder for n more
// files, and a thirty-second of its files more when a column must be
// copied for them: appending's growth would leave a quarter more room
// than the files take, which the base's accounting counts, and a base of
// 1,000,000 files would no longer fit its part of the budget. A column is
// copied once per that many files appended.
func (b *setBuilder) room(n int) {
	s := b.s
	more := n + s.len()/32
	s.files.Grow(n) // as much room
	growFor(&s.records, n, more)
	growFor(&s.formats, n, more)
	growFor(&s.parts, n, more)
	growFor(&s.extras, n, more)
	if s.firstRowIDs != nil {
		growFor(&s.firstRowIDs, n, more)
	}
	for _, sb := range b.stats {
		st := sb.s
		for _, col := range []*[]bool{&st.nullsOnly, &st.nansOnly, &st.hasLower, &st.hasUpper} {
			growFor(col, n, more)
		}
		switch st.kind {
		case intBounds:
			growFor(&st.ilo, n, more)
			growFor(&st.ihi, n, more)
		case bytesBounds:
			growFor(&st.bounds, 2*n, 2*more)
			perFile := len(st.slab)/max(st.len(), 1) + 1
			growFor(&st.slab, n*perFile, more*perFile)
		default:
			growFor(&st.lower, n, more)
			growFor(&st.upper, n, more)
		}
	}
}

// growFor gives *s room for n more elements: room for more, exactly, when
// it must be copied for them.
func growFor[T any](s *[]T, n, more int) {
	if cap(*s)-len(*s) < n {
		*s = append(make([]T, 0, len(*s)+max(n, more)), *s...)
	}
}

// unclaim gives s back for another set to extend, when the builder
// extension returned was not used.
func (s *fileSet) unclaim() { s.extended.Store(false) }

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
			sb.add(&st)
		}
	}
}

// addRows adds files [start, end) of src, whose statistics hold every
// field of b's: each column in one copy, what files share looked up once
// per value src holds rather than once per file (the first plan after an
// append to 1,000,000 files copies them all).
func (b *setBuilder) addRows(src *fileSet, start, end int) {
	s := b.s
	first := s.len()
	s.files.AppendFrom(&src.files, start, end)
	s.records = append(s.records, src.records[start:end]...)
	formatOf := memoized(len(src.formatNames), func(k int) uint8 { return b.format(src.formatNames[k]) })
	partOf := memoized(len(src.partValues), func(k int) int32 { return b.partition(src.partSpecs[k], src.partValues[k]) })
	extraOf := memoized(len(src.extraValues), func(k int) int32 { return b.extra(src.extraValues[k]) })
	for i := start; i < end; i++ {
		s.formats = append(s.formats, formatOf(int(src.formats[i])))
		s.parts = append(s.parts, partOf(int(src.parts[i])))
		s.extras = append(s.extras, extraOf(int(src.extras[i])))
	}
	switch {
	case src.firstRowIDs != nil:
		b.firstRowIDsFrom(first)
		s.firstRowIDs = append(s.firstRowIDs, src.firstRowIDs[start:end]...)
	case s.firstRowIDs != nil:
		for range end - start {
			s.firstRowIDs = append(s.firstRowIDs, noRowID)
		}
	}
	if s.deleteRefs != nil {
		s.deleteRefs = append(s.deleteRefs, make([][]deleteRef, end-start)...)
	}
	if src.deleteRefs != nil {
		for i := start; i < end; i++ {
			for _, ref := range src.deleteRefs[i] {
				d := src.deletes[ref.index]
				b.addDelete(first+i-start, ref.kind, d, func() *compactFile { return d })
			}
		}
	}
	for k, field := range b.fields {
		b.stats[k].addRows(src.stats[field.ID], start, end)
	}
}

// memoized returns f of [0, n), each computed once.
func memoized[T any](n int, f func(int) T) func(int) T {
	done, values := make([]bool, n), make([]T, n)
	return func(k int) T {
		if !done[k] {
			values[k], done[k] = f(k), true
		}
		return values[k]
	}
}

// row adds one data file and returns its index.
func (b *setBuilder) row(path string, size, records int64, spec int32, format iceberg.FileFormat, part map[int]any, extra fileExtra, firstRowID *int64) int {
	s := b.s
	s.files.Append(path, size)
	i := len(s.records)
	s.records = append(s.records, records)
	s.formats = append(s.formats, b.format(format))
	s.parts = append(s.parts, b.partition(spec, part))
	s.extras = append(s.extras, b.extra(extra))
	if firstRowID != nil {
		b.firstRowIDsFrom(i)
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

// format, partition and extra return the index of a file's format, spec
// and partition, and extra among those b holds, adding it if new.
func (b *setBuilder) format(format iceberg.FileFormat) uint8 {
	fi, ok := b.formatIdx[format]
	if !ok {
		fi = uint8(len(b.s.formatNames))
		b.formatIdx[format] = fi
		b.s.formatNames = append(b.s.formatNames, format)
	}
	return fi
}

func (b *setBuilder) partition(spec int32, part map[int]any) int32 {
	b.key = partitionKey(b.key[:0], spec, part)
	pi, ok := b.partIdx[string(b.key)]
	if !ok {
		pi = int32(len(b.s.partValues))
		b.partIdx[string(b.key)] = pi
		b.s.partValues = append(b.s.partValues, part)
		b.s.partSpecs = append(b.s.partSpecs, spec)
	}
	return pi
}

func (b *setBuilder) extra(extra fileExtra) int32 {
	b.key = extra.key(b.key[:0])
	ei, ok := b.extraIdx[string(b.key)]
	if !ok {
		ei = int32(len(b.s.extraValues))
		b.extraIdx[string(b.key)] = ei
		b.s.extraValues = append(b.s.extraValues, extra)
	}
	return ei
}

// firstRowIDsFrom makes s.firstRowIDs, when nil, noRowID for its first n
// files: a file with a first row id comes after n without.
func (b *setBuilder) firstRowIDsFrom(n int) {
	if s := b.s; s.firstRowIDs == nil {
		s.firstRowIDs = make([]int64, n, cap(s.records))
		for j := range s.firstRowIDs {
			s.firstRowIDs[j] = noRowID
		}
	}
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
	if b.extending {
		b.s.files.Seal() // its room kept for the next version's files
		return b.s
	}
	b.s.files.Clip()
	b.s.sharedAt = len(b.s.partValues) + len(b.s.extraValues)
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
	n := int64(cap(s.records))                  // with the room an extended set appends in
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
	// bounds and slab hold the bounds of kind bytesBounds, file by file:
	// file i's lower bound is slab[bounds[2i]:bounds[2i+1]], its upper
	// slab[bounds[2i+1]:bounds[2i+2]]. Files are appended as they come, and
	// a range of another set's files is one copy.
	bounds       []uint32
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

// spanOf is the span of files [from, to).
func (s *columnStats) spanOf(from, to int) columnSpan {
	sp := columnSpan{ok: !slices.Contains(s.nullsOnly[from:to], true) && !slices.Contains(s.nansOnly[from:to], true)}
	for i := from; i < to; i++ {
		switch s.kind {
		case intBounds:
			if s.hasLower[i] && (!sp.hasMaxLo || s.ilo[i] > sp.maxLo) {
				sp.hasMaxLo, sp.maxLo = true, s.ilo[i]
			}
			if s.hasUpper[i] && (!sp.hasMinHi || s.ihi[i] < sp.minHi) {
				sp.hasMinHi, sp.minHi = true, s.ihi[i]
			}
		case bytesBounds:
			if lo := s.lowerBytes(i); s.hasLower[i] && (!sp.hasMaxLo || bytes.Compare(lo, sp.maxLoRaw) > 0) {
				sp.hasMaxLo, sp.maxLoRaw = true, lo
			}
			if hi := s.upperBytes(i); s.hasUpper[i] && (!sp.hasMinHi || bytes.Compare(hi, sp.minHiRaw) < 0) {
				sp.hasMinHi, sp.minHiRaw = true, hi
			}
		}
	}
	return sp
}

// merge is the span of the files of a and of b, both spans of one kind of
// bounds (so each compares either its ints or its bytes, the others being
// zero); a's and b's byte bounds are not kept.
func (a columnSpan) merge(b columnSpan) columnSpan {
	out := columnSpan{ok: a.ok && b.ok}
	for _, sp := range []columnSpan{a, b} {
		if sp.hasMaxLo && (!out.hasMaxLo || sp.maxLo > out.maxLo || bytes.Compare(sp.maxLoRaw, out.maxLoRaw) > 0) {
			out.hasMaxLo, out.maxLo, out.maxLoRaw = true, sp.maxLo, slices.Clone(sp.maxLoRaw)
		}
		if sp.hasMinHi && (!out.hasMinHi || sp.minHi < out.minHi || bytes.Compare(sp.minHiRaw, out.minHiRaw) < 0) {
			out.hasMinHi, out.minHi, out.minHiRaw = true, sp.minHi, slices.Clone(sp.minHiRaw)
		}
	}
	return out
}

// len is the number of files.
func (s *columnStats) len() int { return len(s.hasLower) }

// lowerBytes and upperBytes are file i's bounds of kind bytesBounds.
func (s *columnStats) lowerBytes(i int) []byte { return s.slab[s.bounds[2*i]:s.bounds[2*i+1]] }
func (s *columnStats) upperBytes(i int) []byte { return s.slab[s.bounds[2*i+1]:s.bounds[2*i+2]] }

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

// statsBuilder makes the columnStats of one field a file at a time, or a
// range of another set's files at a time.
type statsBuilder struct {
	field iceberg.NestedField
	s     *columnStats
	// spanned files' span is known: those of whole sets added first, or
	// of the set extended.
	spanned int
	span    columnSpan
	// extending: s shares the columns of the set it extends, whose slab's
	// room finish keeps.
	extending bool
}

func newStatsBuilder(field iceberg.NestedField, capacity int) *statsBuilder {
	sb := &statsBuilder{field: field, span: columnSpan{ok: true}, s: &columnStats{kind: boundKindOf(field.Type),
		nullsOnly: make([]bool, 0, capacity), nansOnly: make([]bool, 0, capacity), hasLower: make([]bool, 0, capacity),
		hasUpper: make([]bool, 0, capacity)}}
	switch sb.s.kind {
	case intBounds:
		sb.s.ilo, sb.s.ihi = make([]int64, 0, capacity), make([]int64, 0, capacity)
	case bytesBounds:
		sb.s.bounds = append(make([]uint32, 0, 2*capacity+1), 0)
	}
	return sb
}

// add adds a file's statistics of the field, as the manifest decoder
// gives them or as setBuilder.add takes them from a DataFile's maps:
// counts present or not, bounds decoded as iceberg.LiteralFromBytes decodes
// them (an integer of another width than its type's is no bound), string
// and binary bounds copied (held to heldBoundBytes).
func (sb *statsBuilder) add(st *manifestdec.ColumnStats) {
	s := sb.s
	s.nullsOnly = append(s.nullsOnly, st.HasNulls && st.HasValues && st.Nulls == st.Values)
	s.nansOnly = append(s.nansOnly, st.HasNaNs && st.HasValues && st.NaNs == st.Values)
	s.hasLower, s.hasUpper = append(s.hasLower, false), append(s.hasUpper, false)
	i := len(s.hasLower) - 1
	switch s.kind {
	case intBounds:
		lo, lok := intBound(sb.field.Type, st.Lower)
		hi, hok := intBound(sb.field.Type, st.Upper)
		s.hasLower[i], s.hasUpper[i] = lok, hok
		s.ilo, s.ihi = append(s.ilo, lo), append(s.ihi, hi)
		return
	case bytesBounds: // strings and binaries: every byte string is a bound
		s.hasLower[i], s.hasUpper[i] = st.Lower != nil, st.Upper != nil
		if sb.appendBytes(st.Lower, st.Upper) {
			return
		}
		s.hasLower, s.hasUpper = s.hasLower[:i], s.hasUpper[:i]
		s.nullsOnly, s.nansOnly = s.nullsOnly[:i], s.nansOnly[:i]
		sb.add(st) // as literals now
		return
	}
	loRaw, hiRaw := st.Lower, st.Upper
	if boundKindOf(sb.field.Type) == bytesBounds { // held as literals past maxSlabBytes: held to heldBoundBytes all the same
		loRaw, hiRaw = lowerPrefix(loRaw), upperPrefix(hiRaw)
	}
	lo := decodeBound(sb.field.Type, slices.Clone(loRaw)) // literals may keep the bytes
	hi := decodeBound(sb.field.Type, slices.Clone(hiRaw))
	s.hasLower[i], s.hasUpper[i] = lo != nil, hi != nil
	s.lower, s.upper = append(s.lower, lo), append(s.upper, hi)
}

// maxSlabBytes is the most a columnStats' slab holds: its offsets are of
// 32 bits (and an int of 32 bits counts to here). A variable, so that
// tests reach it.
var maxSlabBytes = math.MaxInt32

// appendBytes appends a file's byte bounds, held to heldBoundBytes
// (lowerPrefix, upperPrefix), to the slab; when offsets of 32 bits would
// not hold them, it holds every file's bounds as literals instead and
// returns false.
func (sb *statsBuilder) appendBytes(lo, hi []byte) bool {
	s := sb.s
	lo = lowerPrefix(lo)
	cut := upperCut(hi)
	if cut > 0 {
		hi = hi[:cut]
	}
	if len(s.slab)+len(lo)+len(hi) > maxSlabBytes {
		sb.toLiterals()
		return false
	}
	s.slab = append(s.slab, lo...)
	s.bounds = append(s.bounds, uint32(len(s.slab)))
	s.slab = append(s.slab, hi...)
	if cut > 0 {
		s.slab[len(s.slab)-1]++
	}
	s.bounds = append(s.bounds, uint32(len(s.slab)))
	return true
}

// toLiterals holds the bytes bounds of the files added as literals, and
// those of the files to come.
func (sb *statsBuilder) toLiterals() {
	s := sb.s
	n := len(s.bounds) / 2
	s.lower, s.upper = make([]iceberg.Literal, n), make([]iceberg.Literal, n)
	for i := range n {
		if s.hasLower[i] {
			s.lower[i] = decodeBound(sb.field.Type, slices.Clone(s.lowerBytes(i)))
		}
		if s.hasUpper[i] {
			s.upper[i] = decodeBound(sb.field.Type, slices.Clone(s.upperBytes(i)))
		}
	}
	s.kind, s.bounds, s.slab = literalBounds, nil, nil
	sb.spanned, sb.span = 0, columnSpan{ok: true}
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
	if sb.spanned == len(s.hasLower) && start == 0 && end == len(src.hasLower) && s.kind == src.kind {
		sb.spanned, sb.span = sb.spanned+end, sb.span.merge(src.span) // a whole set: its span is known
	}
	first := len(s.hasLower)
	s.nullsOnly = append(s.nullsOnly, src.nullsOnly[start:end]...)
	s.nansOnly = append(s.nansOnly, src.nansOnly[start:end]...)
	s.hasLower = append(s.hasLower, src.hasLower[start:end]...)
	s.hasUpper = append(s.hasUpper, src.hasUpper[start:end]...)
	switch {
	case s.kind == intBounds:
		s.ilo, s.ihi = append(s.ilo, src.ilo[start:end]...), append(s.ihi, src.ihi[start:end]...)
		return
	case s.kind == bytesBounds && src.kind == bytesBounds:
		from, to := int(src.bounds[2*start]), int(src.bounds[2*end])
		if len(s.slab)+to-from <= maxSlabBytes {
			shift := uint32(len(s.slab)) - uint32(from) // modulo 2^32: every sum fits
			s.slab = append(s.slab, src.slab[from:to]...)
			for _, off := range src.bounds[2*start+1 : 2*end+1] {
				s.bounds = append(s.bounds, off+shift)
			}
			return
		}
	case s.kind == bytesBounds: // src fell back to literals
		total := len(s.slab)
		for i := start; i < end; i++ {
			total += len(lowerPrefix(literalBytes(src.lower[i]))) + len(upperPrefix(literalBytes(src.upper[i])))
		}
		if total <= maxSlabBytes {
			for i := start; i < end; i++ {
				sb.appendBytes(literalBytes(src.lower[i]), literalBytes(src.upper[i]))
			}
			return
		}
	}
	if s.kind == bytesBounds { // the bounds overflow offsets of 32 bits
		s.nullsOnly, s.nansOnly, s.hasLower, s.hasUpper = s.nullsOnly[:first], s.nansOnly[:first], s.hasLower[:first], s.hasUpper[:first]
		sb.toLiterals()
		sb.addRows(src, start, end)
		return
	}
	for i := start; i < end; i++ { // held as literals
		if src.kind == literalBounds {
			s.lower, s.upper = append(s.lower, src.lower[i]), append(s.upper, src.upper[i])
			continue
		}
		var lo, hi iceberg.Literal
		if src.hasLower[i] {
			lo = decodeBound(sb.field.Type, slices.Clone(src.lowerBytes(i)))
		}
		if src.hasUpper[i] {
			hi = decodeBound(sb.field.Type, slices.Clone(src.upperBytes(i)))
		}
		s.lower, s.upper = append(s.lower, lo), append(s.upper, hi)
	}
}

// finish returns the statistics made, with their span. A slab grown by
// appending is copied to its size when it has room for a sixteenth more:
// the base's accounting counts what it holds, not its room.
func (sb *statsBuilder) finish() *columnStats {
	s := sb.s
	if !sb.extending && cap(s.slab)-len(s.slab) > len(s.slab)/16 {
		s.slab = slices.Clone(s.slab)
	}
	s.span = sb.span.merge(s.spanOf(sb.spanned, len(s.hasLower)))
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
	n := int64(cap(s.nullsOnly)) // with the room an extended set appends in
	size := 4*n + 128
	switch s.kind {
	case intBounds:
		size += 16 * n
	case bytesBounds:
		size += 8*n + int64(cap(s.slab))
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
		lo, hi := s.lowerBytes(i), s.upperBytes(i)
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
