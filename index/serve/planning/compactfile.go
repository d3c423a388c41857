package planning

import (
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// compactFile is an iceberg.DataFile held in a quarter of the memory of
// iceberg-go's own, which keeps each statistic twice, as decoded from Avro
// and as maps, about 2 KiB a file of one or two columns. compactFile keeps
// each once, in slices sorted by field id, and makes a map when asked for
// one: a new map each call, as iceberg-go's own getters return copies. A
// base plan (fileSet) keeps its delete files so, and gives its candidate
// data files back as compactFiles without statistics.
type compactFile struct {
	path        string
	format      iceberg.FileFormat
	content     iceberg.ManifestEntryContent
	specID      int32
	count, size int64
	partition   []fieldValue
	// counts holds column sizes, value, null, NaN and distinct counts, by
	// kind and then field id; hasCounts says which of the maps exist.
	counts    []fieldCount
	hasCounts [countKinds]bool
	// lower and upper are the bounds; nil when the map is absent.
	lower, upper []fieldBound
	keyMetadata  []byte
	splits       []int64
	equalityIDs  []int
	sortOrder    *int
	firstRowID   *int64
	referenced   *string
	// contentOffset and contentSize locate a deletion vector in its file.
	contentOffset, contentSize *int64
}

// The kinds of count statistics, in DataFile's order.
const (
	columnSizes = iota
	valueCounts
	nullCounts
	nanCounts
	distinctCounts
	countKinds
)

type fieldValue struct {
	id int
	v  any
}

type fieldCount struct {
	kind int8
	id   int32
	n    int64
}

type fieldBound struct {
	id int32
	v  []byte
}

// compact returns f as a compactFile. The slices f's getters return are
// copies already, so they are kept as they come.
func compact(f iceberg.DataFile) *compactFile {
	if c, ok := f.(*compactFile); ok {
		return c
	}
	c := &compactFile{
		path: f.FilePath(), format: f.FileFormat(), content: f.ContentType(), specID: f.SpecID(),
		count: f.Count(), size: f.FileSizeBytes(), keyMetadata: f.KeyMetadata(), splits: f.SplitOffsets(),
		equalityIDs: f.EqualityFieldIDs(), sortOrder: copied(f.SortOrderID()), firstRowID: copied(f.FirstRowID()),
		referenced: copied(f.ReferencedDataFile()), contentOffset: copied(f.ContentOffset()),
		contentSize: copied(f.ContentSizeInBytes()),
	}
	for id, v := range f.Partition() {
		c.partition = append(c.partition, fieldValue{id, v})
	}
	slices.SortFunc(c.partition, func(a, b fieldValue) int { return a.id - b.id })
	for kind, m := range [countKinds]map[int]int64{f.ColumnSizes(), f.ValueCounts(), f.NullValueCounts(), f.NaNValueCounts(), f.DistinctValueCounts()} {
		c.hasCounts[kind] = m != nil
		for id, n := range m {
			c.counts = append(c.counts, fieldCount{int8(kind), int32(id), n})
		}
	}
	slices.SortFunc(c.counts, func(a, b fieldCount) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return int(a.id - b.id)
	})
	c.lower, c.upper = bounds(f.LowerBoundValues()), bounds(f.UpperBoundValues())
	return c
}

func copied[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// bounds returns m's entries sorted by field id, nil for a nil m.
func bounds(m map[int][]byte) []fieldBound {
	if m == nil {
		return nil
	}
	out := make([]fieldBound, 0, len(m))
	for id, v := range m {
		out = append(out, fieldBound{int32(id), v})
	}
	slices.SortFunc(out, func(a, b fieldBound) int { return int(a.id - b.id) })
	return out
}

// bytes is the memory c holds, for the cache's accounting.
func (c *compactFile) bytes() int64 {
	n := int64(240 + len(c.path) + len(c.keyMetadata) + 8*len(c.splits) + 8*len(c.equalityIDs))
	n += int64(len(c.partition))*40 + int64(len(c.counts))*16
	for _, b := range [][]fieldBound{c.lower, c.upper} {
		n += 24
		for _, v := range b {
			n += 32 + int64(len(v.v))
		}
	}
	if c.referenced != nil {
		n += 16 + int64(len(*c.referenced))
	}
	return n
}

func (c *compactFile) countMap(kind int) map[int]int64 {
	if !c.hasCounts[kind] {
		return nil
	}
	m := map[int]int64{}
	for _, fc := range c.counts {
		if int(fc.kind) == kind {
			m[int(fc.id)] = fc.n
		}
	}
	return m
}

func boundMap(b []fieldBound) map[int][]byte {
	if b == nil {
		return nil
	}
	m := make(map[int][]byte, len(b))
	for _, fb := range b {
		m[int(fb.id)] = slices.Clone(fb.v) // a copy, as iceberg-go's getter returns
	}
	return m
}

func (c *compactFile) ContentType() iceberg.ManifestEntryContent { return c.content }
func (c *compactFile) FilePath() string                          { return c.path }
func (c *compactFile) FileFormat() iceberg.FileFormat            { return c.format }
func (c *compactFile) Count() int64                              { return c.count }
func (c *compactFile) FileSizeBytes() int64                      { return c.size }
func (c *compactFile) SpecID() int32                             { return c.specID }
func (c *compactFile) ColumnSizes() map[int]int64                { return c.countMap(columnSizes) }
func (c *compactFile) ValueCounts() map[int]int64                { return c.countMap(valueCounts) }
func (c *compactFile) NullValueCounts() map[int]int64            { return c.countMap(nullCounts) }
func (c *compactFile) NaNValueCounts() map[int]int64             { return c.countMap(nanCounts) }
func (c *compactFile) DistinctValueCounts() map[int]int64        { return c.countMap(distinctCounts) }
func (c *compactFile) LowerBoundValues() map[int][]byte          { return boundMap(c.lower) }
func (c *compactFile) UpperBoundValues() map[int][]byte          { return boundMap(c.upper) }
func (c *compactFile) KeyMetadata() []byte                       { return slices.Clone(c.keyMetadata) }
func (c *compactFile) SplitOffsets() []int64                     { return slices.Clone(c.splits) }
func (c *compactFile) EqualityFieldIDs() []int                   { return slices.Clone(c.equalityIDs) }
func (c *compactFile) SortOrderID() *int                         { return copied(c.sortOrder) }
func (c *compactFile) FirstRowID() *int64                        { return copied(c.firstRowID) }
func (c *compactFile) ReferencedDataFile() *string               { return copied(c.referenced) }
func (c *compactFile) ContentOffset() *int64                     { return copied(c.contentOffset) }
func (c *compactFile) ContentSizeInBytes() *int64                { return copied(c.contentSize) }

func (c *compactFile) Partition() map[int]any {
	m := make(map[int]any, len(c.partition))
	for _, fv := range c.partition {
		m[fv.id] = fv.v
	}
	return m
}

// NoStatistics is a DataFile without column statistics, as a base plan's
// candidate data files are, for tests to compare with.
var NoStatistics iceberg.DataFile = &compactFile{}

// HeldTasks returns tasks (iceberg-go's plan, one task per data file) as
// a base plan holds them (fileSet) and gives its candidates back: every
// DataFile method of a data file answers as iceberg-go's decoded entry
// does but the column statistics, which are absent (a request for them
// takes the usual path), and its delete files answer every method as
// iceberg-go's (compactFile, in about 40% of the memory). It is exported
// so that the equivalence can be checked over tables other packages build
// (a history with every kind of delete).
func HeldTasks(tasks []table.FileScanTask, schema *iceberg.Schema) ([]table.FileScanTask, error) {
	set, err := newFileSet(tasks, schema, nil)
	if err != nil {
		return nil, err
	}
	out := make([]table.FileScanTask, set.len())
	for i := range out {
		out[i] = set.task(i)
	}
	return out, nil
}
