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
// each next from its page's least key, the last to the largest key. They
// cover every key once, whatever the pages hold.
func (r *PlanResult) PageRanges() []KeyRange {
	ranges := make([]KeyRange, 0, len(r.Pages))
	for i := range r.Pages {
		lo := uint64(0)
		if i > 0 {
			span, ok := r.span(i)
			if !ok || span.Lo <= ranges[len(ranges)-1].Lo {
				continue // an empty or out of order page: joined to the one before
			}
			lo = span.Lo
			ranges[len(ranges)-1].Hi = lo - 1
		}
		ranges = append(ranges, KeyRange{lo, math.MaxUint64})
	}
	return ranges
}

// span is the least and greatest key of page i: as the planner recorded
// them, else read from the page; false for a page of no file.
func (r *PlanResult) span(i int) (KeyRange, bool) {
	if len(r.spans) == len(r.Pages) {
		return r.spans[i], true
	}
	span, ok := KeyRange{Lo: math.MaxUint64}, false
	for _, t := range r.Pages[i].FileScanTasks {
		if t.DataFile != nil {
			key := PathKey(t.DataFile.FilePath)
			span.Lo, span.Hi, ok = min(span.Lo, key), max(span.Hi, key), true
		}
	}
	return span, ok
}

// TasksIn is the tasks of r's data files whose path key lies in kr, with
// their delete files, as one page. A page of r that lies within kr whole,
// alone, is answered as it is; pages outside kr are not looked into, so a
// range of a plan of many pages costs a page's worth.
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
		span, ok := r.span(i)
		if !ok || span.Hi < kr.Lo || span.Lo > kr.Hi {
			continue
		}
		page := &r.Pages[i]
		if kr.contains(span.Lo) && kr.contains(span.Hi) && whole == nil && len(out.FileScanTasks) == 0 {
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
