package rowformat

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// Writer writes scan's rows as they are read, so that memory does not
// grow with the rows: one row at a time, in a format of --format.
type Writer interface {
	Begin() error
	Row(rec arrow.RecordBatch, i int) error
	End(rows int64, truncated bool, elapsed time.Duration) error
}

// Head is what --output json's document says of a scan before its rows.
type Head struct {
	SnapshotID            int64
	FilesTotal, FilesRead int
}

// NewWriter returns the writer to stdout of format (text, tsv, csv, jsonl,
// or json: --output json's document, which begins with head) for rows of
// schema; text is aligned in columns when stdout is a terminal, else
// tab-separated.
func NewWriter(stdout io.Writer, terminal bool, format string, schema *arrow.Schema, head Head) Writer {
	out := bufio.NewWriterSize(stdout, 64<<10)
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	switch format {
	case "csv":
		return &csvWriter{out: out, w: csv.NewWriter(out), names: names}
	case "jsonl":
		return &jsonlWriter{out: out, names: names}
	case "json":
		return &jsonDocWriter{jsonlWriter: jsonlWriter{out: out, names: names}, head: head}
	case "text":
		if terminal {
			return &alignedWriter{out: out, names: names}
		}
	}
	return &tsvWriter{out: out, names: names}
}

// tsvWriter writes a header line and a line per row, cells separated by
// tabs (values.go: strings escaped so a row stays one line).
type tsvWriter struct {
	out   *bufio.Writer
	names []string
	cells []string
}

func (w *tsvWriter) Begin() error {
	_, err := w.out.WriteString(strings.Join(w.names, "\t") + "\n")
	return err
}

func (w *tsvWriter) Row(rec arrow.RecordBatch, i int) error {
	w.cells = w.cells[:0]
	for _, col := range rec.Columns() {
		w.cells = append(w.cells, ValueText(col, i))
	}
	_, err := w.out.WriteString(strings.Join(w.cells, "\t") + "\n")
	return err
}

func (w *tsvWriter) End(int64, bool, time.Duration) error { return w.out.Flush() }

// alignedRows is how many rows an aligned writer holds to measure its
// columns; later rows are aligned to the same widths (a longer cell
// pushes the rest of its line right).
const alignedRows = 100

// alignedWriter writes rows for a terminal: columns padded to their
// widths, under a header and a rule.
type alignedWriter struct {
	out    *bufio.Writer
	names  []string
	held   [][]string
	widths []int
	ready  bool
}

func (w *alignedWriter) Begin() error { return nil }

func (w *alignedWriter) Row(rec arrow.RecordBatch, i int) error {
	cells := make([]string, rec.NumCols())
	for c, col := range rec.Columns() {
		cells[c] = ValueText(col, i)
	}
	if w.ready {
		return w.line(cells)
	}
	w.held = append(w.held, cells)
	if len(w.held) >= alignedRows {
		return w.flushHeld()
	}
	return nil
}

// flushHeld measures the held rows and writes them under the header.
func (w *alignedWriter) flushHeld() error {
	w.ready = true
	w.widths = make([]int, len(w.names))
	for c, n := range w.names {
		w.widths[c] = utf8.RuneCountInString(n)
	}
	for _, cells := range w.held {
		for c, s := range cells {
			w.widths[c] = max(w.widths[c], utf8.RuneCountInString(s))
		}
	}
	if err := w.line(w.names); err != nil {
		return err
	}
	rule := make([]string, len(w.names))
	for c, n := range w.widths {
		rule[c] = strings.Repeat("-", n)
	}
	if err := w.line(rule); err != nil {
		return err
	}
	for _, cells := range w.held {
		if err := w.line(cells); err != nil {
			return err
		}
	}
	w.held = nil
	return nil
}

func (w *alignedWriter) line(cells []string) error {
	var b strings.Builder
	for c, s := range cells {
		if c > 0 {
			b.WriteString("  ")
		}
		b.WriteString(s)
		if c < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", max(0, w.widths[c]-utf8.RuneCountInString(s))))
		}
	}
	b.WriteByte('\n')
	_, err := w.out.WriteString(b.String())
	return err
}

func (w *alignedWriter) End(int64, bool, time.Duration) error {
	if !w.ready {
		if err := w.flushHeld(); err != nil {
			return err
		}
	}
	return w.out.Flush()
}

// csvWriter writes RFC 4180 CSV with a header: NULL is an empty cell,
// strings are as they are, other values as text output writes them.
type csvWriter struct {
	out   *bufio.Writer
	w     *csv.Writer
	names []string
	cells []string
}

func (w *csvWriter) Begin() error { return w.w.Write(w.names) }

func (w *csvWriter) Row(rec arrow.RecordBatch, i int) error {
	w.cells = w.cells[:0]
	for _, col := range rec.Columns() {
		switch v := ValueJSON(col, i).(type) {
		case nil:
			w.cells = append(w.cells, "")
		case string:
			if isString(col.DataType()) {
				w.cells = append(w.cells, v)
				continue
			}
			w.cells = append(w.cells, ValueText(col, i))
		default:
			w.cells = append(w.cells, ValueText(col, i))
		}
	}
	return w.w.Write(w.cells)
}

func (w *csvWriter) End(int64, bool, time.Duration) error {
	w.w.Flush()
	if err := w.w.Error(); err != nil {
		return err
	}
	return w.out.Flush()
}

// jsonlWriter writes a JSON object per row, its keys in the order of the
// columns.
type jsonlWriter struct {
	out   *bufio.Writer
	names []string
	keys  [][]byte // the names, JSON-encoded
}

func (w *jsonlWriter) Begin() error {
	for _, n := range w.names {
		k, err := json.Marshal(n)
		if err != nil {
			return err
		}
		w.keys = append(w.keys, k)
	}
	return nil
}

func (w *jsonlWriter) Row(rec arrow.RecordBatch, i int) error {
	if err := w.object(rec, i); err != nil {
		return err
	}
	return w.out.WriteByte('\n')
}

// object writes row i of rec as one JSON object.
func (w *jsonlWriter) object(rec arrow.RecordBatch, i int) error {
	w.out.WriteByte('{')
	for c, col := range rec.Columns() {
		if c > 0 {
			w.out.WriteByte(',')
		}
		w.out.Write(w.keys[c])
		w.out.WriteByte(':')
		v, err := json.Marshal(ValueJSON(col, i))
		if err != nil {
			return fmt.Errorf("column %s: %w", w.names[c], err)
		}
		if _, err := w.out.Write(v); err != nil {
			return err
		}
	}
	return w.out.WriteByte('}')
}

func (w *jsonlWriter) End(int64, bool, time.Duration) error { return w.out.Flush() }

// jsonDocWriter writes --output json's document (scan's ScanOutput), its rows
// streamed one a line between what is known before and after them.
type jsonDocWriter struct {
	jsonlWriter
	head Head
	rows int64
}

func (w *jsonDocWriter) Begin() error {
	if err := w.jsonlWriter.Begin(); err != nil {
		return err
	}
	cols, err := json.Marshal(w.names)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w.out, "{\n  \"snapshot_id\": %d,\n  \"files_total\": %d,\n  \"files_read\": %d,\n  \"columns\": %s,\n  \"rows\": [",
		w.head.SnapshotID, w.head.FilesTotal, w.head.FilesRead, cols)
	return err
}

func (w *jsonDocWriter) Row(rec arrow.RecordBatch, i int) error {
	sep := ",\n    "
	if w.rows == 0 {
		sep = "\n    "
	}
	w.rows++
	w.out.WriteString(sep)
	return w.object(rec, i)
}

func (w *jsonDocWriter) End(rows int64, truncated bool, elapsed time.Duration) error {
	closing := "]"
	if rows > 0 {
		closing = "\n  ]"
	}
	fmt.Fprintf(w.out, "%s,\n  \"truncated\": %t,\n  \"elapsed_ms\": %s\n}\n", closing, truncated,
		FloatText(float64(elapsed.Microseconds())/1000, 64))
	return w.out.Flush()
}
