package indexer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/index/segment"
)

// Shard makes a build, sync or rebuild one of Count runs that index a
// snapshot together, on as many machines: it reads only the data files
// ShardOf assigns to Index, writes them into a segment file of its own and
// commits a link to it (docs/format.md §2.5), so shards never copy each
// other's filters and commit in any order. The shard that finds every
// shard of its run committed compacts the index as a sync would, past
// Options.CompactAbove segments.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Run names the run, the same for all its shards: it is recorded with
	// each shard's segment, so the index tells which shards of a run are
	// committed.
	Run string `json:"run"`
}

// ShardOf returns the shard of count that indexes the data file at
// location: xxHash64 (seed 0) of the location's bytes exactly as the
// manifest lists them, modulo count. It never changes, so shards agree
// without talking to each other, and a rerun reads the same files.
func ShardOf(location string, count int) int {
	return int(hashing.Bytes([]byte(location)) % uint64(count))
}

// ParseShard parses "I/N", the form of the --shard flag.
func ParseShard(s string) (index, count int, err error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("shard %q is not I/N (for example 0/4)", s)
	}
	return index, count, (&Shard{Index: index, Count: count}).check()
}

// check refuses a shard outside its count.
func (s *Shard) check() error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("shard count %d: it must be at least 1", s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard %d of %d: the index must be in [0, %d)", s.Index, s.Count, s.Count)
	}
	return nil
}

// DefaultRun names a sharded run that was given no name: after the
// snapshot its shards index and their count, so shards started on one
// snapshot agree, and a rerun of a failed shard joins its run.
func DefaultRun(snapshotID int64, count int) string {
	return fmt.Sprintf("snapshot-%d-of-%d", snapshotID, count)
}

// shardFilter returns whether the job's shard indexes the data file at a
// path; nil for a job that is not a shard, which indexes every file.
func (j *job) shardFilter() func(path string) bool {
	sh := j.o.Shard
	if sh == nil {
		return nil
	}
	return func(path string) bool { return ShardOf(path, sh.Count) == sh.Index }
}

// linkTo returns the link to a segment file.
func linkTo(path string, size, footerSize int64, dir *segment.Result, run *Shard) segment.Link {
	l := segment.Link{Path: path, Size: size, FooterSize: footerSize,
		DirectoryOffset: dir.DirectoryOffset, DirectoryLength: dir.DirectoryLength}
	for _, f := range dir.Fields {
		l.Fields = append(l.Fields, int(f))
	}
	if run != nil {
		l.Run, l.Shard, l.Shards = run.Run, run.Index, run.Count
	}
	return l
}

// linkable returns the link to a carried segment a shard links rather than
// copies: a v2 segment without links of its own, whose directory's place
// table metadata records. ok is false for any other segment, whose filters
// are copied.
func linkable(seg index.Segment) (segment.Link, bool) {
	off, length, ok := segment.DirectoryPlace(seg.File)
	if !ok || seg.Dir == nil || len(seg.Dir.Links) > 0 || len(seg.Entries) > 0 || len(seg.Dir.Groups) == 0 {
		return segment.Link{}, false
	}
	fields := map[int]bool{}
	for _, g := range seg.Dir.Groups {
		fields[g.FieldID] = true
	}
	return segment.Link{Path: seg.File.StatisticsPath, Size: seg.File.FileSizeInBytes, FooterSize: seg.File.FileFooterSizeInBytes,
		DirectoryOffset: off, DirectoryLength: length, Fields: slices.Sorted(maps.Keys(fields))}, true
}

// ShardsCommitted counts, by run, the distinct shards whose segments the
// index links, and the shard count each run declared.
func ShardsCommitted(ix *index.TableIndex) map[string]indexfile.RunShards {
	var links []segment.Link
	for _, seg := range ix.Segments() {
		if seg.Link != nil {
			links = append(links, *seg.Link)
		}
	}
	return indexfile.ShardRuns(links)
}

// ShardSummary reports a shard's run: the shard, and how many of its run's
// shards the index held after its commit.
type ShardSummary struct {
	Shard
	Committed int `json:"committed"`
	// Merged is set when this shard found its run complete and merged the
	// run's segments (Summary.Compacted tells how).
	Merged bool `json:"merged"`
}

// ensureLinked checks, after a shard's commit, that its segment file
// still exists: the file committed links it, and gc, forced to a grace
// shorter than MaxUncommittedAge allows, may have deleted it before.
func (j *job) ensureLinked(own indexfile.File) error {
	f, err := j.fs.Open(own.Path)
	if err == nil {
		_, err = f.Stat()
		f.Close()
	}
	if errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("index file %s of %s vanished after the commit that linked it, deleted by gc with a grace period shorter than %s (forced) or by hand; the next sync repairs the index",
			own.Path, strings.Join(j.ident, "."), 2*MaxUncommittedAge)
	}
	return nil
}

// mergeRun compacts the index once sum's shard found every shard of its
// run committed, as a sync compacts: when the index has more segments than
// o.CompactAbove (0: DefaultCompactAbove, negative: never), linked ones
// included. After a rebuild's last shard it always compacts, keeping only
// the run's entries, so the index is the rebuilt one.
func mergeRun(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o Options, sum *Summary, rebuild bool) error {
	sh := sum.Shard
	if sh == nil || sh.Committed < sh.Count {
		return nil
	}
	limit := cmp.Or(o.CompactAbove, DefaultCompactAbove)
	if !rebuild && (limit < 0 || sum.Segments <= limit) {
		return nil
	}
	co := o.compactOptions()
	if rebuild {
		co.OnlyRun = sh.Run
	}
	cs, err := Compact(ctx, cat, ident, co)
	if err != nil {
		return fmt.Errorf("merge the %d shards of run %s: %w", sh.Count, sh.Run, err)
	}
	sum.Compacted, sum.Segments, sh.Merged = cs, cs.SegmentsAfter, true
	if cs.StatisticsPath != "" {
		sum.StatisticsPath = cs.StatisticsPath
	}
	return nil
}

// shardCommitOptions gives a shard's commit more attempts than a run's:
// the shards of a run may finish together, and each commit waits for the
// others' (a commit takes a few catalog round trips, the backoff is capped
// at seconds), so a commit is tried at least twice per shard of the run —
// rather than fail a shard that did all its reading for a busy catalog.
func (j *job) shardCommitOptions() []catalog.CommitOption {
	if j.o.Shard == nil {
		return nil
	}
	return []catalog.CommitOption{catalog.WithAttempts(max(catalog.DefaultCommitAttempts, 2*j.o.Shard.Count))}
}

// carry links l into sw; a shard also remembers it for its later attempts
// (job.carried).
func (j *job) carry(sw *indexfile.Writer, l segment.Link) {
	sw.Link(l)
	if j.o.Shard != nil && !slices.ContainsFunc(j.carried, func(c segment.Link) bool { return c.Path == l.Path }) {
		j.carried = append(j.carried, l)
	}
}

// lostLinks returns the links earlier attempts of the shard carried that
// base, the snapshot's statistics file now, neither links nor holds the
// filters of. A link base lacks was either lost — a commit replaced the
// file holding it unseen, and this shard merges it back — or merged away
// by a compaction whose segment base now is, holding its filters: linking
// it again would only duplicate them. So a lost link is one some of whose
// filters base's own filters do not hold.
func (j *job) lostLinks(base *table.StatisticsFile) ([]segment.Link, error) {
	if len(j.carried) == 0 {
		return nil, nil
	}
	held, linked, err := j.heldBy(base)
	if err != nil {
		return nil, err
	}
	var lost []segment.Link
	for _, l := range j.carried {
		if linked[l.Path] {
			continue
		}
		seg, err := index.ReadSegment(j.fs, index.LinkedFile(table.StatisticsFile{}, l))
		if err != nil {
			return nil, &indexfile.UnreadableError{Path: l.Path, Err: err}
		}
		if len(seg.Dir.Files) == 0 {
			lost = append(lost, l) // an empty shard's: only its run's count says it ran
			continue
		}
		for f := range seg.Filters() {
			if !held[filterKey{f.DataFile, f.DataFileSize, f.FieldID}] {
				lost = append(lost, l)
				break
			}
		}
	}
	return lost, nil
}

// heldBy returns what base, the snapshot's statistics file as an attempt
// carries it (nil: none), holds: its own filters, by what they apply to,
// and the paths of the segment files it links.
func (j *job) heldBy(base *table.StatisticsFile) (held map[filterKey]bool, linked map[string]bool, err error) {
	held, linked = map[filterKey]bool{}, map[string]bool{}
	if base == nil || !index.HoldsEntries(*base) {
		return held, linked, nil
	}
	seg, err := index.ReadSegment(j.fs, *base)
	if err != nil {
		return nil, nil, &indexfile.UnreadableError{Path: base.StatisticsPath, Err: err}
	}
	for f := range seg.Filters() {
		held[filterKey{f.DataFile, f.DataFileSize, f.FieldID}] = true
	}
	for _, l := range seg.Links() {
		linked[l.Path] = true
	}
	return held, linked, nil
}

// filterKey is what makes a filter apply to a data file (docs/format.md §6).
type filterKey struct {
	path  string
	size  int64
	field int
}
