// Package procstat measures the bench's own process and the servers it
// starts: the live heap (its peak during a call, its size now), fields of
// /proc/self/status, the load average, and a gauge of a server's /metrics.
package procstat

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/icebloom/icebloom/cmd/internal/cli"
)

// HeapPeak runs fn while sampling the heap in use every 200 µs and returns
// the peak's growth over the heap before: the peak memory of a build or a
// sync, which a sample after it would miss.
func HeapPeak(fn func() error) (int64, error) {
	p, err := HeapPeaks(fn)
	return p.InUse, err
}

// Peaks are the peaks of the heap during a call, over the live heap before
// it.
type Peaks struct {
	// InUse is the peak of the heap's object bytes: live objects and the
	// dead ones not yet swept, which the collector lets grow up to the
	// live heap's size again (GOGC=100) unless a memory limit bounds it.
	InUse int64
	// Live is the peak of the live heap as the collections during the call
	// marked it (/gc/heap/live:bytes): what the process held, sampled at
	// each of GCs collections.
	Live int64
	GCs  uint64
}

// HeapPeaks runs fn while sampling the heap every 200 µs and returns its
// peaks.
func HeapPeaks(fn func() error) (Peaks, error) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	read := func() (inUse, live, gcs uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
	}
	runtime.GC()
	base, liveBase, gcsBefore := read()
	var peakInUse, peakLive atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			inUse, live, gcs := read()
			if inUse > peakInUse.Load() {
				peakInUse.Store(inUse)
			}
			if gcs > gcsBefore && live > peakLive.Load() { // a collection during fn marked it
				peakLive.Store(live)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	err := fn()
	close(done)
	<-stopped
	_, _, gcsAfter := read()
	return Peaks{
		InUse: max(int64(peakInUse.Load())-int64(base), 0),
		Live:  max(int64(peakLive.Load())-int64(liveBase), 0),
		GCs:   gcsAfter - gcsBefore,
	}, err
}

// HeapObjects is the heap's object bytes (live ones, after a GC).
func HeapObjects() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// Status reads a size field (kB) of /proc/self/status, in bytes; -1
// where there is none.
func Status(field string) int64 { return statusOf("/proc/self/status", field) }

// StatusOf is Status of process pid (a server the bench started).
func StatusOf(pid int, field string) int64 {
	return statusOf(fmt.Sprintf("/proc/%d/status", pid), field)
}

func statusOf(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return -1
		}
		return kb << 10
	}
	return -1
}

// CPUOf is the CPU time (user and system) process pid has used, from
// /proc/PID/stat (in clock ticks, taken as 100 a second, Linux's USER_HZ);
// -1 where it cannot be read.
func CPUOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// counted are those after it (utime and stime are the 14th and 15th).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100
}

// LoadAvg is /proc/loadavg's three load averages, "" where there is none.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// ScrapeMetric reads one gauge of the server's /metrics, as text ("?" when
// it cannot).
func ScrapeMetric(url, name string) string {
	resp, err := http.Get(url)
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return cli.BytesText(n)
			}
			return v
		}
	}
	return "?"
}
