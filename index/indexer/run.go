package indexer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/segment"
)

// A sharded run (docs/format.md §2.5) keeps its state in a directory of
// its own under the table's metadata location, <metadata>/icebloom-runs/<run>:
//
//	run.json              the run's record: its shard count and snapshot, written when it starts
//	shard-I-of-N.lease    touched by shard I while it works: the run's lease
//	shard-I-of-N.json     shard I's marker, written once its segment file is complete
//	linked.json           written once the run's one linking commit landed: the run is complete
//
// The shard segment files themselves are index files like any other, in
// the metadata directory, named by indexfile.Name; the markers name them.
// Nothing here is table metadata: the catalog sees one commit per run.

// RunsDir is the directory, under a table's metadata location, holding
// the directories of its sharded runs.
const RunsDir = "icebloom-runs"

// RunLease is how long a sharded run counts as live after one of its
// shards last touched its lease: sync and maintain leave the data files of
// a live run's snapshot to the run. Shards touch their lease every quarter
// of it while they work, linking included.
const RunLease = 10 * time.Minute

// RunCommitBudget bounds the retries of a run's linking commit by time: a
// busy catalog delays it, however many shards finish together, but cannot
// fail it by a count of attempts.
const RunCommitBudget = 10 * time.Minute

// leaseEvery is how often a working shard touches its lease.
var leaseEvery = RunLease / 4

// ErrRunComplete is the error of a shard of a run that is complete already:
// its linking commit landed, and a rerun would only index its files twice.
var ErrRunComplete = errors.New("the run is complete")

// ErrRunShards is the error of a shard whose shard count is not its run's:
// the count is fixed when the run starts.
var ErrRunShards = errors.New("a run's shard count is fixed when it starts")

// runIDRule is what a run id may be: it names a directory.
var runIDRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// checkRunID refuses a run id that cannot name a directory of its own.
func checkRunID(run string) error {
	if !runIDRule.MatchString(run) {
		return fmt.Errorf("run id %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", run)
	}
	return nil
}

// runRecord is run.json.
type runRecord struct {
	Run        string    `json:"run"`
	Shards     int       `json:"shards"`
	SnapshotID int64     `json:"snapshot-id"`
	Started    time.Time `json:"started"`
}

// shardMarker is shard-I-of-N.json: a shard's complete segment file.
type shardMarker struct {
	Shard      int          `json:"shard"`
	Shards     int          `json:"shards"`
	SnapshotID int64        `json:"snapshot-id"`
	Files      int          `json:"files"` // data files the segment holds filters of
	Segment    segment.Link `json:"segment"`
}

// linkedRecord is linked.json.
type linkedRecord struct {
	StatisticsPath string    `json:"statistics-path"`
	Linked         time.Time `json:"linked"`
	Shards         int       `json:"shards"`
}

// runState is what a run's directory holds.
type runState struct {
	dir    string
	record *runRecord
	// markers are the shard markers present, by shard count, then shard.
	markers map[int]map[int]string
	// touched is the latest lease touch or record write: the run is live
	// until touched + RunLease.
	touched time.Time
	linked  *linkedRecord
	leases  []string // the lease files' paths
}

// runName is a file name in a run directory: shard-I-of-N.json or .lease.
var runName = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.(json|lease)$`)

// markerName and leaseName name shard I of N's files.
func markerName(i, n int) string { return fmt.Sprintf("shard-%d-of-%d.json", i, n) }
func leaseName(i, n int) string  { return fmt.Sprintf("shard-%d-of-%d.lease", i, n) }

// runDirOf is the directory of run under the table's metadata location.
func runDirOf(tbl *table.Table, run string) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	return lp.NewMetadataLocation(RunsDir + "/" + run), nil
}

// runsRootOf is the directory holding every run directory of the table.
func runsRootOf(tbl *table.Table) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	return lp.NewMetadataLocation(RunsDir), nil
}

// walkRuns lists the run directories under root with one walk, which
// object stores answer by prefix listing: the states of all runs (only:
// of that run alone), without reading any file (records and linked.json
// are read by readRecords).
func walkRuns(fs icebergio.IO, root, only string) (map[string]*runState, error) {
	lister, ok := fs.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("the table's storage (%T) cannot list files, which sharded runs need", fs)
	}
	root = strings.TrimSuffix(root, "/")
	runs := map[string]*runState{}
	start := root
	if only != "" {
		start += "/" + only
	}
	err := lister.WalkDir(start, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return iofs.SkipAll // no run yet
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		slashed := strings.ReplaceAll(p, `\`, "/")
		rest, ok := strings.CutPrefix(slashed, strings.ReplaceAll(root, `\`, "/")+"/")
		if !ok {
			if i := strings.Index(slashed, "/"+RunsDir+"/"); i >= 0 { // a scheme spelled otherwise
				rest, ok = slashed[i+len(RunsDir)+2:], true
			}
		}
		run, base, found := strings.Cut(rest, "/")
		if !ok || !found || strings.Contains(base, "/") {
			return nil
		}
		st := runs[run]
		if st == nil {
			st = &runState{dir: root + "/" + run, markers: map[int]map[int]string{}}
			runs[run] = st
		}
		touch := func() {
			if info, err := d.Info(); err == nil && info.ModTime().After(st.touched) {
				st.touched = info.ModTime()
			}
		}
		switch base {
		case "run.json":
			st.record = &runRecord{} // read by readRecords
			touch()
		case "linked.json":
			st.linked = &linkedRecord{}
		default:
			m := runName.FindStringSubmatch(base)
			if m == nil {
				return nil
			}
			i, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			if m[3] == "lease" {
				touch()
				st.leases = append(st.leases, st.dir+"/"+base)
				return nil
			}
			if st.markers[n] == nil {
				st.markers[n] = map[int]string{}
			}
			st.markers[n][i] = st.dir + "/" + base
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the sharded runs in %s: %w", root, err)
	}
	return runs, nil
}

// readRun lists one run's directory and reads its record and linked.json.
func readRun(fs icebergio.IO, dir string) (*runState, error) {
	root, run, _ := cutLast(dir)
	runs, err := walkRuns(fs, root, run)
	if err != nil {
		return nil, err
	}
	st := runs[run]
	if st == nil {
		return &runState{dir: dir, markers: map[int]map[int]string{}}, nil
	}
	return st, st.readRecords(fs)
}

// cutLast splits a path at its last slash.
func cutLast(p string) (dir, base string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}

// readRecords reads run.json and linked.json, where walkRuns found them.
func (st *runState) readRecords(fs icebergio.IO) error {
	if st.record != nil {
		var rec runRecord
		if err := readJSON(fs, st.dir+"/run.json", &rec); err != nil {
			return err
		}
		st.record = &rec
	}
	if st.linked != nil {
		var rec linkedRecord
		if err := readJSON(fs, st.dir+"/linked.json", &rec); err != nil {
			return err
		}
		st.linked = &rec
	}
	return nil
}

// live reports whether the run may still link files: not complete, and a
// shard touched its lease within RunLease of now.
func (st *runState) live(now time.Time) bool {
	return st.linked == nil && st.record != nil && now.Before(st.touched.Add(RunLease))
}

// counts returns the shard counts of the markers present, ascending.
func (st *runState) counts() []int {
	var ns []int
	for n := range st.markers {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// checkCount refuses a shard count other than the run's: the record's, or
// that of markers already written.
func (st *runState) checkCount(run string, n int) error {
	if st.record != nil && st.record.Shards != 0 && st.record.Shards != n {
		return fmt.Errorf("run %s started with %d shards; this shard says %d (%w): give each run its own --run-id",
			run, st.record.Shards, n, ErrRunShards)
	}
	for _, other := range st.counts() {
		if other != n {
			return fmt.Errorf("run %s has shards of %d and of %d shards (%w): give each run its own --run-id",
				run, other, n, ErrRunShards)
		}
	}
	return nil
}

// readJSON decodes the JSON file at path into v. A file that does not
// decode is read again a few times: a storage without atomic replacement
// (writeJSON) may show a file being written.
func readJSON(fs icebergio.IO, path string, v any) error {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 20 * time.Millisecond)
		}
		var b []byte
		if b, err = readAll(fs, path); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		var syntax *json.SyntaxError
		if err = json.Unmarshal(b, v); err == nil || !errors.As(err, &syntax) && len(b) > 0 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// readAll reads the file at path.
func readAll(fs icebergio.IO, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// createJSON writes v as the JSON file at path unless one exists there
// already: on local storage atomically (a rename that does not replace),
// so two shards starting a run at once agree on its record; on an object
// store after checking, and of two writers at the same moment the last
// wins.
// It reports whether it wrote the file.
func createJSON(fs icebergio.WriteFileIO, path string, v any) (bool, error) {
	rn, ok := fs.(icebergio.LocalFS)
	if !ok { // an object store: a PUT is whole, and only a check first narrows the race
		if _, err := readAll(fs, path); err == nil {
			return false, nil
		}
		return true, writeJSON(fs, path, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	tmp := path + ".tmp-" + uuid.NewString()
	if err := fs.WriteFile(tmp, b); err != nil {
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	err = rn.RenameNoReplace(tmp, path)
	fs.Remove(tmp)
	switch {
	case errors.Is(err, iofs.ErrExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// writeJSON writes v as the JSON file at path, replacing it whole: on
// local storage through a temporary file renamed onto path, so a reader
// never sees part of it (an object store's PUT replaces an object whole).
func writeJSON(fs icebergio.WriteFileIO, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	rn, ok := fs.(icebergio.LocalFS) // object stores replace an object whole: a PUT
	if !ok {
		if err := fs.WriteFile(path, b); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	tmp := path + ".tmp-" + uuid.NewString()
	if err := fs.WriteFile(tmp, b); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := rn.Rename(tmp, path); err != nil {
		fs.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// lease touches a shard's lease file every leaseEvery until stopped, so
// that the run stays live while the shard works.
type lease struct {
	stop chan struct{}
	done sync.WaitGroup
}

// startLease touches the lease at path now and then periodically.
func startLease(fs icebergio.WriteFileIO, path string) (*lease, error) {
	touch := func() error { return fs.WriteFile(path, []byte(clock().UTC().Format(time.RFC3339Nano))) }
	if err := touch(); err != nil {
		return nil, fmt.Errorf("touch the run's lease %s: %w", path, err)
	}
	l := &lease{stop: make(chan struct{})}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		t := time.NewTicker(leaseEvery)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				touch() // a failed touch only shortens the lease
			}
		}
	}()
	return l, nil
}

// end stops touching the lease; the run stays live for RunLease after the
// last touch unless it completes.
func (l *lease) end() {
	if l == nil {
		return
	}
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.done.Wait()
}

// RunFiles tells gc (maintenance.GC) what the table's sharded runs hold:
// keep, the shard segment files the markers of runs touched after cutoff
// name — a live run's files, which its linking commit will link however old
// they are — and stale, the markers and leases of runs last touched before
// it, which nothing needs any more (a complete run's record and linked.json
// stay, so its id stays refused). Segment files of dead runs are not in
// keep: gc deletes them as any unreferenced index file.
func RunFiles(tbl *table.Table, fs icebergio.IO, cutoff time.Time) (keep map[string]bool, stale []string, err error) {
	root, err := runsRootOf(tbl)
	if err != nil {
		return nil, nil, err
	}
	runs, err := walkRuns(fs, root, "")
	if err != nil {
		return nil, nil, err
	}
	keep = map[string]bool{}
	for _, st := range runs {
		if !st.touched.After(cutoff) {
			stale = append(stale, st.leases...)
		}
		for _, n := range st.counts() {
			for _, path := range st.markers[n] {
				if !st.touched.After(cutoff) {
					stale = append(stale, path)
					continue
				}
				var m shardMarker
				if err := readJSON(fs, path, &m); err != nil {
					if errors.Is(err, iofs.ErrNotExist) {
						continue
					}
					return nil, nil, fmt.Errorf("sharded run %s: %w", st.dir, err)
				}
				keep[m.Segment.Path] = true
			}
		}
	}
	slices.Sort(stale)
	return keep, stale, nil
}

// RunStatus is how far a sharded run is, as `icebloom inspect` shows it.
type RunStatus struct {
	Run        string `json:"run"`
	Shards     int    `json:"shards"`
	SnapshotID int64  `json:"snapshot_id"`
	// ShardsCommitted counts the shards whose segment files are complete
	// (their markers written); MissingShards are the others.
	ShardsCommitted int   `json:"shards_committed"`
	MissingShards   []int `json:"missing_shards"`
	// Complete is set once the run's linking commit landed; Live while it
	// is not and a shard touched its lease within RunLease.
	Complete bool `json:"complete"`
	Live     bool `json:"live"`
	// FilesCovered counts the live data files the run's shard segments
	// hold filters of that the index covers (linked, or since merged).
	FilesCovered int `json:"files_covered_by_run"`
	// MissingShardFiles counts the live data files of the missing shards,
	// and CoveredOtherwise those of them the index covers all the same
	// (a sync after the lease expired, another run).
	MissingShardFiles int `json:"missing_shard_files"`
	CoveredOtherwise  int `json:"missing_shard_files_covered_otherwise"`
}

// Runs reports the table's sharded runs whose directories hold a record,
// measured against the live data files live and the index ix: a file
// counts as covered when ix has a filter of it for each of fields.
func Runs(tbl *table.Table, fs icebergio.IO, ix *index.TableIndex, live []segment.File, fields []int) ([]RunStatus, error) {
	root, err := runsRootOf(tbl)
	if err != nil {
		return nil, err
	}
	runs, err := walkRuns(fs, root, "")
	if err != nil {
		return nil, err
	}
	covered := func(f segment.File) bool {
		for _, id := range fields {
			if _, ok := ix.Lookup(f.Path, f.Size, id); !ok {
				return false
			}
		}
		return len(fields) > 0
	}
	isLive := map[segment.File]bool{}
	for _, f := range live {
		isLive[f] = true
	}
	now := clock()
	var out []RunStatus
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		st := runs[name]
		if st.record == nil {
			continue
		}
		if err := st.readRecords(fs); err != nil {
			return nil, err
		}
		rs := RunStatus{Run: st.record.Run, Shards: st.record.Shards, SnapshotID: st.record.SnapshotID,
			Complete: st.linked != nil, Live: st.live(now), MissingShards: []int{}}
		done := st.markers[rs.Shards]
		rs.ShardsCommitted = len(done)
		for i := range rs.Shards {
			path, ok := done[i]
			if !ok {
				rs.MissingShards = append(rs.MissingShards, i)
				continue
			}
			var m shardMarker
			if err := readJSON(fs, path, &m); err != nil {
				return nil, fmt.Errorf("sharded run %s: %w", name, err)
			}
			if m.Files == 0 {
				continue
			}
			seg, err := index.ReadSegment(fs, index.LinkedFile(table.StatisticsFile{SnapshotID: m.SnapshotID}, m.Segment))
			if err != nil {
				continue // deleted by gc, or corrupt: it covers nothing
			}
			for _, f := range seg.Dir.Files {
				if isLive[f] && covered(f) {
					rs.FilesCovered++
				}
			}
		}
		if len(rs.MissingShards) > 0 && rs.Shards > 0 {
			missing := map[int]bool{}
			for _, i := range rs.MissingShards {
				missing[i] = true
			}
			for _, f := range live {
				if missing[ShardOf(f.Path, rs.Shards)] {
					rs.MissingShardFiles++
					if covered(f) {
						rs.CoveredOtherwise++
					}
				}
			}
		}
		out = append(out, rs)
	}
	return out, nil
}
