package runfiles_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud" // s3://

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/runfiles"
)

// TestCreateJSONOnObjectStore: 16 shards creating a run's record on an S3
// server at the same moment agree on one record: exactly one writes it
// (a conditional PUT), the others find it, and it is the writer's. With a
// check before an unconditional PUT, several wrote it and the last won.
func TestCreateJSONOnObjectStore(t *testing.T) {
	s3 := catalogtest.NewS3Gateway(t)
	props := map[string]string{}
	for _, kv := range s3.Properties() {
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	path := s3.Location("metadata/icebloom-runs/r/" + runfiles.RecordName)
	fs, err := icebergio.LoadFS(context.Background(), props, path)
	if err != nil {
		t.Fatal(err)
	}
	wfs := fs.(icebergio.WriteFileIO)
	const shards = 16
	created := make([]bool, shards)
	errs := make([]error, shards)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			<-start
			created[i], errs[i] = runfiles.CreateJSON(wfs, path, runfiles.Record{Run: "r", Shards: shards, SnapshotID: int64(i)})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range shards {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if created[i] {
			if winner >= 0 {
				t.Fatalf("shards %d and %d both wrote the record", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no shard wrote the record")
	}
	var got runfiles.Record
	if err := runfiles.ReadJSON(fs, path, &got); err != nil || got.SnapshotID != int64(winner) {
		t.Fatalf("the record %+v (%v), want the one shard %d wrote", got, err, winner)
	}
}
