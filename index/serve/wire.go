package serve

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// envelope encodes tasks as one REST ScanTasks envelope: one file-scan-task
// per data file and, once each, every delete file any of them needs, which
// each task names by its index in delete-files (delete-file-references are
// local to their envelope, so a page of a plan carries its own deletes).
//
// iceberg-go may split a large data file into several tasks (byte ranges);
// the REST FileScanTask has no range, so a client reads the whole file for
// each task it gets. Sending each split would make the client read a file's
// rows once per split, so the splits of a file become one task here, with
// the union of their delete files.
//
// statsFields are the field ids whose column statistics the client asked for
// (stats-fields); others are left out, as the spec says.
func envelope(meta table.Metadata, tasks []table.FileScanTask, statsFields map[int]bool) (rest.ScanTasks, error) {
	var env rest.ScanTasks
	deleteIdx := map[string]int{}
	taskIdx := map[string]int{}
	for _, t := range tasks {
		path := t.File.FilePath()
		ti, seen := taskIdx[path]
		if !seen {
			df, err := restDataFile(meta, t.File, statsFields)
			if err != nil {
				return rest.ScanTasks{}, err
			}
			wt := rest.RESTFileScanTask{DataFile: df}
			if t.Residual != nil {
				if wt.ResidualFilter, err = json.Marshal(t.Residual); err != nil {
					return rest.ScanTasks{}, fmt.Errorf("encode residual filter of %s: %w", path, err)
				}
			}
			ti = len(env.FileScanTasks)
			taskIdx[path] = ti
			env.FileScanTasks = append(env.FileScanTasks, wt)
		}
		wt := &env.FileScanTasks[ti]
		for _, group := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range group {
				key := deleteKey(d)
				di, ok := deleteIdx[key]
				if !ok {
					rd, err := restDeleteFile(meta, d)
					if err != nil {
						return rest.ScanTasks{}, err
					}
					di = len(env.DeleteFiles)
					deleteIdx[key] = di
					env.DeleteFiles = append(env.DeleteFiles, rd)
				}
				if !slices.Contains(wt.DeleteFileReferences, di) {
					wt.DeleteFileReferences = append(wt.DeleteFileReferences, di)
				}
			}
		}
	}
	return env, nil
}

// deleteKey tells delete files apart: deletion vectors of one Puffin file
// differ by their blob's offset.
func deleteKey(d iceberg.DataFile) string {
	key := d.FilePath()
	if off := d.ContentOffset(); off != nil {
		key += fmt.Sprintf("@%d", *off)
	}
	return key
}

// restContentFile encodes what data and delete files share.
func restContentFile(meta table.Metadata, f iceberg.DataFile) (rest.RESTContentFile, error) {
	cf := rest.RESTContentFile{
		SpecID:          int(f.SpecID()),
		Content:         contentName(f.ContentType()),
		FilePath:        f.FilePath(),
		FileFormat:      strings.ToLower(string(f.FileFormat())),
		FileSizeInBytes: f.FileSizeBytes(),
		RecordCount:     f.Count(),
		SplitOffsets:    f.SplitOffsets(),
		SortOrderID:     f.SortOrderID(),
		Partition:       []json.RawMessage{},
	}
	if k := f.KeyMetadata(); len(k) > 0 {
		s := hex.EncodeToString(k)
		cf.KeyMetadata = &s
	}
	spec := meta.PartitionSpecByID(int(f.SpecID()))
	if spec == nil {
		return cf, fmt.Errorf("%s: unknown partition spec %d", f.FilePath(), f.SpecID())
	}
	values := f.Partition()
	for _, field := range spec.Fields() {
		raw, err := partitionValue(values[field.FieldID])
		if err != nil {
			return cf, fmt.Errorf("%s: partition field %s: %w", f.FilePath(), field.Name, err)
		}
		cf.Partition = append(cf.Partition, raw)
	}
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

// partitionValue is the JSON single-value serialization of a partition
// value (the REST spec's PrimitiveTypeValue): numbers and booleans as JSON,
// dates, times, timestamps, decimals and UUIDs as their ISO/text forms,
// binary as hex.
func partitionValue(v any) (json.RawMessage, error) {
	var out any
	switch v := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case bool, int32, int64, float32, float64, string, int:
		out = v
	case []byte:
		out = hex.EncodeToString(v)
	case iceberg.Date:
		out = iceberg.DateLiteral(v).String()
	case iceberg.Time:
		out = iceberg.TimeLiteral(v).String()
	case iceberg.Timestamp:
		out = iceberg.TimestampLiteral(v).String()
	case iceberg.TimestampNano:
		out = iceberg.TimestampNsLiteral(v).String()
	case iceberg.Decimal:
		out = iceberg.DecimalLiteral(v).String()
	case uuid.UUID:
		out = v.String()
	default:
		return nil, fmt.Errorf("partition value of type %T is not supported", v)
	}
	return json.Marshal(out)
}

// restDataFile encodes a data file with the statistics of statsFields.
func restDataFile(meta table.Metadata, f iceberg.DataFile, statsFields map[int]bool) (*rest.RESTDataFile, error) {
	cf, err := restContentFile(meta, f)
	if err != nil {
		return nil, err
	}
	df := &rest.RESTDataFile{RESTContentFile: cf, FirstRowID: f.FirstRowID()}
	if len(statsFields) == 0 {
		return df, nil
	}
	df.ColumnSizes = countMap(f.ColumnSizes(), statsFields)
	df.ValueCounts = countMap(f.ValueCounts(), statsFields)
	df.NullValueCounts = countMap(f.NullValueCounts(), statsFields)
	df.NaNValueCounts = countMap(f.NaNValueCounts(), statsFields)
	df.LowerBounds = valueMap(f.LowerBoundValues(), statsFields)
	df.UpperBounds = valueMap(f.UpperBoundValues(), statsFields)
	return df, nil
}

// restDeleteFile encodes a delete file: position deletes, equality deletes
// or a deletion vector (a blob of a Puffin file).
func restDeleteFile(meta table.Metadata, f iceberg.DataFile) (rest.RESTDeleteFile, error) {
	cf, err := restContentFile(meta, f)
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

func countMap(m map[int]int64, fields map[int]bool) *rest.RESTCountMap {
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

func valueMap(m map[int][]byte, fields map[int]bool) *rest.RESTValueMap {
	if m == nil {
		return nil
	}
	out := &rest.RESTValueMap{Keys: []int{}, Values: []string{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if fields[k] {
			out.Keys, out.Values = append(out.Keys, k), append(out.Values, hex.EncodeToString(m[k]))
		}
	}
	return out
}

// errorModel is the REST spec's ErrorModel response body.
type errorModel struct {
	Error rest.PlanningError `json:"error"`
}
