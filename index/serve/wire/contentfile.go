package wire

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// ContentFile writes what data and delete files share, as Java's
// ContentFileParser does: content and format in lowercase kebab case (Java
// 1.11's form, which 1.10 reads too), the partition typed by the spec's
// partition type, key metadata as uppercase hex.
func ContentFile(meta table.Metadata, f iceberg.DataFile) (rest.RESTContentFile, error) {
	cf := rest.RESTContentFile{
		SpecID:          int(f.SpecID()),
		Content:         contentName(f.ContentType()),
		FilePath:        f.FilePath(),
		FileFormat:      strings.ToLower(string(f.FileFormat())),
		FileSizeInBytes: f.FileSizeBytes(),
		RecordCount:     f.Count(),
		SplitOffsets:    f.SplitOffsets(),
		SortOrderID:     f.SortOrderID(),
	}
	if k := f.KeyMetadata(); len(k) > 0 {
		s := upperHex(k)
		cf.KeyMetadata = &s
	}
	partition, err := Partition(meta, f)
	if err != nil {
		return cf, fmt.Errorf("%s: %w", f.FilePath(), err)
	}
	cf.Partition = partition
	return cf, nil
}

func contentName(c iceberg.ManifestEntryContent) string {
	switch c {
	case iceberg.EntryContentPosDeletes:
		return "position-deletes"
	case iceberg.EntryContentEqDeletes:
		return "equality-deletes"
	default:
		return "data"
	}
}

// DataFile writes a data file with the column statistics of the field ids
// in statsFields only (the plan request's stats-fields; none when empty, as
// the spec says).
func DataFile(meta table.Metadata, f iceberg.DataFile, statsFields map[int]bool) (*rest.RESTDataFile, error) {
	cf, err := ContentFile(meta, f)
	if err != nil {
		return nil, err
	}
	df := &rest.RESTDataFile{RESTContentFile: cf, FirstRowID: f.FirstRowID()}
	if len(statsFields) == 0 {
		return df, nil
	}
	df.ColumnSizes = CountMap(f.ColumnSizes(), statsFields)
	df.ValueCounts = CountMap(f.ValueCounts(), statsFields)
	df.NullValueCounts = CountMap(f.NullValueCounts(), statsFields)
	df.NaNValueCounts = CountMap(f.NaNValueCounts(), statsFields)
	df.LowerBounds = Bounds(f.LowerBoundValues(), statsFields)
	df.UpperBounds = Bounds(f.UpperBoundValues(), statsFields)
	return df, nil
}

// DeleteFile writes a delete file: position deletes, equality deletes or a
// deletion vector (a blob of a Puffin file, at content-offset).
func DeleteFile(meta table.Metadata, f iceberg.DataFile) (rest.RESTDeleteFile, error) {
	cf, err := ContentFile(meta, f)
	if err != nil {
		return rest.RESTDeleteFile{}, err
	}
	d := rest.RESTDeleteFile{RESTContentFile: cf}
	switch f.ContentType() {
	case iceberg.EntryContentEqDeletes:
		d.EqualityIDs = f.EqualityFieldIDs()
	case iceberg.EntryContentPosDeletes:
		d.ReferencedDataFile = f.ReferencedDataFile()
		d.ContentOffset = f.ContentOffset()
		d.ContentSizeInBytes = f.ContentSizeInBytes()
	default:
		return d, fmt.Errorf("%s: a data file where a delete file is expected", f.FilePath())
	}
	return d, nil
}

// CountMap writes the counts of the field ids in fields, keys ascending
// (Java writes a map<int, long> as parallel keys and values); nil for a
// nil m, as an absent statistic is absent on the wire.
func CountMap(m map[int]int64, fields map[int]bool) *rest.RESTCountMap {
	if m == nil {
		return nil
	}
	out := &rest.RESTCountMap{Keys: []int{}, Values: []int64{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if fields[k] {
			out.Keys, out.Values = append(out.Keys, k), append(out.Values, m[k])
		}
	}
	return out
}

// Bounds writes lower or upper bounds of the field ids in fields. Java's
// ContentFileParser writes bounds as a map<int, binary> through
// SingleValueParser: each bound is the column's binary single-value
// serialization (what iceberg-go's LowerBoundValues holds), in uppercase
// hex, not a typed value.
func Bounds(m map[int][]byte, fields map[int]bool) *rest.RESTValueMap {
	if m == nil {
		return nil
	}
	out := &rest.RESTValueMap{Keys: []int{}, Values: []string{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if fields[k] {
			out.Keys, out.Values = append(out.Keys, k), append(out.Values, upperHex(m[k]))
		}
	}
	return out
}

// ParseBounds reads bounds back into the binary serialization of each
// column (iceberg.LiteralFromBytes reads one with the column's type).
func ParseBounds(v *rest.RESTValueMap) (map[int][]byte, error) {
	if v == nil {
		return nil, nil
	}
	if len(v.Keys) != len(v.Values) {
		return nil, fmt.Errorf("bounds have %d keys and %d values", len(v.Keys), len(v.Values))
	}
	out := make(map[int][]byte, len(v.Keys))
	for i, k := range v.Keys {
		b, err := decodeHex(v.Values[i])
		if err != nil {
			return nil, fmt.Errorf("bound of field %d: %q: %w", k, v.Values[i], err)
		}
		out[k] = b
	}
	return out, nil
}
