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
	"strconv"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
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

// shardCatalogs are the catalogs the shard process tests run on, by name.
func shardCatalogs() map[string]func(t *testing.T) shardCatalog {
	return map[string]func(t *testing.T) shardCatalog{
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
}

// TestShardProcesses: on a SQLite catalog, PostgreSQL, the REST test
// server and the Hadoop catalog, four processes started at once each index
// one shard of a table (Kubernetes Indexed Job style: --shards 4 and
// JOB_COMPLETION_INDEX): until all four have written their segments
// nothing is committed and inspect counts the run's shards; a shard killed
// and rerun completes the run, whose one linking commit covers every
// live file exactly once, keeping every true file in lookups.
func TestShardProcesses(t *testing.T) {
	catalogs := shardCatalogs()
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

	// Three shards at once; the fourth is killed, then rerun.
	wait(shards("build", "first", 0, 1, 2))
	inspect()
	if len(in.Runs) != 1 || in.Runs[0].Run != "first" || in.Runs[0].ShardsCommitted != 3 || in.Runs[0].Shards != 4 ||
		in.Runs[0].Complete || !slices.Equal(in.Runs[0].MissingShards, []int{3}) || len(in.Segments) != 0 {
		t.Fatalf("after three shards inspect says %+v, segments %+v", in.Runs, in.Segments)
	}
	text, _, _ := icebloom(t, append(append([]string{}, sc.flags...), "inspect", name)...)
	if !strings.Contains(text, "sharded run first (snapshot ") || !strings.Contains(text, "3 of 4 shards committed, live") ||
		!strings.Contains(text, "missing shards 3: 0 of their ") {
		t.Fatalf("inspect's text after three shards:\n%s", text)
	}
	killed := shards("build", "first", 3)[0]
	killed.Process.Kill() // at once, before it writes its segment: a pod lost early
	killed.Wait()
	wait(shards("build", "first", 3))
	var cs indexer.CompactSummary
	cli(&cs, "compact-index", name)
	covered(nFiles, 1)
	if r := in.Runs[0]; !r.Complete || r.ShardsCommitted != 4 || r.FilesCovered != nFiles || len(r.MissingShards) != 0 {
		t.Fatalf("after the rerun inspect says %+v", in.Runs)
	}

	// A rebuild by four shards at once: the last keeps only its run's filters.
	wait(shards("rebuild", "second", 0, 1, 2, 3))
	covered(nFiles, 0)
	// The shard that linked the run merged it.
	for _, seg := range in.Segments {
		if seg.Run != "" && seg.Run != "second" {
			t.Fatalf("after the second run: %+v, a segment of another run", in)
		}
	}
	cli(&cs, "compact-index", name)
	covered(nFiles, 1)
	if in.Segments[0].Entries != nFiles {
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

// shardTestCountEnv sets the shard count of TestShardRun (default 64, 16
// under the race detector, which checks each process alone: its shard
// processes, each a race-instrumented binary, took 5 minutes of CI at 64):
// ICEBLOOM_SHARD_TEST_N=256 is the long mode, run by hand.
const shardTestCountEnv = "ICEBLOOM_SHARD_TEST_N"

// maxRunCommits bounds the catalog commits of one sharded run, whatever
// its shard count: the one linking commit, a second one when two shards
// find the run complete at once (statistics commits do not conflict, so
// both land; the second carries the first), and the merge.
const maxRunCommits = 3

// TestShardRun: on SQLite, PostgreSQL and the REST test server, 64 shard
// processes are started at once against one table of 128 tiny files, as
// an Indexed Job starts them (JOB_COMPLETION_INDEX, ICEBLOOM_SHARDS,
// ICEBLOOM_RUN_ID), with a `sync` started during the run and one shard
// killed at once and rerun after the others. Every process exits 0, the
// run makes at most maxRunCommits catalog commits (counted in the table's
// metadata log; the sync's are counted apart), every live file is covered
// exactly once, and a lookup of any row keeps its file; a shard of the run
// with another shard count is refused, naming both.
func TestShardRun(t *testing.T) {
	n := 64
	if raceEnabled { // processes of the race-built test binary, 8 at once still (16 took 40 s of CI)
		n = 8
	}
	if v := os.Getenv(shardTestCountEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("%s=%q: want a shard count of at least 2", shardTestCountEnv, v)
		}
	}
	catalogs := shardCatalogs()
	for _, name := range []string{"sqlite", "postgres", "rest"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Chdir(t.TempDir())
			testShardRun(t, catalogs[name](t), n)
		})
	}
}

func testShardRun(t *testing.T, sc shardCatalog, n int) {
	ident := table.Identifier{"db", fmt.Sprintf("run_%d", time.Now().UnixNano())}
	tbl, err := sc.cat.CreateTable(t.Context(), ident, catalogtest.IDSchema)
	if err != nil {
		t.Fatal(err)
	}
	nFiles := 2 * n
	var files []string // file k holds the ids nFiles*j + k
	for k := range int64(nFiles) {
		ids := make([]int64, 20)
		for j := range ids {
			ids[j] = int64(nFiles)*int64(j) + k
		}
		prev := tbl
		tbl = catalogtest.AppendIDs(t, tbl, ids...)
		files = append(files, addedFile(t, prev, tbl))
	}
	name := strings.Join(ident, ".")
	before := metadataVersion(t, tbl)
	start := time.Now()
	shard := func(i, count int, run string) (*exec.Cmd, *bytes.Buffer) {
		cmd, _, stderr := process(t, []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), fmt.Sprintf("ICEBLOOM_SHARDS=%d", count), "ICEBLOOM_RUN_ID=" + run},
			append(append([]string{"--output", "json", "--log-level", "warn"}, sc.flags...), "build", name, "--columns", "id")...)
		return cmd, stderr
	}
	const killed = 7
	type proc struct {
		what   string
		cmd    *exec.Cmd
		stderr *bytes.Buffer
	}
	var procs []proc
	var syncOut *bytes.Buffer
	for i := range n {
		cmd, stderr := shard(i, n, "run-1")
		if i == killed {
			cmd.Process.Kill() // at once: before it writes its segment
			cmd.Wait()
			continue
		}
		procs = append(procs, proc{fmt.Sprintf("shard %d", i), cmd, stderr})
		if i == n/2 {
			cmd, stdout, stderr := process(t, nil, append(append([]string{"--output", "json", "--log-level", "warn"}, sc.flags...), "sync", name, "--columns", "id")...)
			procs = append(procs, proc{"sync", cmd, stderr})
			syncOut = stdout
		}
	}
	for _, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("%s: %v: %s", p.what, err, p.stderr)
		}
	}
	rerun, stderr := shard(killed, n, "run-1")
	if err := rerun.Wait(); err != nil {
		t.Fatalf("the rerun of shard %d: %v: %s", killed, err, stderr)
	}
	wall := time.Since(start)

	tbl, err = sc.cat.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	var sync indexer.Summary
	if err := json.Unmarshal(syncOut.Bytes(), &sync); err != nil {
		t.Fatalf("sync's output %q: %v", syncOut, err)
	}
	syncCommits := 0
	if sync.StatisticsPath != "" {
		syncCommits++
	}
	if sync.Compacted != nil && sync.Compacted.StatisticsPath != "" {
		syncCommits++
	}
	runCommits := metadataVersion(t, tbl) - before - syncCommits
	t.Logf("sync: %d files indexed, %d left to the run", sync.FilesIndexed, sync.FilesLeftToRuns)
	t.Logf("%d shards, %d files: %s wall, %d commits of the run, %d of the sync", n, nFiles, wall.Round(time.Millisecond), runCommits, syncCommits)
	if runCommits < 1 || runCommits > maxRunCommits || syncCommits > 2 {
		t.Fatalf("%d commits of the run (want 1 to %d), %d of the sync (want at most 2)", runCommits, maxRunCommits, syncCommits)
	}
	coveredExactlyOnce(t, tbl, nFiles)

	var in InspectOutput
	stdout, stderrText, code := icebloom(t, append(append([]string{"--output", "json"}, sc.flags...), "inspect", name)...)
	if code != 0 || json.Unmarshal([]byte(stdout), &in) != nil {
		t.Fatalf("inspect: %d %s %s", code, stdout, stderrText)
	}
	if len(in.Runs) != 1 || !in.Runs[0].Complete || in.Runs[0].ShardsCommitted != n || in.Runs[0].Shards != n {
		t.Fatalf("inspect's runs %+v", in.Runs)
	}
	// Zero false negatives: the file holding an id stays a candidate;
	// the others are pruned but for false positives (fpp 0.01).
	for k := 0; k < nFiles; k += max(1, nFiles/16) {
		var lk LookupOutput
		stdout, _, code := icebloom(t, append(append([]string{"--output", "json"}, sc.flags...), "lookup", name, "--where", fmt.Sprintf("id = %d", nFiles*3+k))...)
		if code != 0 || json.Unmarshal([]byte(stdout), &lk) != nil || !slices.Contains(lk.Candidates, files[k]) ||
			len(lk.Candidates) > 2+nFiles/20 || len(lk.IndexErrors) != 0 {
			t.Fatalf("lookup of id %d, in %s: %s", nFiles*3+k, files[k], stdout)
		}
	}

	// A shard of the run with another count is refused, naming both.
	cmd, stderr := shard(1, n-1, "run-1")
	if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), fmt.Sprintf("started with %d shards; this shard says %d", n, n-1)) {
		t.Fatalf("a shard of %d in a run of %d: %v: %s", n-1, n, err, stderr)
	}
}

// coveredExactlyOnce checks that the index holds exactly one filter of
// field 1 for each live file of tbl, and none of other files.
func coveredExactlyOnce(t *testing.T, tbl *table.Table, nFiles int) {
	t.Helper()
	fs, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ix, errs := index.Load(t.Context(), fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	count := map[string]int{}
	for _, seg := range ix.Segments() {
		for f := range seg.Filters() {
			if f.FieldID == 1 {
				count[f.DataFile]++
			}
		}
	}
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != nFiles || len(count) != nFiles {
		t.Fatalf("%d live files, %d with filters; want %d", len(tasks), len(count), nFiles)
	}
	for _, task := range tasks {
		if c := count[task.File.FilePath()]; c != 1 {
			t.Errorf("%s has %d filters, want 1", task.File.FilePath(), c)
		}
	}
}

// metadataVersion is the version number of the table's metadata file
// (00042-<uuid>.metadata.json), one more per commit: the metadata log
// keeps only the last write.metadata.previous-versions-max entries.
func metadataVersion(t *testing.T, tbl *table.Table) int {
	t.Helper()
	base := filepath.Base(tbl.MetadataLocation())
	v, _, ok := strings.Cut(base, "-")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		t.Fatalf("metadata file %s has no version number", base)
	}
	return n
}

// TestShardRunOnS3: a sharded run on object storage (the in-process fake
// and Versity's gateway), whose run directory is listed by prefix: three shards write
// their segments and commit nothing, inspect lists the run as live with
// shard 3 missing, a sync leaves the run's files to it, and the fourth
// shard links the run in one commit covering every file once.
func TestShardRunOnS3(t *testing.T) {
	catalogtest.ForEachS3(t, func(t *testing.T, s3 *catalogtest.S3) {
		e := newS3Env(t, s3)
		const nFiles = 8
		for r := range nFiles {
			e.appendFile(t, r, 30)
		}
		shard := func(i int) indexer.Summary {
			var sum indexer.Summary
			e.icebloomJSON(t, &sum, "build", s3Table, "--columns", "id", "--shard", fmt.Sprintf("%d/4", i), "--run-id", "s3-run")
			return sum
		}
		for i := range 3 {
			if sum := shard(i); sum.Shard == nil || sum.Shard.Linked || sum.Shard.Committed != i+1 {
				t.Fatalf("shard %d: %+v", i, sum.Shard)
			}
		}
		var in InspectOutput
		e.icebloomJSON(t, &in, "inspect", s3Table)
		if len(in.Runs) != 1 || !in.Runs[0].Live || in.Runs[0].ShardsCommitted != 3 || !slices.Equal(in.Runs[0].MissingShards, []int{3}) || len(in.Segments) != 0 {
			t.Fatalf("inspect during the run: %+v", in)
		}
		var sync indexer.Summary
		e.icebloomJSON(t, &sync, "sync", s3Table, "--columns", "id")
		if sync.FilesIndexed != 0 || sync.FilesLeftToRuns != nFiles {
			t.Fatalf("sync during the run: %+v", sync)
		}
		if sum := shard(3); !sum.Shard.Linked {
			t.Fatalf("the last shard: %+v", sum.Shard)
		}
		in = InspectOutput{}
		e.icebloomJSON(t, &in, "inspect", s3Table)
		if len(in.Runs) != 1 || !in.Runs[0].Complete || in.Runs[0].FilesCovered != nFiles || len(in.Columns) != 1 || in.Columns[0].Covered != nFiles {
			t.Fatalf("inspect after the run: %+v", in)
		}
	})
}
