package maintenance

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/indexfile"
)

// DefaultGCGrace is how long an unreferenced index file is kept by default:
// long enough for a build in flight elsewhere to commit the file it wrote,
// and for readers that loaded older table metadata to finish with it.
const DefaultGCGrace = 72 * time.Hour

// NoGrace as GCOptions.OlderThan deletes every unreferenced index file,
// however recent; it needs GCOptions.Force (see MinGCGrace).
const NoGrace time.Duration = -1

// MinGCGrace is the shortest grace period GC takes unless forced: twice
// indexer.MaxUncommittedAge, the longest a run may hold a file it wrote
// before committing it. A file a run is about to commit is therefore never
// deleted by GC — by construction, not by timing luck — even with the
// run's clock and the storage's half that apart. A forced GC may delete it;
// the run then finds its committed file gone, removes the reference and
// fails, and the next sync indexes the files again.
const MinGCGrace = 2 * indexer.MaxUncommittedAge

// GCOptions configure GC.
type GCOptions struct {
	// OlderThan is the grace period: an unreferenced index file is deleted
	// only when it was written, and last referenced by table metadata,
	// longer ago than this. 0 means DefaultGCGrace; a negative value (NoGrace)
	// means no grace period. Less than MinGCGrace needs Force.
	OlderThan time.Duration
	// Force allows a grace period shorter than MinGCGrace, which may
	// delete a file a run in flight is about to commit.
	Force bool
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Now is the clock, for tests; nil means time.Now.
	Now func() time.Time
}

// GCFailure is an index file GC could not delete.
type GCFailure struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// GCSummary reports a GC run. Paths are locations as table metadata names
// them (the table's metadata location joined with the file name).
type GCSummary struct {
	// Scanned is the number of icebloom index files found in the table's
	// metadata directory; other files are never considered.
	Scanned int `json:"scanned"`
	// Referenced is how many of them the table's current metadata
	// references, checked again right before deleting.
	Referenced int `json:"referenced"`
	// Deleted are the unreferenced files deleted (with DryRun: that would
	// be deleted).
	Deleted []string `json:"deleted"`
	// Kept are unreferenced files inside the grace period: written, or
	// referenced by table metadata that was current, within it.
	Kept []string `json:"kept"`
	// Failed are the files whose deletion failed; GC returns an error too.
	Failed []GCFailure `json:"failed"`
	// RunFilesDeleted are the markers and leases of sharded runs last
	// touched before the grace period (index/indexer.RunFiles).
	RunFilesDeleted []string `json:"run_files_deleted,omitempty"`
	// BytesDeleted is the size of Deleted.
	BytesDeleted int64 `json:"bytes_deleted"`
	DryRun       bool  `json:"dry_run"`
}

// IsIndexFileName reports whether a file's base name is that of an index
// file icebloom writes (icebloom-<snapshot-id>-<uuid>.puffin, the rule
// index/indexfile names them by), the only files GC ever deletes.
func IsIndexFileName(name string) bool { return indexfile.IsName(name) }

// GC deletes the index files in the table's metadata directory that no
// table metadata references any more: statistics files replaced or removed
// by later commits, and files of builds whose commit was refused or
// abandoned. A file is deleted only once it is older than the grace period
// and no metadata current within the grace period references it, so that a
// build still in flight elsewhere can commit its file and readers of older
// metadata can read theirs. The table is reloaded right before deleting and
// the references checked again.
//
// Only files named as icebloom names its index files are considered; other
// tools' files are never touched. A file that cannot be deleted is reported
// in the summary, the others are still deleted, and GC returns the summary
// with an error naming each such file.
func GC(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o GCOptions) (*GCSummary, error) {
	return gc(ctx, cat, ident, o, nil)
}

// indexFile is an index file found in the metadata directory.
type indexFile struct {
	location string // as table metadata would name it
	size     int64
	modTime  time.Time
}

// gc is GC with a hook run between listing and the re-check before
// deleting, where tests commit concurrently.
func gc(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, o GCOptions,
	afterList func(context.Context) error) (*GCSummary, error) {
	name := strings.Join(ident, ".")
	grace := o.OlderThan
	switch {
	case grace == 0:
		grace = DefaultGCGrace
	case grace < 0:
		grace = 0
	}
	if grace < MinGCGrace && !o.Force {
		return nil, fmt.Errorf("gc of %s: a grace period of %s is shorter than %s, the time a run may take to commit a file it wrote: it could delete such a file; force it to delete anyway",
			name, grace, MinGCGrace)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	cutoff := now().Add(-grace)

	tbl, err := catalog.LoadTable(ctx, cat, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	dir, err := metadataDir(tbl)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("table %s storage: %w", name, err)
	}
	files, err := listIndexFiles(fs, dir)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}

	sum := &GCSummary{Scanned: len(files), Deleted: []string{}, Kept: []string{}, Failed: []GCFailure{}, DryRun: o.DryRun}
	cache := map[string][]string{}
	refs, err := newReferences(tbl, fs, cutoff, cache)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	// The shard segments of sharded runs touched within the grace period
	// are kept however old: their run's linking commit will link them.
	keep, stale, err := indexer.RunFiles(tbl, fs, cutoff)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	var unlinked []indexFile
	for _, f := range files {
		if loc := normalizeLocation(f.location); !refs.current[loc] && (keep[loc] || keep[f.location]) {
			sum.Kept = append(sum.Kept, f.location)
			continue
		}
		unlinked = append(unlinked, f)
	}
	files = unlinked
	for _, path := range stale { // markers and leases of runs dead for the grace period
		if !o.DryRun {
			if err := fs.Remove(path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				sum.Failed = append(sum.Failed, GCFailure{Path: path, Error: err.Error()})
				continue
			}
		}
		sum.RunFilesDeleted = append(sum.RunFilesDeleted, path)
	}
	candidates, err := classify(ctx, files, refs, cutoff, sum)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	if len(candidates) == 0 {
		slices.Sort(sum.Kept)
		return sum, nil
	}

	if afterList != nil {
		if err := afterList(ctx); err != nil {
			return nil, err
		}
	}
	// A commit may have landed since the table was loaded: check again
	// against the table as it is now, right before deleting.
	tbl, err = catalog.LoadTable(ctx, cat, ident)
	if err != nil {
		return nil, fmt.Errorf("reload table %s: %w", name, err)
	}
	if refs, err = newReferences(tbl, fs, cutoff, cache); err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	candidates, err = classify(ctx, candidates, refs, cutoff, sum)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	var errs []error
	for _, f := range candidates {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("gc of table %s stopped: %w", name, err))
			break
		}
		if !o.DryRun {
			if err := fs.Remove(f.location); err != nil {
				if errors.Is(err, iofs.ErrNotExist) {
					continue // deleted meanwhile by someone else
				}
				sum.Failed = append(sum.Failed, GCFailure{Path: f.location, Error: err.Error()})
				errs = append(errs, fmt.Errorf("table %s: delete %s: %w", name, f.location, err))
				continue
			}
		}
		sum.Deleted = append(sum.Deleted, f.location)
		sum.BytesDeleted += f.size
	}
	slices.Sort(sum.Deleted)
	slices.Sort(sum.Kept)
	return sum, errors.Join(errs...)
}

// classify sorts files into referenced (counted), kept (listed) and the
// candidates for deletion it returns.
func classify(ctx context.Context, files []indexFile, refs *references, cutoff time.Time, sum *GCSummary) ([]indexFile, error) {
	var candidates []indexFile
	for _, f := range files {
		if refs.current[normalizeLocation(f.location)] {
			sum.Referenced++
			continue
		}
		if !f.modTime.Before(cutoff) {
			sum.Kept = append(sum.Kept, f.location)
			continue
		}
		recent, err := refs.recentlyReferenced(ctx, f.location)
		if err != nil {
			return nil, err
		}
		if recent {
			sum.Kept = append(sum.Kept, f.location)
			continue
		}
		candidates = append(candidates, f)
	}
	return candidates, nil
}

// metadataProbe is a file name whose metadata location gives the directory
// index/indexer writes index files in.
const metadataProbe = "icebloom-gc-probe"

// metadataDir returns the directory of the table's metadata location, where
// index/indexer writes its files, as the location provider spells it.
func metadataDir(tbl *table.Table) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	loc := lp.NewMetadataLocation(metadataProbe)
	dir, ok := strings.CutSuffix(loc, "/"+metadataProbe)
	if !ok || dir == "" {
		return "", fmt.Errorf("cannot tell the metadata directory from metadata location %s", loc)
	}
	return dir, nil
}

// listIndexFiles lists the index files directly in dir with their sizes and
// modification times, walking it the way iceberg-go's orphan file cleanup
// does (io.ListableIO, DirEntry.Info) but not descending into
// subdirectories. A missing directory holds no files.
func listIndexFiles(fs icebergio.IO, dir string) ([]indexFile, error) {
	lister, ok := fs.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("its storage at %s cannot list files, so index files no metadata references cannot be found", dir)
	}
	root := normalizeLocation(dir)
	var files []indexFile
	first := true
	err := lister.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		isRoot := first || normalizeLocation(p) == root
		first = false
		if err != nil {
			if isRoot && errors.Is(err, iofs.ErrNotExist) {
				return iofs.SkipAll
			}
			return err
		}
		if d.IsDir() {
			if isRoot {
				return nil
			}
			return iofs.SkipDir
		}
		slashed := strings.ReplaceAll(p, `\`, "/")
		i := strings.LastIndexByte(slashed, '/')
		if i < 0 || normalizeLocation(slashed[:i]) != root {
			return nil // not directly in dir
		}
		base := slashed[i+1:]
		if !IsIndexFileName(base) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil // deleted while listing
			}
			return fmt.Errorf("stat %s: %w", p, err)
		}
		files = append(files, indexFile{location: dir + "/" + base, size: info.Size(), modTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return files, nil
}

// references are the statistics files table metadata references: those of
// the current metadata, and, read on demand, those of previous metadata
// files (the metadata log) that were current after the cutoff, which
// readers may still be using.
type references struct {
	tbl     *table.Table
	fs      icebergio.IO
	cutoff  time.Time
	current map[string]bool
	recent  map[string]bool     // nil until needed
	cache   map[string][]string // metadata file → what it references; files never change
}

func newReferences(tbl *table.Table, fs icebergio.IO, cutoff time.Time, cache map[string][]string) (*references, error) {
	r := &references{tbl: tbl, fs: fs, cutoff: cutoff, current: map[string]bool{}, cache: cache}
	locs, err := statisticsOf(fs, tbl.Metadata())
	if err != nil {
		return nil, err
	}
	for _, loc := range locs {
		r.current[loc] = true
	}
	return r, nil
}

// statisticsOf returns the normalized locations of the statistics and
// partition statistics files meta references, and of the segment files
// those statistics files link (docs/format.md §2.5), read from the
// directory of every statistics file holding an icebloom index — by its
// items, or by its name when a careless tool removed them: the directory
// is authoritative, table metadata only informative (a table whose
// metadata lost the `links` property, or every item, still links its
// shards). A
// directory that cannot be read is an error naming the file, so that gc
// deletes nothing: what it links is unknown (`icebloom sync` replaces a
// broken segment).
func statisticsOf(fs icebergio.IO, meta table.Metadata) ([]string, error) {
	var locs []string
	for sf := range meta.Statistics() {
		locs = append(locs, normalizeLocation(sf.StatisticsPath))
		if !indexer.IsIndexEntry(sf) {
			continue // another tool's file: it links nothing of ours
		}
		seg, err := index.ReadSegment(fs, sf)
		if err != nil {
			return nil, fmt.Errorf("read the directory of index file %s, to learn which segment files it links (nothing deleted; `icebloom sync` replaces a broken index file): %w",
				sf.StatisticsPath, err)
		}
		for _, l := range seg.Links() {
			locs = append(locs, normalizeLocation(l.Path))
		}
	}
	for pf := range meta.PartitionStatistics() {
		locs = append(locs, normalizeLocation(pf.StatisticsPath))
	}
	return locs, nil
}

// recentlyReferenced reports whether metadata that was current after the
// cutoff, other than the current metadata, references location. A previous
// metadata file that cannot be read is an error: what it references is
// unknown, so nothing may be deleted.
func (r *references) recentlyReferenced(ctx context.Context, location string) (bool, error) {
	if r.recent == nil {
		r.recent = map[string]bool{}
		meta := r.tbl.Metadata()
		log := slices.Collect(meta.PreviousFiles())
		cutoff := r.cutoff.UnixMilli()
		for i, entry := range log {
			// An entry was current until the next one was written.
			until := meta.LastUpdatedMillis()
			if i+1 < len(log) {
				until = log[i+1].TimestampMs
			}
			if until < cutoff {
				continue
			}
			locs, ok := r.cache[entry.MetadataFile]
			if !ok {
				old, err := table.NewFromLocation(ctx, r.tbl.Identifier(), entry.MetadataFile, r.tbl.FS, nil)
				if err != nil {
					r.recent = nil
					return false, fmt.Errorf("read previous metadata file %s, current within the grace period: %w", entry.MetadataFile, err)
				}
				if locs, err = statisticsOf(r.fs, old.Metadata()); err != nil {
					r.recent = nil
					return false, fmt.Errorf("previous metadata file %s, current within the grace period: %w", entry.MetadataFile, err)
				}
				r.cache[entry.MetadataFile] = locs
			}
			for _, loc := range locs {
				r.recent[loc] = true
			}
		}
	}
	return r.recent[normalizeLocation(location)], nil
}

// normalizeLocation spells a location the way iceberg-go's orphan file
// cleanup compares them: a local file:// URI as its path (so file:///x and
// /x are the same file), other URIs as they are but for the scheme's case
// (object keys are opaque), and plain paths with slashes and cleaned.
func normalizeLocation(loc string) string {
	if len(loc) >= 5 && strings.EqualFold(loc[:5], "file:") {
		if u, err := url.Parse(loc); err == nil {
			local := u.Path
			if u.Opaque != "" {
				if local, err = url.PathUnescape(u.Opaque); err != nil {
					return loc
				}
			}
			if host := strings.ToLower(u.Host); host != "" && host != "localhost" {
				return "file://" + u.Host + path.Clean("/"+local)
			}
			return cleanPath(local)
		}
	}
	if i := strings.Index(loc, "://"); i > 0 {
		return strings.ToLower(loc[:i]) + loc[i:]
	}
	return cleanPath(loc)
}

func cleanPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	// file:///C:/x names the Windows path C:/x.
	if len(p) >= 4 && p[0] == '/' && p[2] == ':' && p[3] == '/' {
		p = p[1:]
	}
	return path.Clean(p)
}
