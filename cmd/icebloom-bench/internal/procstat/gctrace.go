package procstat

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"time"
)

// GC is one collection of a process run with GODEBUG=gctrace=1, as the
// runtime wrote it to the process's stderr: when it started (since the
// process began) and the heap in MiB (the runtime writes whole MB of
// 2^20 bytes) when marking began, when it ended, and live after it, with
// the heap goal it set.
type GC struct {
	At                     time.Duration
	Start, End, Live, Goal int64
}

// gcLine matches a gctrace line: "gc 7 @1.234s 2%: ..., 12->14->6 MB, 13 MB goal, ...".
var gcLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s .*?, (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// GCTrace reads the collections of a gctrace from r (other lines, as a
// server's log records beside them, are skipped), so that the live heap
// of another process can be read at each of its collections: what RSS
// cannot tell apart from garbage not yet collected.
func GCTrace(r io.Reader) ([]GC, error) {
	var gcs []GC
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(m[1], 64)
		var n [4]int64
		for i := range n {
			n[i], _ = strconv.ParseInt(m[2+i], 10, 64)
		}
		gcs = append(gcs, GC{At: time.Duration(at * float64(time.Second)), Start: n[0], End: n[1], Live: n[2], Goal: n[3]})
	}
	return gcs, sc.Err()
}
