package planning

import (
	"hash/fnv"
	"math"

	"github.com/apache/iceberg-go/catalog/rest"
)

// Pages by path key: a plan's data files are paged in the order of
// PathKey, a hash of each file's path that every process computes alike,
// and no two pages share a key. So each page is one range of keys, and a
// page can be named by its range rather than by its place among the pages:
// another server that plans the same request of the same table version
// answers a range with the files of its own plan in it (TasksIn), whether
// or not its plan was cut into the same pages (another --tasks-per-page)
// or kept the same files (the index could not be read on one of them: each
// plan keeps every file that may match). The ranges of one plan cover
// every key once, so its pages, answered by any servers, hold every file
// that may match once.

// PathKey is the key a data file is paged by: FNV-1a of its path (not
// maphash, which is seeded per process).
func PathKey(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return h.Sum64()
}

// KeyRange is the path keys from Lo to Hi, both included.
type KeyRange struct{ Lo, Hi uint64 }

// PageRanges are the key ranges of r's pages, in order: the first from 0,
// each next from its page's first key, the last to the largest key. They
// cover every key once, whatever the pages hold.
func (r *PlanResult) PageRanges() []KeyRange {
	ranges := make([]KeyRange, 0, len(r.Pages))
	for i, page := range r.Pages {
		lo := uint64(0)
		if i > 0 {
			first, ok := firstKey(page)
			if !ok || first <= ranges[len(ranges)-1].Lo {
				continue // an empty or out of order page: joined to the one before
			}
			lo = first
			ranges[len(ranges)-1].Hi = first - 1
		}
		ranges = append(ranges, KeyRange{lo, math.MaxUint64})
	}
	return ranges
}

func firstKey(page rest.ScanTasks) (uint64, bool) {
	for _, t := range page.FileScanTasks {
		if t.DataFile != nil {
			return PathKey(t.DataFile.FilePath), true
		}
	}
	return 0, false
}

// TasksIn is the tasks of r's data files whose path key lies in kr, with
// their delete files, as one page. A page of r that lies within kr whole,
// alone, is answered as it is.
func (r *PlanResult) TasksIn(kr KeyRange) rest.ScanTasks {
	var whole *rest.ScanTasks // the one page taken so far, whole
	var out rest.ScanTasks
	type deleteKey struct {
		path   string
		offset int64
	}
	deletes := map[deleteKey]int{} // a delete file's index in out
	add := func(page *rest.ScanTasks, t rest.RESTFileScanTask) {
		if len(t.DeleteFileReferences) > 0 {
			refs := make([]int, len(t.DeleteFileReferences))
			for i, ref := range t.DeleteFileReferences {
				df := page.DeleteFiles[ref]
				k := deleteKey{path: df.FilePath, offset: -1}
				if df.ContentOffset != nil {
					k.offset = *df.ContentOffset
				}
				at, ok := deletes[k]
				if !ok {
					at = len(out.DeleteFiles)
					out.DeleteFiles = append(out.DeleteFiles, df)
					deletes[k] = at
				}
				refs[i] = at
			}
			t.DeleteFileReferences = refs
		}
		out.FileScanTasks = append(out.FileScanTasks, t)
	}
	for i := range r.Pages {
		page := &r.Pages[i]
		in := 0
		for _, t := range page.FileScanTasks {
			if t.DataFile != nil && kr.contains(PathKey(t.DataFile.FilePath)) {
				in++
			}
		}
		switch {
		case in == 0:
			continue
		case in == len(page.FileScanTasks) && whole == nil && len(out.FileScanTasks) == 0:
			whole = page
			continue
		}
		if whole != nil { // a second page: the first's tasks are copied too
			for _, t := range whole.FileScanTasks {
				add(whole, t)
			}
			whole = nil
		}
		for _, t := range page.FileScanTasks {
			if t.DataFile != nil && kr.contains(PathKey(t.DataFile.FilePath)) {
				add(page, t)
			}
		}
	}
	if whole != nil {
		return rest.ScanTasks{FileScanTasks: whole.FileScanTasks, DeleteFiles: whole.DeleteFiles}
	}
	return out
}

func (kr KeyRange) contains(key uint64) bool { return kr.Lo <= key && key <= kr.Hi }
