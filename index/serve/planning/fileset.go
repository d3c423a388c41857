package planning

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/lookup"
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
// (those of the filter that made it, fieldIDs): a lookup of another column
// makes a new set, as a new base. Statistics of other columns are not
// kept, so a request that asks for them (stats-fields) takes the usual
// path, which decodes the manifests again.
type fileSet struct {
	files   lookup.Files // paths and sizes, for the index
	records []int64
	specs   []int32
	formats []uint8 // index into formatNames
	parts   []int32 // index into partValues
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
	n := len(tasks)
	s := &fileSet{
		files:   lookup.Files{Paths: make([]string, n), Sizes: make([]int64, n)},
		records: make([]int64, n), specs: make([]int32, n), formats: make([]uint8, n), parts: make([]int32, n), extras: make([]int32, n),
		stats: map[int]*columnStats{},
	}
	formatIdx := map[iceberg.FileFormat]uint8{}
	partIdx := map[string]int32{}
	extraIdx := map[string]int32{}
	deleteIdx := map[iceberg.DataFile]int32{}
	seen := make(map[string]struct{}, n)
	var key []byte
	for i := range tasks {
		t := &tasks[i]
		f := t.File
		path := f.FilePath()
		if _, dup := seen[path]; dup {
			return nil, fmt.Errorf("%s: several tasks of one data file", path)
		}
		seen[path] = struct{}{}
		s.files.Paths[i], s.files.Sizes[i] = path, f.FileSizeBytes()
		s.records[i], s.specs[i] = f.Count(), f.SpecID()
		fi, ok := formatIdx[f.FileFormat()]
		if !ok {
			fi = uint8(len(s.formatNames))
			formatIdx[f.FileFormat()] = fi
			s.formatNames = append(s.formatNames, f.FileFormat())
		}
		s.formats[i] = fi

		part := f.Partition()
		key = partitionKey(key[:0], f.SpecID(), part)
		pi, ok := partIdx[string(key)]
		if !ok {
			pi = int32(len(s.partValues))
			partIdx[string(key)] = pi
			s.partValues = append(s.partValues, part)
			s.partSpecs = append(s.partSpecs, f.SpecID())
		}
		s.parts[i] = pi

		extra := fileExtra{keyMetadata: f.KeyMetadata(), splits: f.SplitOffsets(), sortOrder: copied(f.SortOrderID())}
		key = extra.key(key[:0])
		ei, ok := extraIdx[string(key)]
		if !ok {
			ei = int32(len(s.extraValues))
			extraIdx[string(key)] = ei
			s.extraValues = append(s.extraValues, extra)
		}
		s.extras[i] = ei

		if id := f.FirstRowID(); id != nil {
			if s.firstRowIDs == nil {
				s.firstRowIDs = make([]int64, n)
				for j := range i {
					s.firstRowIDs[j] = noRowID
				}
			}
			s.firstRowIDs[i] = *id
		} else if s.firstRowIDs != nil {
			s.firstRowIDs[i] = noRowID
		}

		for kind, group := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range group {
				di, ok := deleteIdx[d]
				if !ok {
					di = int32(len(s.deletes))
					deleteIdx[d] = di
					s.deletes = append(s.deletes, compact(d))
				}
				if s.deleteRefs == nil {
					s.deleteRefs = make([][]deleteRef, n)
				}
				s.deleteRefs[i] = append(s.deleteRefs[i], deleteRef{uint8(kind), di})
			}
		}
	}
	for _, id := range fieldIDs {
		if field, ok := schema.FindFieldByID(id); ok {
			s.stats[id] = newColumnStats(tasks, field)
		}
	}
	return s, nil
}

// partitionKey appends to b what tells a file's partition apart from
// others: its spec and each field's id, type and value.
func partitionKey(b []byte, spec int32, part map[int]any) []byte {
	b = fmt.Appendf(b, "%d", spec)
	for _, id := range slices.Sorted(maps.Keys(part)) {
		v := part[id]
		if raw, ok := v.([]byte); ok {
			b = fmt.Appendf(b, "|%d:%T:%x", id, v, raw)
			continue
		}
		b = fmt.Appendf(b, "|%d:%T:%v", id, v, v)
	}
	return b
}

// key appends to b what tells e apart from other extras.
func (e fileExtra) key(b []byte) []byte {
	b = fmt.Appendf(b, "%x|%v|%t", e.keyMetadata, e.splits, e.sortOrder != nil)
	if e.sortOrder != nil {
		b = fmt.Appendf(b, "%d", *e.sortOrder)
	}
	return b
}

// len is the number of data files.
func (s *fileSet) len() int { return len(s.files.Paths) }

// bytes is the memory s holds, for the cache's accounting: its columns,
// the paths' bytes, what is shared, and the statistics.
func (s *fileSet) bytes() int64 {
	n := int64(s.len())
	size := 512 + n*(16+8+8+4+1+4+4) // path header, size, records, spec, format, partition, extra
	for _, p := range s.files.Paths {
		size += int64(len(p))
	}
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
		path: s.files.Paths[i], format: s.formatNames[s.formats[i]], content: iceberg.EntryContentData, specID: s.specs[i],
		count: s.records[i], size: s.files.Sizes[i], keyMetadata: e.keyMetadata, splits: e.splits, sortOrder: e.sortOrder,
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
	t := table.FileScanTask{File: s.file(i), Length: s.files.Sizes[i]}
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

// newColumnStats decodes the statistics of field from every task's file.
func newColumnStats(tasks []table.FileScanTask, field iceberg.NestedField) *columnStats {
	n := len(tasks)
	s := &columnStats{nullsOnly: make([]bool, n), nansOnly: make([]bool, n), kind: boundKindOf(field.Type),
		hasLower: make([]bool, n), hasUpper: make([]bool, n)}
	switch s.kind {
	case intBounds:
		s.ilo, s.ihi = make([]int64, n), make([]int64, n)
	case bytesBounds:
		s.blo, s.bhi = make([]uint32, n+1), make([]uint32, n+1)
	default:
		s.lower, s.upper = make([]iceberg.Literal, n), make([]iceberg.Literal, n)
	}
	var los, his [][]byte // bytesBounds: gathered, then laid out in one slab
	if s.kind == bytesBounds {
		los, his = make([][]byte, n), make([][]byte, n)
	}
	for i := range tasks {
		f := tasks[i].File
		vc, vok := f.ValueCounts()[field.ID]
		if nc, ok := f.NullValueCounts()[field.ID]; ok && vok && nc == vc {
			s.nullsOnly[i] = true
		}
		if nc, ok := f.NaNValueCounts()[field.ID]; ok && vok && nc == vc {
			s.nansOnly[i] = true
		}
		lo := decodeBound(field.Type, f.LowerBoundValues()[field.ID])
		hi := decodeBound(field.Type, f.UpperBoundValues()[field.ID])
		s.hasLower[i], s.hasUpper[i] = lo != nil, hi != nil
		switch s.kind {
		case intBounds:
			s.ilo[i], _ = asInt64(lo)
			s.ihi[i], _ = asInt64(hi)
		case bytesBounds:
			los[i], his[i] = literalBytes(lo), literalBytes(hi)
		default:
			s.lower[i], s.upper[i] = lo, hi
		}
	}
	if s.kind == bytesBounds {
		for i := range n {
			s.blo[i] = uint32(len(s.slab))
			s.slab = append(s.slab, los[i]...)
		}
		s.blo[n] = uint32(len(s.slab))
		for i := range n {
			s.bhi[i] = uint32(len(s.slab))
			s.slab = append(s.slab, his[i]...)
		}
		s.bhi[n] = uint32(len(s.slab))
		if len(s.slab) > math.MaxUint32/2 { // offsets would not hold
			s.kind, s.lower, s.upper = literalBounds, make([]iceberg.Literal, n), make([]iceberg.Literal, n)
			for i := range n {
				s.lower[i], s.upper[i] = decodeBound(field.Type, los[i]), decodeBound(field.Type, his[i])
			}
			s.blo, s.bhi, s.slab = nil, nil, nil
		}
	}
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
