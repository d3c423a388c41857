package indexer

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexfile"
)

// RepairSummary reports what Repair found and did.
type RepairSummary struct {
	// Checked counts the index files read and checked (linked ones too);
	// BytesVerified the filter bytes checked against their checksums.
	Checked       int   `json:"checked"`
	BytesVerified int64 `json:"bytes_verified"`
	// Damaged are the index files that failed a check (verify reports
	// each of their problems), rewritten by the compaction from what reads
	// clean; Problems the problems found.
	Damaged  []string `json:"damaged,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Reregistered are the index files whose table-metadata entries did
	// not say what the files hold (indexfile.EntryProblems: an item,
	// links, shard runs or the directory's place removed or wrong): each
	// registered again as its file says, its filters kept; or, listed
	// without items and unreadable, its entry removed.
	Reregistered []string `json:"reregistered,omitempty"`
	// Compacted is the compaction that rewrote them, nil when nothing was
	// damaged. Its BrokenGroups lost their filters: the next sync indexes
	// their data files again (as maintain does right after).
	Compacted *CompactSummary `json:"compacted,omitempty"`
}

// Repair reads every index file of the table (the segments table metadata
// lists and the files they link) as one stream each and checks every byte a
// reader relies on, as verify does (index.CheckSegment): footers, tails,
// directories, links, every chunk of every group against its checksum.
// When a file is damaged, an index compaction rewrites the index from what
// reads clean — leaving out the groups that fail their checksums, whose
// data files the next sync indexes again, and replacing every damaged file
// (a footer or tail that no longer reads, a link whose recorded sizes are
// wrong) by the merged segment, read from its directory as lookups read it.
// A segment whose directory cannot be read at all is removed by the same
// compaction (as a sync's does). Until the sync, the files of the groups
// left out are uncovered, never dropped by a lookup.
//
// Reading the index costs its size in bytes — small next to the data a
// sync reads — and nothing is committed when nothing is damaged.
func Repair(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o CompactOptions) (*RepairSummary, error) {
	name := strings.Join(ident, ".")
	tbl, err := catalog.LoadTable(ctx, cat, ident, commitOptions(o.Logger)...)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("table %s storage: %w", name, err)
	}
	sum := &RepairSummary{}
	if tbl, err = reregister(ctx, cat, ident, tbl, fs, o, sum); err != nil {
		return nil, fmt.Errorf("repair the index entries of %s: %w", name, err)
	}
	c := &compaction{broken: map[groupRef]bool{}}
	for sf := range tbl.Metadata().Statistics() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if index.HoldsEntries(sf) {
			c.check(fs, sf, "", sum)
		}
	}
	if len(sum.Damaged) == 0 {
		return sum, nil
	}
	if o.Logger != nil {
		o.Logger.Warn("index files are damaged: the index is rewritten from what reads clean, the broken groups' data files indexed again",
			"table", name, "files", sum.Damaged, "problems", len(sum.Problems))
	}
	c.force = true
	if sum.Compacted, err = c.run(ctx, cat, ident, o); err != nil {
		return nil, fmt.Errorf("repair the index of %s: %w", name, err)
	}
	return sum, nil
}

// check checks the index file sf (linked from the file at linkedFrom, ""
// for one table metadata lists) and the files it links, adding what it
// finds to sum and its broken groups to c.broken. A damaged linked file is
// reported as itself; the file linking it is the one the compaction
// replaces.
func (c *compaction) check(fs icebergio.IO, sf table.StatisticsFile, linkedFrom string, sum *RepairSummary) {
	res := index.CheckSegment(fs, sf)
	sum.Checked++
	sum.BytesVerified += res.BytesVerified
	for _, off := range res.BrokenGroups {
		c.broken[groupRef{sf.StatisticsPath, off}] = true
	}
	if res.Damaged() && !slices.Contains(sum.Damaged, sf.StatisticsPath) {
		sum.Damaged = append(sum.Damaged, sf.StatisticsPath)
		sum.Problems = append(sum.Problems, res.Problems...)
	}
	if res.Dir == nil || linkedFrom != "" {
		return // a linked file's own links are an error verify reports, never followed
	}
	for _, l := range res.Dir.Links {
		c.check(fs, index.LinkedFile(sf, l), sf.StatisticsPath, sum)
	}
}

// seed checks the one segment of an index that a compaction would leave as
// it is (index.CheckSegment) and reports whether it is damaged, its broken
// groups then in c.broken and c.force set, so the compaction rewrites it.
func (c *compaction) seed(fs icebergio.IO, sf table.StatisticsFile) bool {
	sum := &RepairSummary{}
	c.check(fs, sf, "", sum)
	c.force = len(sum.Damaged) > 0
	return c.force
}

// IsIndexEntry reports whether a statistics entry is one of icebloom's
// index files: table metadata lists an index item of it, or it bears the
// name icebloom gives its files (an entry whose items a careless tool
// removed is still one).
func IsIndexEntry(sf table.StatisticsFile) bool {
	return index.HoldsEntries(sf) || indexfile.IsName(path.Base(sf.StatisticsPath))
}

// reregister registers again, as their files say (indexfile.Entry), the
// index files whose table-metadata entries say otherwise, and removes the
// entries of icebloom files listed without items that cannot be read, in
// one commit, and returns the table as it left it. Another file that
// cannot be read is left to the checks that follow.
func reregister(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, tbl *table.Table, fs icebergio.IO, o CompactOptions, sum *RepairSummary) (*table.Table, error) {
	var fixed []table.StatisticsFile
	var dangling []table.StatisticsFile
	for sf := range tbl.Metadata().Statistics() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !IsIndexEntry(sf) {
			continue
		}
		want, ok, err := indexfile.Entry(fs, sf)
		if err != nil && indexfile.IsBroken(err) && !index.HoldsEntries(sf) {
			// An icebloom file listed without items that cannot be read:
			// nothing reads it, and gc cannot learn what it links. The
			// compaction removes such files listed with items.
			dangling = append(dangling, sf)
			sum.Problems = append(sum.Problems, err.Error())
			sum.Reregistered = append(sum.Reregistered, sf.StatisticsPath)
			continue
		}
		if err != nil || !ok {
			continue
		}
		if problems := indexfile.EntryProblems(sf, want); len(problems) > 0 {
			fixed = append(fixed, want)
			sum.Problems = append(sum.Problems, problems...)
			sum.Reregistered = append(sum.Reregistered, sf.StatisticsPath)
		}
	}
	if len(fixed) == 0 && len(dangling) == 0 {
		return tbl, nil
	}
	if o.Logger != nil {
		o.Logger.Warn("table metadata misdescribes index files: registered again as the files say",
			"table", strings.Join(ident, "."), "files", sum.Reregistered)
	}
	return catalog.CommitStatistics(ctx, cat, ident, func(_ context.Context, now *table.Table) (catalog.StatisticsChange, func(), error) {
		var change catalog.StatisticsChange
		// Only an entry still naming the same file is replaced or removed.
		still := func(want table.StatisticsFile) bool {
			sf, ok := catalog.StatisticsFileOf(now.Metadata(), want.SnapshotID)
			return ok && sf.StatisticsPath == want.StatisticsPath
		}
		for _, want := range fixed {
			if still(want) {
				change.Set = append(change.Set, want)
			}
		}
		for _, gone := range dangling {
			if still(gone) {
				change.Remove = append(change.Remove, gone.SnapshotID)
			}
		}
		return change, func() {}, nil
	}, commitOptions(o.Logger)...)
}
