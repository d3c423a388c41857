package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/verify"
)

// MaintainOptions configure a maintenance run.
type MaintainOptions struct {
	// Index configures the sync (parallelism, fail-fast); its columns are
	// each table's indexed columns (indexer.IndexedColumns: those its
	// index holds and those its properties enable).
	Index indexer.Options
	// CompactAbove compacts the index when the sync leaves more segments
	// than this; 0 means indexer.DefaultCompactAbove.
	CompactAbove int
	// Expire, when set, expires snapshots (folding their segments first;
	// the fold gets Index's memory budget unless Expire names its own).
	Expire *ExpireOptions
	// GC configures the deletion of orphan index files.
	GC GCOptions
	// NoRepair skips the repair (indexer.Repair) that starts each table's
	// run: a streaming read of every byte of its index, checking every
	// checksum, which costs the index's size in reads (small next to the
	// data a build reads, but every run).
	NoRepair bool
	// Verify, when set, verifies each table's index last
	// (indexer.Verify); a problem fails the table's run.
	Verify *verify.Options
	// RunLease is how long a sharded run counts as live after a shard
	// last touched its lease, for the sync (which leaves a live run's
	// files to it) and the expiry (which keeps its snapshot); 0 means
	// indexer.RunLease.
	RunLease time.Duration
}

// TableReport is what a run did to one table.
type TableReport struct {
	Table   string                  `json:"table"`
	Skipped string                  `json:"skipped,omitempty"`
	Repair  *indexer.RepairSummary  `json:"repair,omitempty"`
	Sync    *indexer.Summary        `json:"sync,omitempty"`
	Compact *indexer.CompactSummary `json:"compact,omitempty"`
	Expire  *ExpireSummary          `json:"expire,omitempty"`
	GC      *GCSummary              `json:"gc,omitempty"`
	Verify  *verify.Report          `json:"verify,omitempty"`
	Error   string                  `json:"error,omitempty"`
}

// NoSnapshot is TableReport.Skipped for a table without a snapshot.
const NoSnapshot = "no snapshot yet: nothing to index"

// SkippedNoColumns is TableReport.Skipped for a table with no indexed
// columns.
const SkippedNoColumns = "no indexed columns: no icebloom index, and no " + indexer.PropBloomEnabledPrefix + "<name>=true property"

// Failed reports whether a step failed.
func (r TableReport) Failed() bool { return r.Error != "" }

// Tables lists the tables of namespace, or of every namespace when it is
// nil, in order.
func Tables(ctx context.Context, cat icecatalog.Catalog, namespace table.Identifier) ([]table.Identifier, error) {
	namespaces := []table.Identifier{namespace}
	if namespace == nil {
		var err error
		if namespaces, err = allNamespaces(ctx, cat, nil); err != nil {
			return nil, err
		}
	}
	var out []table.Identifier
	for _, ns := range namespaces {
		for ident, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			out = append(out, ident)
		}
	}
	slices.SortFunc(out, func(a, b table.Identifier) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	return out, nil
}

// allNamespaces lists the namespaces under parent, nested ones too. Some
// catalogs list a namespace among its own children, so only strictly deeper
// ones are descended into, each once.
func allNamespaces(ctx context.Context, cat icecatalog.Catalog, parent table.Identifier) ([]table.Identifier, error) {
	seen := map[string]bool{}
	var out []table.Identifier
	var walk func(table.Identifier) error
	walk = func(parent table.Identifier) error {
		children, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return fmt.Errorf("list namespaces: %w", err)
		}
		for _, ns := range children {
			key := strings.Join(ns, ".")
			if len(ns) <= len(parent) || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, ns)
			if err := walk(ns); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(parent)
}

// Maintain runs MaintainTable on each table in turn. A cancelled context
// stops it between tables, and the table in progress abandons its work
// without committing (every step commits whole or not at all).
func Maintain(ctx context.Context, cat icecatalog.Catalog, tables []table.Identifier, o MaintainOptions) []TableReport {
	reports := make([]TableReport, 0, len(tables))
	for _, ident := range tables {
		if ctx.Err() != nil {
			break
		}
		reports = append(reports, MaintainTable(ctx, cat, ident, o))
	}
	return reports
}

// MaintainTable keeps one table's index true: repair (indexer.Repair: a
// damaged index file is rewritten from what reads clean), sync (which
// indexes again the files whose filters the repair left out, and compacts
// past the segment threshold), then optionally expiry, then gc, then
// optionally verification. A table without a snapshot is skipped, and so
// is one with no indexed columns — no icebloom index and no column its
// properties enable (indexer.ErrNoColumns); any other column error (a
// property naming a column that cannot be indexed) fails the table. The
// first failing step ends the table's run and is reported.
func MaintainTable(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o MaintainOptions) TableReport {
	r := TableReport{Table: strings.Join(ident, ".")}
	fail := func(err error) TableReport {
		if ctx.Err() != nil {
			// Stopped (SIGTERM): the step in progress committed nothing.
			r.Skipped = "abandoned: the run was stopped"
			return r
		}
		r.Error = err.Error()
		return r
	}
	tbl, err := catalog.LoadTable(ctx, cat, ident)
	if err != nil {
		return fail(fmt.Errorf("load table %s: %w", r.Table, err))
	}
	// The columns are decided by the sync, as by every run (one rule,
	// indexer.IndexedColumns); a table with nothing to sync is asked
	// directly.
	if tbl.CurrentSnapshot() != nil {
		// Damage verify would report is repaired first, so the sync
		// indexes again the files of the groups the repair left out.
		if !o.NoRepair {
			if r.Repair, err = indexer.Repair(ctx, cat, ident, indexer.CompactOptions{Logger: o.Index.Logger, MemoryBudget: o.Index.MemoryBudget}); err != nil {
				return fail(err)
			}
		}
		idx := o.Index
		idx.Columns, idx.FPP, idx.CompactAbove = nil, 0, o.CompactAbove
		idx.RunLease = cmp.Or(idx.RunLease, o.RunLease)
		r.Sync, err = indexer.Sync(ctx, cat, ident, idx)
	} else if _, err = indexer.TableColumns(ctx, tbl, nil, 0); err == nil {
		// A table created and never written: no data file to index, no
		// snapshot to expire, no index file to collect.
		r.Skipped = NoSnapshot
		return r
	}
	if errors.Is(err, indexer.ErrNoColumns) {
		r.Skipped = SkippedNoColumns
		return r
	}
	if err != nil {
		return fail(err)
	}
	r.Compact = r.Sync.Compacted
	if o.Expire != nil {
		exp := *o.Expire
		exp.MemoryBudget = cmp.Or(exp.MemoryBudget, o.Index.MemoryBudget)
		exp.RunLease = cmp.Or(exp.RunLease, o.RunLease, o.Index.RunLease)
		if r.Expire, err = Expire(ctx, cat, ident, exp); err != nil {
			return fail(err)
		}
	}
	if r.GC, err = GC(ctx, cat, ident, o.GC); err != nil {
		return fail(err)
	}
	if o.Verify != nil {
		if r.Verify, err = verify.Table(ctx, cat, ident, *o.Verify); err != nil {
			return fail(err)
		}
		if !r.Verify.OK() {
			return fail(fmt.Errorf("verify the index of %s: %d problems, the first: %s", r.Table, len(r.Verify.Problems), r.Verify.Problems[0]))
		}
	}
	return r
}
