package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icebloom/icebloom/index/indexer"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestRenderProgress(t *testing.T) {
	cases := []struct {
		p       indexer.Progress
		elapsed time.Duration
		want    string
	}{
		{indexer.Progress{FilesTotal: 96}, 0,
			"db.events [                        ] 0/96 files  0 B  0s  -"},
		{indexer.Progress{FilesDone: 37, FilesTotal: 96, Bytes: 37 << 30}, 12*time.Second + 400*time.Millisecond,
			"db.events [=========>              ] 37/96 files  37.0 GiB  12.4s  3.0 GiB/s"},
		{indexer.Progress{FilesDone: 96, FilesTotal: 96, Bytes: 96 << 20}, 90 * time.Second,
			"db.events [========================] 96/96 files  96.0 MiB  1m30s  1.1 MiB/s"},
		{indexer.Progress{FilesDone: 1, FilesTotal: 1, Bytes: 12 << 20}, time.Second,
			"db.events [========================] 1/1 file  12.0 MiB  1s  12.0 MiB/s"},
	}
	for _, c := range cases {
		if got := renderProgress("db.events", c.p, c.elapsed); got != c.want {
			t.Errorf("%+v after %v:\n got %q\nwant %q", c.p, c.elapsed, got, c.want)
		}
	}
}

// TestProgressBarThrottled: a build finishing a file every 10 ms for a
// second redraws at most ten times a second, always draws its first and
// last state, and leaves the line empty when it finishes.
func TestProgressBarThrottled(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	line := &statusLine{w: &out, width: 200}
	bar := newProgressBar(line, "db.t", clock.now)
	const files = 100
	bar.update(indexer.Progress{FilesTotal: files})
	for i := 1; i <= files; i++ {
		clock.advance(10 * time.Millisecond)
		bar.update(indexer.Progress{FilesDone: i, FilesTotal: files, Bytes: int64(i) << 20})
	}
	draws := strings.Count(out.String(), eraseLine)
	if draws < 10 || draws > 12 {
		t.Errorf("%d redraws over 1 s of 100 updates, want about 10 (at most 10 a second, plus the first and last)", draws)
	}
	if !strings.Contains(out.String(), "0/100 files") || !strings.HasSuffix(out.String(), "100/100 files  100.0 MiB  1s  100.0 MiB/s") {
		t.Errorf("first or last state not drawn: %q", out.String())
	}
	bar.finish()
	if !strings.HasSuffix(out.String(), eraseLine) || line.line != "" {
		t.Errorf("finish left %q on the line", line.line)
	}
}

// TestStatusLineKeepsRecordsAbove: a log record written while the bar is
// up takes the bar off, lands on its own line, and the bar comes back under
// it; a line wider than the terminal is cut, never wrapped.
func TestStatusLineKeepsRecordsAbove(t *testing.T) {
	var out bytes.Buffer
	s := &statusLine{w: &out, width: 20}
	s.set("0123456789012345678901234")
	s.Write([]byte("level=WARN msg=x\n"))
	want := eraseLine + "0123456789012345678" + eraseLine + "level=WARN msg=x\n" + "0123456789012345678"
	if out.String() != want {
		t.Fatalf("got %q\nwant %q", out.String(), want)
	}
	s.set("")
	out.Reset()
	s.Write([]byte("after\n"))
	if out.String() != "after\n" {
		t.Fatalf("with no bar up, a record is written as is: %q", out.String())
	}
}

// TestNotATerminal: buffers, files and pipes are not terminals, so tests,
// redirections and JSON pipelines never get a bar.
func TestNotATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]any{"buffer": &bytes.Buffer{}, "file": f, "pipe": w} {
		if _, ok := terminal(out.(interface{ Write([]byte) (int, error) })); ok {
			t.Errorf("a %s counts as a terminal", name)
		}
	}
}
