package runfiles

import (
	"os"
	"path/filepath"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// TestRunRecordFiles: on local storage a run's record is created once —
// a second shard creating it at the same moment finds the first's and
// adopts it — and JSON files are replaced whole, through a temporary file
// that does not stay.
func TestRunRecordFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	fs := icebergio.LocalFS{}
	first := Record{Run: "r", Shards: 4, SnapshotID: 1}
	if created, err := CreateJSON(fs, path, first); err != nil || !created {
		t.Fatalf("the first record: %v, %v", created, err)
	}
	if created, err := CreateJSON(fs, path, Record{Run: "r", Shards: 4, SnapshotID: 2}); err != nil || created {
		t.Fatalf("a second record: %v, %v; want the first kept", created, err)
	}
	var got Record
	if err := ReadJSON(fs, path, &got); err != nil || got != first {
		t.Fatalf("the record %+v, %v; want %+v", got, err, first)
	}
	if err := WriteJSON(fs, path, Record{Run: "r", Shards: 4, SnapshotID: 3}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the run directory, want the record alone", len(entries))
	}
	if err := ReadJSON(fs, path, &got); err != nil || got.SnapshotID != 3 {
		t.Fatalf("the record after WriteJSON: %+v, %v", got, err)
	}
}
