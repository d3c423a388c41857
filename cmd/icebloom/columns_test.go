package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/maintenance"
)

// usersSchema has two indexable columns and a list whose elements cannot
// be indexed; no table property enables a bloom filter.
var usersSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.String}},
)

// appendUsers appends one data file of n users starting at id first.
func appendUsers(t *testing.T, cat *catalogtest.Catalog, first, n int) {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "users"})
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", i))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("tag%d", i%3))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	catalogtest.Append(t, tbl, rec)
}

// TestCommandsRememberColumns: after `build --columns id,email` and an
// append, sync, maintain --namespace, rebuild and compact-index work with
// no --columns, as the README's steady state runs them; --columns adds a
// column; compact-index --drop-columns removes one, which sync then leaves
// out; a list element is refused by name.
func TestCommandsRememberColumns(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml of the machine's
	cat := catalogtest.NewCatalog(t)
	cat.NewTable(t, "users", usersSchema, nil)
	catalogtest.AppendIDs(t, cat.NewTable(t, "plain", catalogtest.IDSchema, nil), 1, 2) // no index, no property
	appendUsers(t, cat, 0, 50)
	appendUsers(t, cat, 50, 50)
	global := []string{
		"--catalog", "sql",
		"--uri", "file:" + filepath.Join(filepath.Dir(cat.Warehouse), "catalog.db"),
		"--warehouse", "file://" + cat.Warehouse,
	}
	cmd := func(args ...string) (string, string, int) {
		t.Helper()
		return icebloom(t, append(append([]string{}, global...), args...)...)
	}
	jsonCmd := func(out any, args ...string) {
		t.Helper()
		stdout, stderr, code := cmd(append([]string{"--output", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("icebloom %s exited %d: %s", strings.Join(args, " "), code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("icebloom %s: %v: %s", strings.Join(args, " "), err, stdout)
		}
	}

	for _, bad := range []string{"tags.element", "tags"} {
		_, stderr, code := cmd("build", "db.users", "--columns", "id,"+bad)
		if code == 0 || !strings.Contains(failure(t, stderr), `column "`+bad+`"`) || !strings.Contains(stderr, "cannot be indexed") {
			t.Errorf("build --columns id,%s: exit %d, %s", bad, code, stderr)
		}
	}
	var sum indexer.Summary
	jsonCmd(&sum, "build", "db.users", "--columns", "id,email")
	appendUsers(t, cat, 100, 50)

	jsonCmd(&sum, "sync", "db.users")
	if sum.FilesIndexed != 1 || sum.FilesCovered != 2 || strings.Join(sum.Columns, ",") != "email,id" {
		t.Fatalf("sync with no --columns: %+v", sum)
	}

	appendUsers(t, cat, 150, 50)
	var round MaintainOutput
	jsonCmd(&round, "maintain", "--namespace", "db")
	if r := reportOf(t, round, "db.users"); len(round.Tables) != 2 || r.Skipped != "" || r.Failed() || r.Sync == nil || r.Sync.FilesIndexed != 1 {
		t.Fatalf("maintain --namespace db: %+v", round)
	}
	if r := reportOf(t, round, "db.plain"); r.Skipped != maintenance.SkippedNoColumns {
		t.Fatalf("maintain --namespace db, the table without index: %+v", r)
	}

	jsonCmd(&sum, "rebuild", "db.users")
	if sum.FilesIndexed != 4 || sum.Segments != 1 || strings.Join(sum.Columns, ",") != "email,id" {
		t.Fatalf("rebuild with no --columns: %+v", sum)
	}

	// Adding a column reads it alone for the covered files, and the text
	// summary says so per column.
	appendUsers(t, cat, 200, 50)
	stdout, stderr, code := cmd("sync", "db.users", "--columns", "tags.element")
	if code == 0 || !strings.Contains(failure(t, stderr), `column "tags.element" cannot be indexed: it is inside the list tags`) {
		t.Fatalf("sync --columns tags.element: exit %d, %s%s", code, stdout, stderr)
	}
	stdout, stderr, code = cmd("sync", "db.users")
	if code != 0 || !strings.Contains(stdout, "indexed 1 of 5 data files of db.users") ||
		!strings.Contains(stdout, "column email (index): filters written 1, data files covered already (not read) 4") ||
		!strings.Contains(stdout, "column id (index): filters written 1, data files covered already (not read) 4") {
		t.Fatalf("sync: exit %d, %s%s", code, stdout, stderr)
	}

	var compacted indexer.CompactSummary
	jsonCmd(&compacted, "compact-index", "db.users")
	if compacted.SegmentsAfter != 1 {
		t.Fatalf("compact-index with no --columns: %+v", compacted)
	}
	stdout, stderr, code = cmd("compact-index", "db.users", "--drop-columns", "email")
	if code != 0 || !strings.Contains(stdout, "column email dropped from the index: filters left out 5") {
		t.Fatalf("compact-index --drop-columns email: exit %d, %s%s", code, stdout, stderr)
	}
	_, stderr, code = cmd("compact-index", "db.users", "--drop-columns", "email")
	if code == 0 || !strings.Contains(failure(t, stderr), `drop column "email": the index holds no filters of it`) {
		t.Fatalf("dropping email again: exit %d, %s", code, stderr)
	}
	appendUsers(t, cat, 250, 50)
	jsonCmd(&round, "maintain", "--namespace", "db")
	if r := reportOf(t, round, "db.users"); r.Sync == nil || strings.Join(r.Sync.Columns, ",") != "id" || r.Sync.FilesIndexed != 1 {
		t.Fatalf("maintain after the drop: %+v", r)
	}
	var lk LookupOutput
	jsonCmd(&lk, "lookup", "db.users", "--where", "email = 'user7@example.com'")
	if len(lk.Candidates) == 0 || len(lk.Candidates) != lk.FilesAfterStats || len(lk.Unindexed) != len(lk.Candidates) {
		t.Fatalf("lookup on the dropped column: %+v, want every file statistics kept kept, unindexed", lk)
	}
}

// reportOf returns the maintain round's report of a table.
func reportOf(t *testing.T, round MaintainOutput, name string) maintenance.TableReport {
	t.Helper()
	for _, r := range round.Tables {
		if r.Table == name {
			return r
		}
	}
	t.Fatalf("no report of %s in %+v", name, round)
	return maintenance.TableReport{}
}
