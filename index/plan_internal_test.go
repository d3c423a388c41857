package index

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/icebloom/icebloom/index/filelist"
)

// TestPlanInParts: a directory of many files is matched in parts, one a
// goroutine, and each file gets the caller's index of its own location
// and size, -1 for one not planned.
func TestPlanInParts(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one part with one CPU")
	}
	var files filelist.List
	caller := map[string]int{}
	const n = 3<<16 + 7
	for k := range n {
		path := fmt.Sprintf("s3://b/t/data/%07d-%x.parquet", k, k*7919)
		files.Append(path, int64(k))
		if k%5 != 0 {
			caller[path] = n - k
		}
	}
	planned := plan(&files, func(path []byte, size int64) (int, bool) {
		i, ok := caller[string(path)]
		return i, ok && size == int64(n-i) // the caller's sizes are the directory's
	})
	if len(planned) != n {
		t.Fatalf("%d files planned, want %d", len(planned), n)
	}
	for k, i := range planned {
		want := int32(n - k)
		if k%5 == 0 {
			want = -1
		}
		if i != want {
			t.Fatalf("file %d planned as %d, want %d", k, i, want)
		}
	}
}
