package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/lookup"
	"github.com/icebloom/icebloom/index/where"
)

// LookupCmd is `icebloom lookup TABLE --where EXPR`.
type LookupCmd struct {
	Table string `arg:"positional,required" help:"table identifier, ns.table"`
	whereFlags
	Snapshot int64 `arg:"--snapshot" help:"snapshot to plan [default: current]"`
}

// whereFlags are the filter of lookup and scan: given on the command line
// or, when too long for one, read from a file or stdin.
type whereFlags struct {
	Where     string `arg:"--where" placeholder:"EXPR" help:"filter, as after SQL's WHERE: =, !=, <, <=, >, >=, [NOT] IN, [NOT] BETWEEN, IS [NOT] NULL, NOT, AND, OR, parentheses; only = and IN prune with the index"`
	WhereFile string `arg:"--where-file" placeholder:"PATH" help:"read the filter from this file (- for stdin) instead of --where"`
}

// validate requires one of --where and --where-file.
func (f *whereFlags) validate() error {
	switch {
	case f.Where == "" && f.WhereFile == "":
		return errors.New("--where or --where-file is required")
	case f.Where != "" && f.WhereFile != "":
		return errors.New("--where and --where-file: give one of them")
	}
	return nil
}

// maxWhereFileBytes bounds what --where-file reads: a filter holds at
// most where.MaxValues values, which fit in far less.
const maxWhereFileBytes = 16 << 20

// filter parses the filter from --where or --where-file; its errors name
// the flag, and the file.
func (f *whereFlags) filter(e *env) (iceberg.BooleanExpression, error) {
	if f.WhereFile == "" {
		filter, err := where.Parse(f.Where)
		if err != nil {
			return nil, syntaxUsage("--where", f.Where, err)
		}
		return filter, nil
	}
	var text []byte
	var err error
	source := f.WhereFile
	if source == "-" {
		source = "stdin"
		text, err = io.ReadAll(io.LimitReader(e.stdin, maxWhereFileBytes+1))
	} else {
		var file *os.File
		if file, err = os.Open(f.WhereFile); err == nil {
			text, err = io.ReadAll(io.LimitReader(file, maxWhereFileBytes+1))
			file.Close()
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the path is said once, below
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--where-file %s: %w", source, err)
	}
	if len(text) > maxWhereFileBytes {
		return nil, fmt.Errorf("--where-file %s: larger than %d MiB, the limit of a filter (split it into several lookups)", source, maxWhereFileBytes>>20)
	}
	if !utf8.Valid(text) {
		return nil, fmt.Errorf("--where-file %s: not UTF-8 text", source)
	}
	filter, err := where.Parse(string(text))
	if err != nil {
		return nil, syntaxUsage("--where-file "+source, string(text), err)
	}
	return filter, nil
}

// syntaxUsage is the error of a filter that does not parse, given by flag:
// a usage error (exit 2) that shows the filter's line with a caret under
// the spot the error names.
func syntaxUsage(flag, filter string, err error) error {
	var se *where.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return &usageError{fmt.Sprintf("%s: %s\n%s", flag, se.Error(), pointAt(filter, se.Offset))}
}

// pointAt returns the line of text holding byte offset off and, below
// it, a caret under that byte, both indented by two spaces; of a long line
// only the 40 characters either side of the spot, cut with "…". Tabs
// before the spot are kept, so that the caret lines up under them.
func pointAt(text string, off int) string {
	const side = 40
	off = min(max(off, 0), len(text))
	start := strings.LastIndexAny(text[:off], "\n\r") + 1
	end := len(text)
	if i := strings.IndexAny(text[off:], "\n\r"); i >= 0 {
		end = off + i
	}
	before, after := []rune(text[start:off]), []rune(text[off:end])
	head, tail := "", ""
	if len(before) > side {
		before, head = before[len(before)-side:], "…"
	}
	if len(after) > side {
		after, tail = after[:side], "…"
	}
	pad := []rune(strings.Repeat(" ", len([]rune(head))))
	for _, r := range before {
		if r == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	return "  " + head + string(before) + string(after) + tail + "\n  " + string(pad) + "^"
}

// LookupOutput is the JSON output of lookup.
type LookupOutput struct {
	SnapshotID      int64    `json:"snapshot_id"`
	FilesTotal      int      `json:"files_total"`
	FilesAfterStats int      `json:"files_after_stats"`
	Candidates      []string `json:"candidates"`
	Unindexed       []string `json:"unindexed"`
	IndexErrors     []string `json:"index_errors"`
	BlocksRead      int64    `json:"index_blocks_read"`
	BytesRead       int64    `json:"index_bytes_read"`
	Requests        int64    `json:"index_requests"`
	ElapsedMillis   float64  `json:"elapsed_ms"`
}

// planFilter loads the table and plans filter with the index.
func planFilter(ctx context.Context, e *env, tableName string, filter iceberg.BooleanExpression, snapshot int64) (*table.Table, iceberg.BooleanExpression, *lookup.Result, error) {
	tbl, err := e.table(ctx, tableName)
	if err != nil {
		return nil, nil, nil, err
	}
	var opts lookup.Options
	if snapshot != 0 {
		opts.SnapshotID = &snapshot
	}
	res, err := lookup.Plan(ctx, tbl, filter, opts)
	if err != nil {
		return nil, nil, nil, filterError(tableName, tbl, err)
	}
	res.IndexErrors = withRepairs(tableName, res.IndexErrors)
	return tbl, filter, res, nil
}

func (c *LookupCmd) run(ctx context.Context, e *env) error {
	start := time.Now()
	filter, err := c.filter(e)
	if err != nil {
		return err
	}
	_, _, res, err := planFilter(ctx, e, c.Table, filter, c.Snapshot)
	if err != nil {
		return err
	}
	out := LookupOutput{
		SnapshotID:      res.SnapshotID,
		FilesTotal:      res.FilesTotal,
		FilesAfterStats: len(dataFiles(res.AfterStats)),
		Candidates:      dataFiles(res.Candidates),
		Unindexed:       append([]string{}, res.Unindexed...),
		IndexErrors:     []string{},
		BlocksRead:      res.BlocksRead,
		BytesRead:       res.BytesRead,
		Requests:        res.Requests,
		ElapsedMillis:   float64(time.Since(start).Microseconds()) / 1000,
	}
	for _, err := range res.IndexErrors {
		out.IndexErrors = append(out.IndexErrors, err.Error())
	}
	logIndexErrors(e.log, "lookup", c.Table, res.IndexErrors)
	if e.json {
		return e.printJSON(out)
	}
	for _, f := range out.Candidates {
		e.printf("%s\n", f)
	}
	if e.stdoutTTY {
		// Said on stdout, where a person looks: an empty answer is not
		// only a log record.
		e.printf("(%d of %s may match)\n", len(out.Candidates), plural(out.FilesTotal, "data file"))
	}
	e.log.Info("lookup done", "command", "lookup", "table", c.Table, "snapshot", out.SnapshotID,
		"candidates", len(out.Candidates), "files_total", out.FilesTotal, "files_after_stats", out.FilesAfterStats,
		"unindexed", len(out.Unindexed), "duration", time.Since(start))
	return nil
}
