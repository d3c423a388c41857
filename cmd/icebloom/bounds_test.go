package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/where"
)

// inList is "id IN (0, 1, …)" of n values.
func inList(n int) string {
	var b strings.Builder
	b.WriteString("id IN (")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprint(&b, i)
	}
	b.WriteString(")")
	return b.String()
}

// TestFilterBounds: a filter holds at most where.MaxValues values
// and --where-file reads at most 16 MiB, each refused with an error naming
// the limit (2,000,000 values took 435 s and 2.3 GB); at the limit the
// lookup answers.
func TestFilterBounds(t *testing.T) {
	it := newIDTable(t, 2)
	if _, stderr, code := icebloom(t, it.args("build", "db.ids")...); code != 0 {
		t.Fatal(stderr)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	atLimit := write("at.sql", inList(where.MaxValues))
	if stdout, stderr, code := icebloom(t, it.args("lookup", "db.ids", "--where-file", atLimit)...); code != 0 || stdout == "" {
		t.Errorf("lookup of %d values: exit %d, %q: %s", where.MaxValues, code, stdout, lastLine(stderr))
	}
	over := write("over.sql", inList(where.MaxValues+1))
	for _, cmd := range []string{"lookup", "scan"} {
		_, stderr, code := icebloom(t, it.args(cmd, "db.ids", "--where-file", over)...)
		if want := fmt.Sprintf("more than %d values in the filter", where.MaxValues); code != 2 || !strings.Contains(stderr, want) || len(stderr) > 1000 || strings.Contains(stderr, "where.MaxValues") {
			t.Errorf("%s of %d values: exit %d, %s; want 2 (a usage error) and %q, the filter's line cut short, no Go identifier", cmd, where.MaxValues+1, code, lastLine(stderr), want)
		}
	}
	big := "id = 1" + strings.Repeat(" ", maxWhereFileBytes)
	path := write("big.sql", big)
	_, stderr, code := icebloom(t, it.args("lookup", "db.ids", "--where-file", path)...)
	if code != 1 || !strings.Contains(stderr, "--where-file "+path+": larger than 16 MiB") {
		t.Errorf("a filter file over 16 MiB: exit %d, %s", code, lastLine(stderr))
	}
	var out, errOut bytes.Buffer
	code = runFrom(context.Background(), it.args("lookup", "db.ids", "--where-file", "-"), strings.NewReader(big), &out, &errOut, false, 0, time.Now)
	if code != 1 || !strings.Contains(errOut.String(), "--where-file stdin: larger than 16 MiB") {
		t.Errorf("a filter over 16 MiB on stdin: exit %d, %s", code, lastLine(errOut.String()))
	}
}

// TestColumnNameWithComma: a column whose name holds a comma is named in
// double quotes in --columns and --drop-columns, and a bad quote is a
// usage error naming the flag.
func TestColumnNameWithComma(t *testing.T) {
	it := newIDTable(t, 1)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "a,b", Type: iceberg.PrimitiveTypes.String})
	tbl := it.cat.NewTable(t, "comma", sc, nil)
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, as, strings.NewReader(`[{"id": 1, "a,b": "x"}, {"id": 2, "a,b": "y"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	catalogtest.Append(t, tbl, rec)
	if _, stderr, code := icebloom(t, it.args("build", "db.comma", "--columns", `id,"a,b"`)...); code != 0 {
		t.Fatalf(`build --columns id,"a,b": exit %d: %s`, code, stderr)
	}
	stdout, stderr, code := icebloom(t, it.args("--output", "json", "inspect", "db.comma")...)
	if code != 0 || !strings.Contains(stdout, `"name": "a,b"`) {
		t.Fatalf("inspect after the build: exit %d, %s %s", code, stdout, stderr)
	}
	if _, stderr, code := icebloom(t, it.args("compact-index", "db.comma", "--drop-columns", `"a,b"`)...); code != 0 {
		t.Fatalf(`compact-index --drop-columns "a,b": exit %d: %s`, code, stderr)
	}
	if stdout, _, _ := icebloom(t, it.args("--output", "json", "inspect", "db.comma")...); strings.Contains(stdout, `"name": "a,b"`) {
		t.Errorf("a,b still indexed after the drop: %s", stdout)
	}
	for _, args := range [][]string{{"build", "db.comma", "--columns", `"a,b`}, {"compact-index", "db.comma", "--drop-columns", `"a,b"x`}} {
		if _, stderr, code := icebloom(t, it.args(args...)...); code != 2 || !strings.Contains(stderr, args[2]) {
			t.Errorf("%v: exit %d, %s; want 2 naming the flag", args, code, stderr)
		}
	}
}
