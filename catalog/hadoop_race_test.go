package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Commits of statistics on iceberg-go's Hadoop catalog when another writer
// gets there first. The Hadoop catalog has no compare-and-swap of a
// location: CommitTable loads the newest vN.metadata.json, checks the
// requirements against it, applies the updates, writes the result to a
// temporary file and publishes it as vN+1 by renaming it, without
// replacing, first to a claim file and then to vN+1.metadata.json. A writer
// that published vN+1 meanwhile makes that commit fail with
// table.ErrCommitFailed ("metadata file already exists"), as the SQL
// catalog's moved row does.

// hadoopOptions selects a Hadoop catalog on the warehouse directory dir.
func hadoopOptions(dir string) Options {
	return Options{Type: string(icecatalog.Hadoop), Warehouse: dir}
}

// TestHadoopCommitStatisticsConflict: an append publishes the next metadata
// version while the Hadoop catalog commits statistics, between its writing
// the new metadata and its publishing it. The catalog refuses the commit;
// CommitStatistics discards the attempt's file, prepares again on the
// reloaded table, and the table ends with both the append and the
// statistics file, one version each.
func TestHadoopCommitStatisticsConflict(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	cat := openT(t, hadoopOptions(dir))
	if err := cat.CreateNamespace(t.Context(), icecatalog.NamespaceFromIdent(events), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(t.Context(), events, testSchema); err != nil {
		t.Fatal(err)
	}
	s1 := appendT(t, cat, events)
	var appended int64
	raced := racedOpen(t, hadoopOptions(dir), func() {
		if appended == 0 {
			appended = appendT(t, cat, events)
		}
	})
	w := &writer{dir: t.TempDir(), snapshot: s1}
	committed := commitT(t, raced, w.prepare)

	if w.calls != 2 || w.discards != 1 {
		t.Fatalf("prepare called %d times, discard %d; want 2, 1: one refusal, then a commit", w.calls, w.discards)
	}
	if w.tables[1].SnapshotByID(appended) == nil {
		t.Error("the second prepare did not get the table with the append")
	}
	if got := exist(w.paths); !slices.Equal(got, []bool{false, true}) {
		t.Errorf("files of the attempts exist: %v, want the discarded first one gone", got)
	}
	tbl, err := openT(t, hadoopOptions(dir)).LoadTable(t.Context(), events)
	if err != nil {
		t.Fatal(err)
	}
	// v1 the create, v2 and v3 the appends, v4 the statistics.
	if want := filepath.Join(dir, "db", "events", "metadata", "v4.metadata.json"); tbl.MetadataLocation() != want || committed.MetadataLocation() != want {
		t.Errorf("the table is at %s, CommitStatistics returned %s; want both at %s", tbl.MetadataLocation(), committed.MetadataLocation(), want)
	}
	if tbl.CurrentSnapshot().SnapshotID != appended {
		t.Errorf("current snapshot %d, want the append's %d", tbl.CurrentSnapshot().SnapshotID, appended)
	}
	checkStatistics(t, tbl, statsFile(s1, w.paths[1]))
}

// TestHadoopCommitStatisticsClaimed: a metadata version claimed by a writer
// that crashed before publishing it (its vN.metadata.json.claim left in the
// metadata directory) blocks every commit of the table until iceberg-go
// deems the claim stale, after a minute. A statistics commit meanwhile is
// refused on every attempt: it fails with table.ErrCommitFailed naming the
// claim, having discarded every attempt's file and committed nothing.
func TestHadoopCommitStatisticsClaimed(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	cat := openT(t, hadoopOptions(dir))
	if err := cat.CreateNamespace(t.Context(), icecatalog.NamespaceFromIdent(events), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(t.Context(), events, testSchema); err != nil {
		t.Fatal(err)
	}
	s1 := appendT(t, cat, events) // v2
	claim := filepath.Join(dir, "db", "events", "metadata", "v3.metadata.json.claim")
	if err := os.WriteFile(claim, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &writer{dir: t.TempDir(), snapshot: s1}
	_, err := commit(t, cat, w.prepare, WithAttempts(3))
	if !errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), claim) {
		t.Fatalf("commit with v3 claimed: %v, want a refusal naming %s", err, claim)
	}
	if w.calls != 3 || w.discards != 3 || slices.Contains(exist(w.paths), true) {
		t.Errorf("prepare called %d times, discard %d, files left %v; want 3, 3, none", w.calls, w.discards, exist(w.paths))
	}
	tbl, err := cat.LoadTable(t.Context(), events)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tbl.MetadataLocation(), "v2.metadata.json") || len(statistics(tbl.Metadata())) != 0 {
		t.Errorf("the table is at %s with statistics %v; want v2, untouched", tbl.MetadataLocation(), statistics(tbl.Metadata()))
	}
}
