package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// onTerminal makes the commands of the test see stdout as a terminal.
func onTerminal(t *testing.T) {
	t.Helper()
	old := stdoutTerminal
	stdoutTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { stdoutTerminal = old })
}

// TestScanOutputFormats: --select picks and orders columns; a scan needs
// no --where (with --limit); csv, tsv and jsonl write rows with a header
// (csv, tsv) or as objects whose keys follow the columns (jsonl, and
// --output json's rows); doubles read 2.5 and 9.0; a bad --format or
// --select column is refused naming it.
func TestScanOutputFormats(t *testing.T) {
	it, _ := typesTable(t)
	scan := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := icebloom(t, it.args(append([]string{"scan", "db.types"}, args...)...)...)
		if code != 0 {
			t.Fatalf("scan %v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	if got, want := scan("--select", "d,id", "--where", "id <= 2", "--format", "tsv"), "d\tid\n2.5\t1\n9.0\t2\n"; got != want {
		t.Errorf("tsv:\n%s\nwant\n%s", got, want)
	}
	rows, err := csv.NewReader(strings.NewReader(scan("--select", "UserName,st,d", "--format", "csv", "--where", "id IN (1, 4)"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"UserName", "st", "d"}, {"ann", "{name=x, k=1}", "2.5"}, {"", "", ""}}; fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("csv: %q, want %q", rows, want)
	}
	got := scan("--select", "s,id", "--format", "jsonl", "--limit", "2")
	if want := "{\"s\":\"b\",\"id\":1}\n{\"s\":\"a\",\"id\":2}\n"; got != want {
		t.Errorf("jsonl without --where, --limit 2:\n%s\nwant\n%s", got, want)
	}
	if got := scan("--output", "json", "--where", "id = 2", "--select", "n,flag,id"); !strings.Contains(got, `{"n":3,"flag":false,"id":2}`) {
		t.Errorf("--output json rows not in column order: %s", got)
	}
	for _, c := range []struct {
		args, want string
		code       int
	}{
		{"--format xml", `--format "xml": want text, tsv, csv, jsonl`, 2},
		{"--select id,nope", "select nope: no such column", 1},
	} {
		_, stderr, code := icebloomTTY(t, it.args(append([]string{"scan", "db.types"}, strings.Fields(c.args)...)...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("scan %s: exit %d, %s; want %q", c.args, code, lastLine(stderr), c.want)
		}
	}
}

// TestScanOnATerminal: on a terminal scan aligns its columns and ends with
// "(N rows)"; a scan or lookup that finds nothing says so on stdout, with
// how many data files may match.
func TestScanOnATerminal(t *testing.T) {
	it, _ := typesTable(t)
	onTerminal(t)
	stdout, stderr, code := icebloom(t, it.args("scan", "db.types", "--select", "id,UserName", "--where", "id <= 2")...)
	if want := "id  UserName\n--  --------\n1   ann\n2   bob\n(2 rows)\n"; code != 0 || stdout != want {
		t.Errorf("scan on a terminal: exit %d, %q (%s); want %q", code, stdout, stderr, want)
	}
	stdout, _, _ = icebloom(t, it.args("scan", "db.types", "--where", "s = 'zzz'")...)
	if !strings.HasSuffix(stdout, "(0 rows; 0 of 1 data file may match)\n") {
		t.Errorf("an empty scan on a terminal: %q", stdout)
	}
	stdout, _, _ = icebloom(t, it.args("lookup", "db.types", "--where", "s = 'zzz'")...)
	if stdout != "(0 of 1 data file may match)\n" {
		t.Errorf("an empty lookup on a terminal: %q", stdout)
	}
}

// heapSampler is stdout that measures the live heap every so many writes.
type heapSampler struct {
	writes, every int
	max           uint64
}

func (h *heapSampler) Write(p []byte) (int, error) {
	if h.writes++; h.writes%h.every == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.max = max(h.max, ms.HeapAlloc)
	}
	return len(p), nil
}

// TestScanStreamsRows: scan writes rows as it reads them: the live heap
// while writing 200,000 rows is about that while writing 20,000 (it held
// every row, 822 MB for 1,000,000, before writing any).
func TestScanStreamsRows(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures under the race detector are its own; go test without -race measures them")
	}
	it := newIDTable(t, 0)
	heap := func(n int) uint64 {
		tbl, err := it.cat.LoadTable(context.Background(), table.Identifier{"db", "ids"})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(i)
		}
		tbl = catalogtest.AppendIDs(t, tbl, ids...)
		defer func() { // the next table is a new one
			if err := it.cat.DropTable(context.Background(), tbl.Identifier()); err != nil {
				t.Fatal(err)
			}
			it.cat.NewTable(t, "ids", tbl.Schema(), nil)
		}()
		var most uint64
		for _, format := range []string{"jsonl", "tsv"} {
			h := &heapSampler{every: 1}
			code := runOn(context.Background(), it.args("scan", "db.ids", "--limit", "0", "--format", format), h, io.Discard, false, 0, time.Now)
			if code != 0 {
				t.Fatalf("scan of %d rows: exit %d", n, code)
			}
			if h.writes < 2 {
				t.Fatalf("scan of %d rows as %s: %d writes, want them as the rows come", n, format, h.writes)
			}
			most = max(most, h.max)
		}
		return most
	}
	small, large := heap(20_000), heap(200_000)
	t.Logf("live heap while writing: %d MiB for 20,000 rows, %d MiB for 200,000", small>>20, large>>20)
	if large > 2*small+(8<<20) {
		t.Errorf("the heap grew with the rows: %d bytes for 20,000, %d for 200,000", small, large)
	}
}
