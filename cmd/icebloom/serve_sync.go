package main

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve"
	"github.com/icebloom/icebloom/maintenance"
)

// startCommitSyncer puts the commit syncer behind the proxy: each commit it
// forwards successfully schedules a debounced sync of the table, with the
// REST prefix of the commit.
func startCommitSyncer(sync func(context.Context, string, table.Identifier) error, c *ServeCmd, e *env, o *serve.Options) func() {
	s := maintenance.NewCommitSyncer(func(ctx context.Context, key table.Identifier) error {
		prefix, ident := serve.SplitSyncKey(key)
		return sync(ctx, prefix, ident)
	}, maintenance.CommitSyncOptions{
		Quiet: c.SyncQuiet, MaxDelay: c.SyncMaxDelay, Workers: c.SyncWorkers, Logger: e.log,
	})
	o.Committed = func(prefix string, ident table.Identifier) { s.Committed(serve.SyncKey(prefix, ident)) }
	o.SyncStats = func() serve.SyncStats {
		st := s.Stats()
		return serve.SyncStats{Scheduled: st.Scheduled, Started: st.Started, Succeeded: st.Succeeded,
			Failed: st.Failed, Retried: st.Retried, GaveUp: st.GaveUp, Dropped: st.Dropped}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			e.log.Warn("sync on commit", "error", err)
		}
	}
}
