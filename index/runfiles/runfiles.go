// Package runfiles reads and writes the record files of a sharded run
// (docs/format.md §2.5), kept in a directory of its own under the table's
// metadata location, <metadata>/icebloom-runs/<run>:
//
//	run.json              the run's record: its shard count and snapshot, written when it starts
//	shard-I-of-N.lease    touched by shard I while it works: the run's lease
//	shard-I-of-N.json     shard I's marker, written once its segment file is complete
//	linked.json           written once the run's one linking commit landed: the run is complete
//
// It names these files, lists a table's run directories (Walk, Read),
// reads and writes the JSON files so that a reader never sees part of one
// (ReadJSON, CreateJSON, WriteJSON), keeps a shard's lease touched (Lease),
// and tells gc which files of the runs are needed (Files).
//
// The package holds the file format only. It does not run shards, write
// or link their segment files, or commit anything: index/indexer does that
// with these files. The shard segment files themselves are index files
// like any other, in the metadata directory, named by indexfile.Name; the
// markers name them. Nothing here is table metadata.
package runfiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/icebloom/icebloom/index/segment"
)

// Dir is the directory, under a table's metadata location, holding the
// directories of its sharded runs.
const Dir = "icebloom-runs"

// RecordName and LinkedName are the base names of a run's record and of
// the file that says its linking commit landed.
const (
	RecordName = "run.json"
	LinkedName = "linked.json"
)

// LeaseTerm is how long a sharded run counts as live after one of its
// shards last touched its lease (State.Live). Shards touch their lease
// every quarter of it while they work.
const LeaseTerm = 10 * time.Minute

// touchEvery is how often a working shard touches its lease.
var touchEvery = LeaseTerm / 4

// ErrShards is the error of a shard whose shard count is not its run's:
// the count is fixed when the run starts.
var ErrShards = errors.New("a run's shard count is fixed when it starts")

// idRule is what a run id may be: it names a directory.
var idRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckID refuses a run id that cannot name a directory of its own.
func CheckID(run string) error {
	if !idRule.MatchString(run) {
		return fmt.Errorf("run id %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", run)
	}
	return nil
}

// Record is run.json.
type Record struct {
	Run        string    `json:"run"`
	Shards     int       `json:"shards"`
	SnapshotID int64     `json:"snapshot-id"`
	Started    time.Time `json:"started"`
}

// Marker is shard-I-of-N.json: a shard's complete segment file.
type Marker struct {
	Shard      int          `json:"shard"`
	Shards     int          `json:"shards"`
	SnapshotID int64        `json:"snapshot-id"`
	Files      int          `json:"files"` // data files the segment holds filters of
	Segment    segment.Link `json:"segment"`
}

// Linked is linked.json.
type Linked struct {
	StatisticsPath string    `json:"statistics-path"`
	Linked         time.Time `json:"linked"`
	Shards         int       `json:"shards"`
}

// State is what a run's directory holds, as listed. Record and Linked are
// non-nil when their files exist, and hold their contents only after
// ReadRecords.
type State struct {
	Dir    string
	Record *Record
	// Markers are the paths of the shard markers present, by shard count,
	// then shard.
	Markers map[int]map[int]string
	// Touched is the latest lease touch or record write: the run is live
	// until Touched + LeaseTerm.
	Touched time.Time
	Linked  *Linked
	Leases  []string // the lease files' paths
}

// shardName is a file name in a run directory: shard-I-of-N.json or .lease.
var shardName = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.(json|lease)$`)

// MarkerName names shard I of N's marker file.
func MarkerName(i, n int) string { return fmt.Sprintf("shard-%d-of-%d.json", i, n) }

// LeaseName names shard I of N's lease file.
func LeaseName(i, n int) string { return fmt.Sprintf("shard-%d-of-%d.lease", i, n) }

// DirOf is the directory of run under the table's metadata location.
func DirOf(tbl *table.Table, run string) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	return lp.NewMetadataLocation(Dir + "/" + run), nil
}

// RootOf is the directory holding every run directory of the table.
func RootOf(tbl *table.Table) (string, error) {
	lp, err := tbl.LocationProvider()
	if err != nil {
		return "", err
	}
	return lp.NewMetadataLocation(Dir), nil
}

// Walk lists the run directories under root with one walk, which object
// stores answer by prefix listing: the states of all runs (only: of that
// run alone), by run id, without reading any file (records and linked.json
// are read by ReadRecords).
func Walk(fs icebergio.IO, root, only string) (map[string]*State, error) {
	lister, ok := fs.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("the table's storage at %s cannot list files, which sharded runs need", root)
	}
	root = strings.TrimSuffix(root, "/")
	runs := map[string]*State{}
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
			if i := strings.Index(slashed, "/"+Dir+"/"); i >= 0 { // a scheme spelled otherwise
				rest, ok = slashed[i+len(Dir)+2:], true
			}
		}
		run, base, found := strings.Cut(rest, "/")
		if !ok || !found || strings.Contains(base, "/") {
			return nil
		}
		st := runs[run]
		if st == nil {
			st = &State{Dir: root + "/" + run, Markers: map[int]map[int]string{}}
			runs[run] = st
		}
		touch := func() {
			if info, err := d.Info(); err == nil && info.ModTime().After(st.Touched) {
				st.Touched = info.ModTime()
			}
		}
		switch base {
		case RecordName:
			st.Record = &Record{} // read by ReadRecords
			touch()
		case LinkedName:
			st.Linked = &Linked{}
		default:
			m := shardName.FindStringSubmatch(base)
			if m == nil {
				return nil
			}
			i, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			if m[3] == "lease" {
				touch()
				st.Leases = append(st.Leases, st.Dir+"/"+base)
				return nil
			}
			if st.Markers[n] == nil {
				st.Markers[n] = map[int]string{}
			}
			st.Markers[n][i] = st.Dir + "/" + base
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the sharded runs in %s: %w", root, err)
	}
	return runs, nil
}

// Read lists one run's directory and reads its record and linked.json; a
// run with no files yet has an empty state.
func Read(fs icebergio.IO, dir string) (*State, error) {
	root, run, _ := cutLast(dir)
	runs, err := Walk(fs, root, run)
	if err != nil {
		return nil, err
	}
	st := runs[run]
	if st == nil {
		return &State{Dir: dir, Markers: map[int]map[int]string{}}, nil
	}
	return st, st.ReadRecords(fs)
}

// cutLast splits a path at its last slash.
func cutLast(p string) (dir, base string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}

// ReadRecords reads run.json and linked.json, where Walk found them.
func (st *State) ReadRecords(fs icebergio.IO) error {
	if st.Record != nil {
		var rec Record
		if err := ReadJSON(fs, st.Dir+"/"+RecordName, &rec); err != nil {
			return err
		}
		st.Record = &rec
	}
	if st.Linked != nil {
		var rec Linked
		if err := ReadJSON(fs, st.Dir+"/"+LinkedName, &rec); err != nil {
			return err
		}
		st.Linked = &rec
	}
	return nil
}

// Live reports whether the run may still link files: not complete, and a
// shard touched its lease within LeaseTerm of now.
func (st *State) Live(now time.Time) bool {
	return st.Linked == nil && st.Record != nil && now.Before(st.Touched.Add(LeaseTerm))
}

// Counts returns the shard counts of the markers present, ascending.
func (st *State) Counts() []int {
	var ns []int
	for n := range st.Markers {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// CheckCount refuses (ErrShards) a shard count other than the run's: the
// record's, or that of markers already written.
func (st *State) CheckCount(run string, n int) error {
	if st.Record != nil && st.Record.Shards != 0 && st.Record.Shards != n {
		return fmt.Errorf("run %s started with %d shards; this shard says %d (%w): give each run its own --run-id",
			run, st.Record.Shards, n, ErrShards)
	}
	for _, other := range st.Counts() {
		if other != n {
			return fmt.Errorf("run %s has shards of %d and of %d shards (%w): give each run its own --run-id",
				run, other, n, ErrShards)
		}
	}
	return nil
}

// ReadJSON decodes the JSON file at path into v. A file that does not
// decode is read again a few times: a storage without atomic replacement
// (WriteJSON) may show a file being written.
func ReadJSON(fs icebergio.IO, path string, v any) error {
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

// CreateJSON writes v as the JSON file at path unless one exists there
// already, atomically, so that two shards starting a run at once agree on
// its record: on local storage by a rename that does not replace, on an
// object store by a conditional PUT (If-None-Match: *, which S3, GCS and
// Azure honour). An object store that ignores the condition leaves a
// check before the PUT, and of two writers at the same moment the last
// wins. It reports whether it wrote the file.
func CreateJSON(fs icebergio.WriteFileIO, path string, v any) (bool, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	rn, ok := fs.(icebergio.LocalFS)
	if !ok { // an object store: a PUT is whole
		if _, err := readAll(fs, path); err == nil {
			return false, nil
		}
		if cw, ok := fs.(conditionalWriter); ok {
			return createObject(cw, path, b)
		}
		return true, WriteJSON(fs, path, v)
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

// conditionalWriter is iceberg-go's object storage IO (blobfs.FileIO, also
// as the catalog package wraps it), whose writers take gocloud's options.
type conditionalWriter interface {
	NewWriter(ctx context.Context, path string, overwrite bool, opts *blob.WriterOptions) (*blobfs.Writer, error)
}

// createObject PUTs b at path only if no object is there: false when one
// is.
func createObject(cw conditionalWriter, path string, b []byte) (bool, error) {
	w, err := cw.NewWriter(context.Background(), path, true, &blob.WriterOptions{IfNotExist: true, ContentType: "application/json"})
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := w.Write(b)
	err = w.Close() // the PUT, and its condition's answer
	switch {
	case werr != nil:
		return false, fmt.Errorf("write %s: %w", path, werr)
	case gcerrors.Code(err) == gcerrors.FailedPrecondition:
		return false, nil // another writer's object is there
	case err != nil:
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// WriteJSON writes v as the JSON file at path, replacing it whole: on
// local storage through a temporary file renamed onto path, so a reader
// never sees part of it (an object store's PUT replaces an object whole).
func WriteJSON(fs icebergio.WriteFileIO, path string, v any) error {
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

// Lease touches a shard's lease file every quarter of LeaseTerm until
// ended, so that the run stays live while the shard works.
type Lease struct {
	stop chan struct{}
	done sync.WaitGroup
}

// StartLease touches the lease at path now and then periodically, writing
// the time by now (the caller's clock, which tests replace).
func StartLease(fs icebergio.WriteFileIO, path string, now func() time.Time) (*Lease, error) {
	touch := func() error { return fs.WriteFile(path, []byte(now().UTC().Format(time.RFC3339Nano))) }
	if err := touch(); err != nil {
		return nil, fmt.Errorf("touch the run's lease %s: %w", path, err)
	}
	l := &Lease{stop: make(chan struct{})}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		t := time.NewTicker(touchEvery)
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

// End stops touching the lease; the run stays live for LeaseTerm after the
// last touch unless it completes. A nil Lease, or one ended already, is a
// no-op.
func (l *Lease) End() {
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

// Files tells gc what the sharded runs under root hold: keep, the shard
// segment files the markers of runs touched after cutoff name — a live
// run's files, which its linking commit will link however old they are —
// and stale, the markers and leases of runs last touched before it, which
// nothing needs any more (a complete run's record and linked.json stay, so
// its id stays refused). Segment files of dead runs are not in keep: gc
// deletes them as any unreferenced index file.
func Files(fs icebergio.IO, root string, cutoff time.Time) (keep map[string]bool, stale []string, err error) {
	runs, err := Walk(fs, root, "")
	if err != nil {
		return nil, nil, err
	}
	keep = map[string]bool{}
	for _, st := range runs {
		if !st.Touched.After(cutoff) {
			stale = append(stale, st.Leases...)
		}
		for _, n := range st.Counts() {
			for _, path := range st.Markers[n] {
				if !st.Touched.After(cutoff) {
					stale = append(stale, path)
					continue
				}
				var m Marker
				if err := ReadJSON(fs, path, &m); err != nil {
					if errors.Is(err, iofs.ErrNotExist) {
						continue
					}
					return nil, nil, fmt.Errorf("sharded run %s: %w", st.Dir, err)
				}
				keep[m.Segment.Path] = true
			}
		}
	}
	slices.Sort(stale)
	return keep, stale, nil
}
