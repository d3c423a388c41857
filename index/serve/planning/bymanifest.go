package planning

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"weak"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/index/lookup"
)

// A base plan of every data file of a table version (R = true, the fast
// path's point lookups) is made manifest by manifest. Manifests are
// immutable, each version a file of its own name, so the files a manifest
// lists are the same in every table version that keeps it: a commit that
// adds one manifest (an append, a new file and its index) makes the new
// version's base from the last base's rows of the manifests it kept and
// decodes only the new one, instead of decoding every manifest again. When
// it keeps them all, the new base extends the last one's columns in place
// (fileSet.extension) rather than copying them, and reserves only what
// decoding the new manifest takes. The index's matches of the kept files
// are carried over too (lookup.Memo.Carry), so only the new files are
// matched. The
// manifests are read by icebloom's own decoder (manifestdecode.go: the
// fields a scan task needs and the statistics of the set's columns;
// iceberg-go's projected decoding for what it does not read), several at
// once, a few blocks at a time in memory each, so making a base never
// holds the decoded entries of the whole table.
//
// A table version with delete manifests is planned by iceberg-go whole
// (planBase), which matches delete files to data files.

// byManifestBytesPerFile is what making a base manifest by manifest holds
// per file of the table while it works, with room to spare: the decoded
// manifests' sets and the new set made of them, which shares their
// locations and copies the rest (together under 200 bytes a file of one
// column; a set alone holds 60, TestBaseSizeMeasured), with room for
// their slices' growth. Decoded entries are streamed, a few blocks of
// them at a time.
const byManifestBytesPerFile = 512

// byManifestWorkBytes is what making the base of snap manifest by manifest
// reserves; a snapshot that does not count its files reserves the whole
// budget.
func byManifestWorkBytes(snap *table.Snapshot) int64 {
	files, ok := summaryFiles(snap)
	if !ok {
		return 1 << 62 // clamped to the budget by reserve
	}
	return int64(files) * byManifestBytesPerFile
}

// manifestRows are the files of one manifest in a base's set: rows [start,
// end).
type manifestRows struct {
	path       string
	start, end int
}

// lastBases keeps, per table and storage access, the last base made
// manifest by manifest, weakly: the next version's base reuses its rows
// while the cache still holds it, and holding it here keeps nothing alive.
type lastBases struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[base]
}

func (l *lastBases) get(key string) *base {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key].Value()
}

func (l *lastBases) put(key string, b *base) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]weak.Pointer[base]{}
	}
	for k, w := range l.m { // drop those collected
		if w.Value() == nil {
			delete(l.m, k)
		}
	}
	l.m[key] = weak.Make(b)
}

// lastKey names a table's last base: its identity, the storage access and
// case sensitivity (R is true).
func lastKey(tbl *table.Table, access string, caseSensitive bool) string {
	return fmt.Sprintf("%s\x00%s\x00%t", access, tbl.Metadata().TableUUID(), caseSensitive)
}

// planByManifest makes the base of every data file of snap manifest by
// manifest, within the work budget, reusing the rows of the last base's
// manifests (extending its set when it keeps them all); ok is false
// when snap has delete manifests (planBase plans those), and true with any
// error, which planBase returns as it is.
func (p *Planner) planByManifest(ctx context.Context, tbl *table.Table, access string, snap *table.Snapshot, caseSensitive bool, schema *iceberg.Schema, fields []int) (b *base, ok bool, err error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, true, fmt.Errorf("table file system: %w", err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil { // reported, not read again by iceberg-go's planning
		return nil, true, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			return nil, false, nil
		}
	}
	key := lastKey(tbl, access, caseSensitive)
	last := p.lastBases.get(key)
	if last != nil && !last.set.has(fields) {
		last = nil
	}
	kept := map[string]manifestRows{}
	if last != nil {
		for _, r := range last.manifests {
			kept[r.path] = r
		}
	}
	// The kept manifests' rows come first, in the last base's order, then
	// the new ones': a commit that keeps every manifest of the last base
	// (an append) extends its set, and the index's matches of its files
	// stay where they were.
	b = &base{manifests: make([]manifestRows, 0, len(manifests))}
	var moves []lookup.RowMove
	keptFiles := 0
	if last != nil {
		listed := map[string]bool{}
		for _, m := range manifests {
			listed[m.FilePath()] = true
		}
		for _, r := range last.manifests {
			if !listed[r.path] {
				continue
			}
			b.manifests = append(b.manifests, manifestRows{r.path, keptFiles, keptFiles + r.end - r.start})
			if k := len(moves) - 1; k >= 0 && moves[k].From+moves[k].N == r.start && moves[k].To+moves[k].N == keptFiles {
				moves[k].N += r.end - r.start
			} else {
				moves = append(moves, lookup.RowMove{From: r.start, To: keptFiles, N: r.end - r.start})
			}
			keptFiles += r.end - r.start
		}
	}
	// A set that keeps every file of the last one, where it was, extends
	// it in place (fileSet.extension); else the kept rows are copied.
	var sb *setBuilder
	if len(moves) == 1 && moves[0] == (lookup.RowMove{N: last.set.len()}) {
		sb = last.set.extension(schema, fields)
	}
	// What it works in: the new manifests decoded, and the kept rows when
	// they are copied, as the manifest list counts them (a snapshot's
	// summary when it does not).
	newFiles, counted := 0, true
	for _, m := range manifests {
		if _, ok := kept[m.FilePath()]; !ok {
			n := int(m.AddedDataFiles()) + int(m.ExistingDataFiles())
			counted = counted && n+int(m.DeletedDataFiles()) > 0 // counts are optional in format 1
			newFiles += max(n, 0)
		}
	}
	work := int64(newFiles) * byManifestBytesPerFile
	if !counted {
		work = byManifestWorkBytes(snap)
		if n, ok := summaryFiles(snap); ok {
			newFiles = max(n-keptFiles, 0)
		}
	}
	if sb == nil {
		work += int64(keptFiles) * byManifestBytesPerFile
	}
	release, err := p.work.reserve(ctx, work)
	if err != nil {
		if sb != nil {
			last.set.unclaim()
		}
		return nil, true, err
	}
	defer release()
	if sb != nil {
		sb.room(newFiles)
	} else {
		sb = newSetBuilder(schema, fields, keptFiles+newFiles)
		for _, mv := range moves {
			sb.addRows(last.set, mv.From, mv.From+mv.N)
		}
	}
	// The manifests not kept are decoded, several at once, each added to
	// the set once decoded: holding them all until the last was decoded
	// took the server's first plan of 1,000,000 files 86 MB past the
	// base it made.
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(2, runtime.GOMAXPROCS(0)))
	for _, m := range manifests {
		if _, ok := kept[m.FilePath()]; ok {
			continue
		}
		g.Go(func() error {
			set, err := manifestSet(gctx, fsys, m, schema, fields)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			start := sb.s.len()
			sb.addRows(set, 0, set.len())
			b.manifests = append(b.manifests, manifestRows{m.FilePath(), start, sb.s.len()})
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if sb.extending {
			last.set.unclaim() // what it appended lies past the last set's files
		}
		return nil, true, err
	}
	b.set = sb.finish()
	if last != nil { // the index's matches of the kept files are kept too
		b.memo.Carry(&last.memo, &last.set.files, &b.set.files, moves)
		// Charged what the last one's held once a lookup measured it, not
		// the estimate of a memo matched anew: a base of 1,000,000 files
		// with the estimate did not fit the bases' part of the budget.
		b.memoCharged.Store(last.memoCharged.Load())
	}
	p.lastBases.put(key, b)
	return b, true, nil
}

// manifestSetIceberg decodes the live data files of one data manifest
// into a set, with iceberg-go's projected decoding (no column sizes):
// manifestSet's way for the manifests its own decoder does not read.
func manifestSetIceberg(ctx context.Context, fsys icebergio.IO, m iceberg.ManifestFile, schema *iceberg.Schema, fields []int) (*fileSet, error) {
	sb := newSetBuilder(schema, fields, max(0, int(m.AddedDataFiles())+int(m.ExistingDataFiles())))
	for entry, err := range iceberg.EntriesWithProjection(fsys, m, true, iceberg.ManifestEntryProjection{IncludePruningStats: true}) {
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sb.add(&table.FileScanTask{File: entry.DataFile()})
	}
	return sb.finish(), nil
}
