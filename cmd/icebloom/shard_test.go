package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/indexfile"
)

// helperArgsEnv carries a command line to TestIcebloomProcess: set, the
// test binary runs as the icebloom binary would.
const helperArgsEnv = "ICEBLOOM_TEST_PROCESS_ARGS"

// TestIcebloomProcess is not a test: started by process() with
// helperArgsEnv set, it runs icebloom in a process of its own.
func TestIcebloomProcess(t *testing.T) {
	raw := os.Getenv(helperArgsEnv)
	if raw == "" {
		t.Skip("runs only as a helper process")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(run(context.Background(), args, os.Stdout, os.Stderr))
}

// process starts icebloom with args in a process of its own, with extra
// environment variables.
func process(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestIcebloomProcess$")
	cmd.Env = append(append(os.Environ(), helperArgsEnv+"="+string(raw)), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stdout, &stderr
}

// shardCatalog is a catalog the shard processes reach through global
// flags, and the same catalog opened in the test.
type shardCatalog struct {
	flags []string
	cat   icecatalog.Catalog
}

// TestShardProcesses: on a SQLite catalog, PostgreSQL, the REST test
// server and the Hadoop catalog, four processes started at once each index one shard of a table
// (Kubernetes Indexed Job style: --shards 4 and JOB_COMPLETION_INDEX): all
// complete, no commit is lost — inspect counts the run's shards as they
// commit — and the last merges them into one segment covering every live
// file exactly once, keeping every true file in lookups. A shard killed
// midway leaves nothing that a sync cannot repair.
func TestShardProcesses(t *testing.T) {
	catalogs := map[string]func(t *testing.T) shardCatalog{
		"sqlite": func(t *testing.T) shardCatalog {
			c := catalogtest.NewCatalog(t)
			uri := "file:" + filepath.Join(filepath.Dir(c.Warehouse), "catalog.db") + "?_journal_mode=WAL"
			return shardCatalog{flags: []string{"--catalog", "sql", "--uri", uri, "--warehouse", "file://" + c.Warehouse}, cat: c.Catalog}
		},
		"postgres": func(t *testing.T) shardCatalog {
			dsn := catalogtest.PostgresDSN(t)
			warehouse := "file://" + filepath.ToSlash(t.TempDir())
			o := catalog.Options{Type: "sql", URI: dsn, Warehouse: warehouse, SQLDriver: "pgx", SQLDialect: "postgres"}
			cat, err := catalog.Open(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
			ns := table.Identifier{"db"}
			if exists, _ := cat.CheckNamespaceExists(t.Context(), ns); !exists {
				if err := cat.CreateNamespace(t.Context(), ns, nil); err != nil {
					t.Fatal(err)
				}
			}
			return shardCatalog{flags: []string{"--catalog", "sql", "--uri", dsn, "--sql-driver", "pgx", "--sql-dialect", "postgres", "--warehouse", warehouse}, cat: cat}
		},
		"hadoop": func(t *testing.T) shardCatalog {
			warehouse := t.TempDir()
			cat, err := catalog.Open(t.Context(), catalog.Options{Type: "hadoop", Warehouse: warehouse})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
			if err := cat.CreateNamespace(t.Context(), table.Identifier{"db"}, nil); err != nil {
				t.Fatal(err)
			}
			return shardCatalog{flags: []string{"--catalog", "hadoop", "--warehouse", warehouse}, cat: cat}
		},
		"rest": func(t *testing.T) shardCatalog {
			srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
			return shardCatalog{flags: []string{"--catalog", "rest", "--uri", srv.URL, "--credential", srv.Credential}, cat: srv.Catalog.Catalog}
		},
	}
	for _, name := range []string{"sqlite", "postgres", "rest", "hadoop"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Chdir(t.TempDir())
			sc := catalogs[name](t)
			testShards(t, sc)
		})
	}
}

func testShards(t *testing.T, sc shardCatalog) {
	ident := table.Identifier{"db", fmt.Sprintf("events_%d", time.Now().UnixNano())}
	tbl, err := sc.cat.CreateTable(t.Context(), ident, catalogtest.IDSchema)
	if err != nil {
		t.Fatal(err)
	}
	// File k holds the ids 16j+k: each id is in exactly one file, and
	// min/max statistics keep every file for any id.
	const nFiles = 16
	var files []string
	for k := range int64(nFiles) {
		ids := make([]int64, 50)
		for j := range ids {
			ids[j] = nFiles*int64(j) + k
		}
		before := tbl
		tbl = catalogtest.AppendIDs(t, tbl, ids...)
		files = append(files, addedFile(t, before, tbl))
	}
	name := strings.Join(ident, ".")
	cli := func(v any, args ...string) {
		t.Helper()
		stdout, stderr, code := icebloom(t, append(append([]string{"--output", "json"}, sc.flags...), args...)...)
		if code != 0 {
			t.Fatalf("%v exited %d: %s", args, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), v); err != nil {
			t.Fatalf("%v output %q: %v", args, stdout, err)
		}
	}
	shards := func(command, run string, indexes ...int) []*exec.Cmd {
		var cmds []*exec.Cmd
		for _, i := range indexes {
			cmd, _, stderr := process(t, []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), "ICEBLOOM_SHARDS=4", "ICEBLOOM_RUN_ID=" + run},
				append(append([]string{"--output", "json", "--log-level", "warn"}, sc.flags...), command, name, "--columns", "id")...)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("shard %d of %s: %s", i, run, stderr)
				}
			})
			cmds = append(cmds, cmd)
		}
		return cmds
	}
	wait := func(cmds []*exec.Cmd) {
		t.Helper()
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("shard process %d: %v", i, err)
			}
		}
	}
	var in InspectOutput
	inspect := func() {
		t.Helper()
		in = InspectOutput{} // JSON would merge into the last one's map
		cli(&in, "inspect", name)
	}
	covered := func(wantFiles, wantSegments int) {
		t.Helper()
		inspect()
		if in.LiveFiles != wantFiles || len(in.Columns) != 1 || in.Columns[0].Covered != wantFiles || len(in.IndexErrors) != 0 ||
			wantSegments > 0 && len(in.Segments) != wantSegments {
			t.Fatalf("inspect %+v, want %d files covered in %d segments", in, wantFiles, wantSegments)
		}
	}

	// Three shards at once; the fourth is killed midway.
	wait(shards("build", "first", 0, 1, 2))
	inspect()
	if r := in.Runs["first"]; r != (indexfile.RunShards{Committed: 3, Count: 4}) {
		t.Fatalf("after three shards inspect says %+v", in.Runs)
	}
	killed := shards("build", "first", 3)[0]
	time.Sleep(time.Duration(len(sc.flags)) * 20 * time.Millisecond)
	killed.Process.Kill()
	killed.Wait()
	var sum indexer.Summary
	cli(&sum, "sync", name, "--columns", "id")
	var cs indexer.CompactSummary
	cli(&cs, "compact-index", name)
	covered(nFiles, 1)

	// A rebuild by four shards at once: the last keeps only its run's filters.
	wait(shards("rebuild", "second", 0, 1, 2, 3))
	covered(nFiles, 0)
	// The last shard merged the run. A shard whose retried commit landed
	// after that merge may have linked its own segment again beside it:
	// duplicates of filters the merged segment holds, which the next
	// compaction drops.
	for _, seg := range in.Segments {
		if seg.Run != "" && seg.Run != "second" {
			t.Fatalf("after the second run: %+v, a segment of another run", in)
		}
	}
	cli(&cs, "compact-index", name)
	covered(nFiles, 1)
	if len(in.Runs) != 0 || in.Segments[0].Entries != nFiles {
		t.Fatalf("after the second run and compact-index: %+v, want one segment of %d entries", in, nFiles)
	}
	for k := range nFiles {
		id := nFiles*7 + k
		var lk LookupOutput
		cli(&lk, "lookup", name, "--where", fmt.Sprintf("id = %d", id))
		if lk.FilesAfterStats != nFiles || !slices.Contains(lk.Candidates, files[k]) || len(lk.Candidates) > 3 || len(lk.IndexErrors) != 0 || len(lk.Unindexed) != 0 {
			t.Fatalf("lookup of id %d: %+v, want %s among few candidates", id, lk, files[k])
		}
	}
}

// TestShardFlags: where a shard's index and count come from, and the
// usage errors naming the flag or variable at fault.
func TestShardFlags(t *testing.T) {
	for _, name := range shardIndexEnv {
		os.Unsetenv(name)
	}
	t.Setenv("AWS_BATCH_JOB_ARRAY_INDEX", "5")
	sh, err := shardFlags{Shards: 8, RunID: "r"}.shard()
	if err != nil || *sh != (indexer.Shard{Index: 5, Count: 8, Run: "r"}) {
		t.Fatalf("AWS Batch: %+v, %v", sh, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "2") // Kubernetes first
	if sh, err = (shardFlags{Shards: 8}).shard(); err != nil || sh.Index != 2 {
		t.Fatalf("Kubernetes: %+v, %v", sh, err)
	}
	if sh, err = (shardFlags{Shard: "3/8"}).shard(); err != nil || sh.Index != 3 || sh.Count != 8 {
		t.Fatalf("--shard: %+v, %v", sh, err)
	}
	if sh, err = (shardFlags{}).shard(); err != nil || sh != nil {
		t.Fatalf("no shard flags: %+v, %v", sh, err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--shard", "4/4"}, "", "--shard"},
		{[]string{"--shard", "1/4", "--shards", "8"}, "", "disagree"},
		{[]string{"--shards", "4"}, "", "JOB_COMPLETION_INDEX"},
		{[]string{"--shards", "4"}, "JOB_COMPLETION_INDEX=4", "JOB_COMPLETION_INDEX"},
		{[]string{"--run-id", "x"}, "", "--run-id"},
	} {
		os.Unsetenv("JOB_COMPLETION_INDEX")
		os.Unsetenv("AWS_BATCH_JOB_ARRAY_INDEX")
		if k, v, ok := strings.Cut(tc.env, "="); ok {
			os.Setenv(k, v)
		}
		_, stderr, code := icebloom(t, append([]string{"build", "db.t"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v %s: exit %d, %q; want a usage error naming %s", tc.args, tc.env, code, stderr, tc.want)
		}
	}
}
