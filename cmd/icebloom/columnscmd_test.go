package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// metadataFiles lists the metadata JSON files of the quickstart's table:
// one more after each commit.
func metadataFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("warehouse", "demo.db", "events", "metadata", "*.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestColumnsCommand: on the quickstart's table, compact-index
// --drop-columns email is refused while a property enables email;
// `columns --disable` (in any case) unsets it in one commit, after which
// the drop works; --enable with --fpp sets both properties, and on an
// indexed column says when the new rate applies; the listing
// says what is enabled and indexed; bad names are refused naming them, with
// nothing committed.
func TestColumnsCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if _, stderr, code := icebloom(t, "quickstart", "--files", "3", "--rows", "30"); code != 0 {
		t.Fatalf("quickstart: %s", stderr)
	}
	columns := func(args ...string) ColumnsOutput {
		t.Helper()
		stdout, stderr, code := icebloom(t, append([]string{"--output", "json", "columns", "demo.events"}, args...)...)
		if code != 0 {
			t.Fatalf("columns %v: exit %d: %s", args, code, stderr)
		}
		var out ColumnsOutput
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("columns %v: %v: %s", args, err, stdout)
		}
		return out
	}
	states := func(out ColumnsOutput) map[string][2]bool {
		m := map[string][2]bool{}
		for _, c := range out.Columns {
			m[c.Name] = [2]bool{c.Enabled, c.Indexed}
		}
		return m
	}
	want := map[string][2]bool{"email": {true, true}, "order_id": {true, true}, "user_id": {true, true}}
	if got := states(columns()); !reflect.DeepEqual(got, want) {
		t.Fatalf("columns: %v, want %v", got, want)
	}
	if _, stderr, code := icebloom(t, "compact-index", "demo.events", "--drop-columns", "email"); code != 1 || !strings.Contains(stderr, "enables it") {
		t.Fatalf("compact-index --drop-columns email with the property set: exit %d: %s", code, stderr)
	}

	before := len(metadataFiles(t))
	out := columns("--disable", "EMAIL")
	if after := len(metadataFiles(t)); !out.Changed || after != before+1 {
		t.Errorf("--disable EMAIL: changed %v, %d commits; want one", out.Changed, after-before)
	}
	want["email"] = [2]bool{false, true}
	if got := states(out); !reflect.DeepEqual(got, want) {
		t.Errorf("after --disable: %v, want %v", got, want)
	}
	if _, stderr, code := icebloom(t, "compact-index", "demo.events", "--drop-columns", "email"); code != 0 {
		t.Fatalf("compact-index --drop-columns email after --disable: exit %d: %s", code, stderr)
	}
	delete(want, "email")
	if got := states(columns()); !reflect.DeepEqual(got, want) {
		t.Errorf("after the drop: %v, want %v", got, want)
	}

	out = columns("--enable", "email", "--fpp", "0.05", "--disable", "order_id")
	want["email"], want["order_id"] = [2]bool{true, false}, [2]bool{false, true}
	if got := states(out); !reflect.DeepEqual(got, want) {
		t.Errorf("after --enable email --disable order_id: %v, want %v", got, want)
	}
	for _, c := range out.Columns {
		if c.Name == "email" && c.FPP != 0.05 {
			t.Errorf("email fpp %v, want 0.05", c.FPP)
		}
	}
	if out := columns("--enable", "email", "--fpp", "0.05"); out.Changed {
		t.Errorf("enabling what is enabled committed a change")
	}
	if len(out.Notes) != 0 {
		t.Errorf("--fpp of a column not indexed yet: notes %q, want none", out.Notes)
	}
	// A new rate for a column the index holds says when it applies.
	stdout, _, code := icebloom(t, "columns", "demo.events", "--enable", "user_id", "--fpp", "0.2")
	if want := "user_id: fpp 0.2 applies to the data files indexed from the next sync on; " +
		"the filters the index holds keep their rate until `icebloom rebuild demo.events`"; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("columns --enable user_id --fpp 0.2: exit %d, %q; want %q", code, stdout, want)
	}

	before = len(metadataFiles(t))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--enable", "nope"}, 1, "nope"},
		{[]string{"--enable", "user_id,tags"}, 1, "tags"},
		{[]string{"--disable", "ts"}, 1, "--disable ts: no table property"},
		{[]string{"--enable", "user_id", "--fpp", "1.5"}, 2, "--fpp 1.5"},
		{[]string{"--fpp", "0.1"}, 2, "give --enable too"},
		{[]string{"--enable", `"user_id`}, 1, "not closed"},
	} {
		_, stderr, code := icebloom(t, append([]string{"columns", "demo.events"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("columns %v: exit %d, %s; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if after := len(metadataFiles(t)); after != before {
		t.Errorf("refused changes committed %d times", after-before)
	}
	if _, err := os.Stat("warehouse"); err != nil {
		t.Fatal(err)
	}
}

// TestSplitColumns: commas separate names; a double-quoted name may hold
// commas and doubled double quotes.
func TestSplitColumns(t *testing.T) {
	for in, want := range map[string][]string{
		"id":             {"id"},
		" id , email ,":  {"id", "email"},
		`id,"a,b", c`:    {"id", "a,b", "c"},
		`"say ""hi""",x`: {`say "hi"`, "x"},
		`"a,b"`:          {"a,b"},
		"":               nil,
	} {
		got, err := splitColumns("--columns", in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitColumns(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`"a`, `"a"b`} {
		if _, err := splitColumns("--columns", in); err == nil {
			t.Errorf("splitColumns(%q): no error", in)
		}
	}
}
