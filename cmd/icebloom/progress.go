package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/indexer"
)

// terminal reports whether w is a terminal, and its width in columns (80
// when it cannot be told). Only an *os.File can be one: tests, pipes and
// buffers never are.
func terminal(w io.Writer) (width int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
		return width, true
	}
	return 80, true
}

// statusLine is stderr on a terminal: it keeps one status line (the progress
// bar) at the bottom, below whatever else is written (log records). Writes
// take the line off the screen, write, and put it back, so that a record
// never lands in the middle of the bar.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	width int    // columns; the line is cut to fit, since a wrapped line cannot be redrawn in place
	line  string // on screen now; "" when none
}

// eraseLine returns the cursor to the start of the line and clears it.
const eraseLine = "\r\x1b[K"

// Write writes p (whole lines, as a log handler does) above the status line.
func (s *statusLine) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.line != "" {
		io.WriteString(s.w, eraseLine)
	}
	n, err := s.w.Write(p)
	if s.line != "" {
		io.WriteString(s.w, s.line)
	}
	return n, err
}

// set replaces the status line; "" clears it.
func (s *statusLine) set(line string) {
	if s.width > 1 && len(line) >= s.width {
		line = line[:s.width-1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if line == s.line {
		return
	}
	io.WriteString(s.w, eraseLine+line)
	s.line = line
}

// redrawEvery throttles the bar: at most 10 redraws a second, which looks
// continuous and costs nothing next to reading data files.
const redrawEvery = 100 * time.Millisecond

// progressBar draws a build's progress on a status line. update takes the
// build's Progress calls, which the build serializes; the status line's
// lock orders them with log records.
type progressBar struct {
	out   *statusLine
	label string
	now   func() time.Time // time.Now, or a test's clock
	start time.Time
	drawn time.Time // last redraw; zero before the first
}

func newProgressBar(out *statusLine, label string, now func() time.Time) *progressBar {
	return &progressBar{out: out, label: label, now: now, start: now()}
}

// update redraws the bar unless it was redrawn less than redrawEvery ago;
// the first and the last state (all files done) are always drawn.
func (b *progressBar) update(p indexer.Progress) {
	now := b.now()
	if !b.drawn.IsZero() && now.Sub(b.drawn) < redrawEvery && p.FilesDone < p.FilesTotal {
		return
	}
	b.drawn = now
	b.out.set(renderProgress(b.label, p, now.Sub(b.start)))
}

// finish takes the bar off the screen: the command's result, printed next,
// says where it ended.
func (b *progressBar) finish() { b.out.set("") }

// barWidth is the width of the bar itself, between its brackets.
const barWidth = 24

// renderProgress renders one state of a build:
//
//	db.events [=========>              ] 37/96 files  1.2 GiB  12s  98.5 MiB/s
//	db.one [========================] 1/1 file  1.2 MiB  0.1s  12.0 MiB/s
//
// The bytes are those of the data files done (their size in the manifests).
func renderProgress(label string, p indexer.Progress, elapsed time.Duration) string {
	filled := 0
	if p.FilesTotal > 0 {
		filled = barWidth * p.FilesDone / p.FilesTotal
	}
	bar := strings.Repeat("=", filled)
	if filled < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-filled-1)
	}
	if p.FilesDone == 0 {
		bar = strings.Repeat(" ", barWidth)
	}
	rate := "-"
	if secs := elapsed.Seconds(); secs > 0 && p.Bytes > 0 {
		rate = cli.BytesText(int64(float64(p.Bytes)/secs)) + "/s"
	}
	// Tenths of a second while they still tell something.
	shown := elapsed.Truncate(time.Second)
	if elapsed < time.Minute {
		shown = elapsed.Truncate(100 * time.Millisecond)
	}
	return fmt.Sprintf("%s [%s] %d/%s  %s  %s  %s",
		label, bar, p.FilesDone, plural(p.FilesTotal, "file"), cli.BytesText(p.Bytes), shown, rate)
}

// tracker follows one build, sync or rebuild: the progress bar when stderr
// is a terminal, a debug record per data file, and the data bytes the
// metrics report.
type tracker struct {
	bar  *progressBar // nil: no bar
	log  *slog.Logger
	last indexer.Progress
}

// track makes o report its progress to a new tracker labelled table, and
// its warnings (commit retries) to the log.
func (e *env) track(o *indexer.Options, table string) *tracker {
	t := &tracker{log: e.log.With("table", table)}
	if e.status != nil && !e.json {
		t.bar = newProgressBar(e.status, table, e.now)
	}
	o.Progress = t.progress
	o.Logger = e.log // not t.log: CommitStatistics names the table itself
	return t
}

func (t *tracker) progress(p indexer.Progress) {
	t.last = p
	if p.File != "" {
		t.log.Debug("data file done", "file", p.File, "files_done", p.FilesDone, "files_total", p.FilesTotal)
	}
	if t.bar != nil {
		t.bar.update(p)
	}
}

// finish ends the tracking: the bar leaves the screen.
func (t *tracker) finish() {
	if t.bar != nil {
		t.bar.finish()
	}
}
