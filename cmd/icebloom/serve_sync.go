package main

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/serve"
)

// startCommitSyncer wires the commit syncer into the proxy.
//
// TODO(merge): maintenance.NewCommitSyncer (maintenance/commitsync.go) is
// being written on another branch; once it is in main this becomes
//
//	s := maintenance.NewCommitSyncer(sync, maintenance.CommitSyncOptions{Quiet: c.SyncQuiet,
//		MaxDelay: c.SyncMaxDelay, Workers: c.SyncWorkers, Logger: e.log})
//	o.Committed = s.Committed
//	o.SyncStats = func() serve.SyncStats { st := s.Stats(); return serve.SyncStats{st.Scheduled, st.Started, st.Succeeded, st.Failed, st.Retried} }
//	return func() { s.Close(context.Background()) }, nil
func startCommitSyncer(ctx context.Context, sync func(context.Context, table.Identifier) error, c *ServeCmd, e *env, o *serve.Options) (func(), error) {
	return nil, errors.New("--sync-on-commit: this build has no commit syncer yet (maintenance.CommitSyncer)")
}
