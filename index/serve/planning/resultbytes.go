package planning

import (
	"encoding/json"
	"unsafe"

	"github.com/apache/iceberg-go/catalog/rest"
)

// A kept plan result is charged what it holds on the heap, counted by
// walking its pages rather than by the length of their JSON: marshalling
// every page of every plan only to size it cost about a tenth of a warm
// plan of a large table (the server encodes the pages again when it
// answers), and the JSON is not what is held. The Go values are larger
// than their JSON in places (a slice header and an allocation for each
// partition value, 8 bytes for each count's key) and smaller in others (no
// field names), and a result of 4,000 files held 17% more than its JSON's
// length (TestResultSizeMeasured).
//
// The count errs upward: each allocation is rounded up to the allocator's
// size class (allocBytes), and what the pages share with one another or
// with the plan's inputs (a file's path, split offsets) is counted as if
// the result held it alone. A residual that consecutive tasks share (an
// unpartitioned table's tasks all carry one, wire.ScanTasks writes it
// once) is counted once.

// allocBytes is at least what the heap holds for an allocation of n bytes:
// n rounded up to 16 up to 256 bytes (Go's size classes there are 8 and
// multiples of 16), and beyond that a quarter more, rounded up to 16: a
// larger size class wastes less than a fifth of what fills it (4,097 bytes
// take 4,864), and an allocation beyond 32 KiB, whole 8 KiB pages, at most
// a quarter (32,769 bytes take 40,960).
func allocBytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n > 256 {
		n += n / 4
	}
	return (n + 15) &^ 15
}

// heldBytes is the memory r holds: the result itself, its names and
// spans, and its pages.
func (r *PlanResult) heldBytes() int64 {
	n := allocBytes(int64(unsafe.Sizeof(*r))) +
		allocBytes(int64(len(r.TableUUID))) + allocBytes(int64(len(r.MetadataLocation))) +
		allocBytes(int64(cap(r.spans))*int64(unsafe.Sizeof(KeyRange{}))) +
		allocBytes(int64(cap(r.IndexErrors))*int64(unsafe.Sizeof("")))
	for _, e := range r.IndexErrors {
		n += allocBytes(int64(len(e)))
	}
	n += allocBytes(int64(cap(r.Pages)) * int64(unsafe.Sizeof(rest.ScanTasks{})))
	for i := range r.Pages {
		n += scanTasksBytes(&r.Pages[i])
	}
	return n
}

// scanTasksBytes is what one page's plan tasks, file scan tasks and delete
// files hold (not the page's own struct, which its slice holds).
func scanTasksBytes(p *rest.ScanTasks) int64 {
	n := allocBytes(int64(cap(p.PlanTasks)) * int64(unsafe.Sizeof("")))
	for _, s := range p.PlanTasks {
		n += allocBytes(int64(len(s)))
	}
	n += allocBytes(int64(cap(p.FileScanTasks)) * int64(unsafe.Sizeof(rest.RESTFileScanTask{})))
	var last json.RawMessage
	for i := range p.FileScanTasks {
		t := &p.FileScanTasks[i]
		if df := t.DataFile; df != nil {
			n += allocBytes(int64(unsafe.Sizeof(*df))) + contentFileBytes(&df.RESTContentFile)
			if df.FirstRowID != nil {
				n += allocBytes(8)
			}
			for _, m := range []*rest.RESTCountMap{df.ColumnSizes, df.ValueCounts, df.NullValueCounts, df.NaNValueCounts} {
				if m != nil {
					n += allocBytes(int64(unsafe.Sizeof(*m))) + allocBytes(8*int64(cap(m.Keys))) + allocBytes(8*int64(cap(m.Values)))
				}
			}
			for _, m := range []*rest.RESTValueMap{df.LowerBounds, df.UpperBounds} {
				if m != nil {
					n += allocBytes(int64(unsafe.Sizeof(*m))) + allocBytes(8*int64(cap(m.Keys))) +
						allocBytes(int64(cap(m.Values))*int64(unsafe.Sizeof("")))
					for _, v := range m.Values {
						n += allocBytes(int64(len(v)))
					}
				}
			}
		}
		n += allocBytes(8 * int64(cap(t.DeleteFileReferences)))
		if r := t.ResidualFilter; cap(r) > 0 && (cap(last) == 0 || unsafe.SliceData(r) != unsafe.SliceData(last)) {
			n += allocBytes(int64(cap(r)))
			last = r
		}
	}
	n += allocBytes(int64(cap(p.DeleteFiles)) * int64(unsafe.Sizeof(rest.RESTDeleteFile{})))
	for i := range p.DeleteFiles {
		d := &p.DeleteFiles[i]
		n += contentFileBytes(&d.RESTContentFile) + allocBytes(8*int64(cap(d.EqualityIDs)))
		if d.ReferencedDataFile != nil {
			n += allocBytes(int64(unsafe.Sizeof(""))) + allocBytes(int64(len(*d.ReferencedDataFile)))
		}
		if d.ContentOffset != nil {
			n += allocBytes(8)
		}
		if d.ContentSizeInBytes != nil {
			n += allocBytes(8)
		}
	}
	return n
}

// contentFileBytes is what a content file's fields point to (its struct is
// counted where it is held): the partition values, path, format, key
// metadata, split offsets and sort order. The content's name is a constant.
func contentFileBytes(f *rest.RESTContentFile) int64 {
	n := allocBytes(int64(cap(f.Partition)) * int64(unsafe.Sizeof(json.RawMessage{})))
	for _, v := range f.Partition {
		n += allocBytes(int64(cap(v)))
	}
	n += allocBytes(int64(len(f.FilePath))) + allocBytes(int64(len(f.FileFormat))) + allocBytes(8*int64(cap(f.SplitOffsets)))
	if f.KeyMetadata != nil {
		n += allocBytes(int64(unsafe.Sizeof(""))) + allocBytes(int64(len(*f.KeyMetadata)))
	}
	if f.SortOrderID != nil {
		n += allocBytes(8)
	}
	return n
}
