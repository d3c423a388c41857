package serve

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/indexer"
)

// NewSyncFunc returns the sync of --sync-on-commit: it syncs the index of a
// table a commit changed (indexer.Sync), over the catalog open gives for
// the commit's REST prefix — the upstream opened with icebloom's own service
// credentials, never a caller's. A table without an icebloom index is left
// alone. A prefix's catalog is opened on first use and kept; a failed open
// is tried again next time.
func NewSyncFunc(open func(ctx context.Context, prefix string) (icecatalog.Catalog, error), o indexer.Options, log *slog.Logger) func(ctx context.Context, prefix string, ident table.Identifier) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var mu sync.Mutex
	cats := map[string]icecatalog.Catalog{}
	return func(ctx context.Context, prefix string, ident table.Identifier) error {
		mu.Lock()
		c := cats[prefix]
		if c == nil {
			var err error
			if c, err = open(ctx, prefix); err != nil {
				mu.Unlock()
				return fmt.Errorf("open the catalog to sync %s: %w", ident, err)
			}
			cats[prefix] = c
		}
		mu.Unlock()
		tbl, err := catalog.LoadTable(ctx, c, ident)
		if err != nil {
			return fmt.Errorf("sync %s: %w", ident, err)
		}
		if !HasIndex(tbl.Metadata()) {
			log.Debug("committed table has no index, not synced", "table", ident)
			return nil
		}
		sum, err := indexer.Sync(ctx, c, ident, o)
		if err != nil {
			return fmt.Errorf("sync %s: %w", ident, err)
		}
		log.Info("synced after a commit", "table", ident, "prefix", prefix, "files_indexed", sum.FilesIndexed, "files_covered", sum.FilesCovered)
		return nil
	}
}

// SyncKey names a table of a commit for a maintenance.CommitSyncer, which
// keys its syncs by identifier: the REST prefix first, then the table's
// identifier. SplitSyncKey undoes it.
func SyncKey(prefix string, ident table.Identifier) table.Identifier {
	return append(table.Identifier{prefix}, ident...)
}

// SplitSyncKey is the prefix and table identifier of a SyncKey.
func SplitSyncKey(key table.Identifier) (prefix string, ident table.Identifier) {
	return key[0], key[1:]
}
