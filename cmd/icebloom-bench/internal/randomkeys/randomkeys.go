// Package randomkeys makes the tables of the serve benchmark's random kind
// (bench --serve --serve-kind random, issue 35): data files of uniformly
// random keys, as users' tables hold them, so that min/max statistics keep
// nearly every file for a value from the middle of the key range and drop
// some for a value near either end. A table has two required columns, id
// (long, drawn uniformly from [0, 2^63)) and email (string, an email-like
// value drawn uniformly), Spec.Rows rows a file, under Spark-like names
// (data/00000-<task>-<uuid>-00001.parquet, one UUID per add_files commit as
// one per write job), registered by add_files commits of Spec.Batch files
// each.
//
// Every value is a function of the table's seed and the file's number, so
// the bench knows which file holds which value without storing a value: a
// table made once is reused by later runs through its Record, a small JSON
// file beside the catalog.
package randomkeys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/smallfiles"
)

const (
	// IDCol and EmailCol are the tables' columns, both indexed.
	IDCol    = "id"
	EmailCol = "email"
	// Rows is the default row count of a file.
	Rows = 100
	// Batch is the default number of files an add_files commit registers.
	Batch = 100_000
	// EdgePercent is how much of each end of the id range counts as its
	// edge: min/max statistics drop a file for a value there when all of
	// the file's ids lie on the value's other side.
	EdgePercent = 3
	// edgeIDSpan is the width of each edge of the id range.
	edgeIDSpan = math.MaxInt64 / 100 * EdgePercent
	// alphabet is what an email's local part is drawn from, in byte order:
	// an email whose first character is its first or last lies in the
	// lowest or highest 1/36 (2.8%) of the values, the email's edges.
	alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	// localLen is the length of an email's local part: 36^12 values, so
	// two files almost never share one.
	localLen = 12
)

// domains are the emails' domains.
var domains = []string{"example.com", "example.org", "example.net", "mail.example", "corp.example", "users.example"}

// Spec is what a table's files are a function of.
type Spec struct {
	Seed  uint64 `json:"seed"`
	Files int    `json:"files"`
	Rows  int    `json:"rows_per_file"`
	Batch int    `json:"files_per_commit"`
}

// NewSpec is the spec of a table of n files of the default rows and batch,
// seeded with n so that tables of one size are the same.
func NewSpec(n int) Spec { return Spec{Seed: uint64(n), Files: n, Rows: Rows, Batch: Batch} }

// Schema is the tables' Iceberg schema: id (long) and email (string), both
// required.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: IDCol, Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: EmailCol, Type: iceberg.PrimitiveTypes.String, Required: true},
	)
}

// Name is the base name of file i, as Iceberg's Spark writer names its
// files: partition (within the commit), task, the write's UUID, the file's
// count within the task.
func (s Spec) Name(i int) string {
	return fmt.Sprintf("%05d-%d-%s-%05d.parquet", i%s.Batch, i, UUID(rand.New(rand.NewPCG(s.Seed, uint64(i/s.Batch)|1<<62))), 1)
}

// UUID draws a version 4 UUID from rng.
func UUID(rng *rand.Rand) string {
	hi, lo := rng.Uint64(), rng.Uint64()
	hi = hi&^0xf000 | 0x4000     // version 4
	lo = lo&^(0xc<<60) | 0x8<<60 // variant 10
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, hi>>16&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}

// File is the rows of file i: its ids and emails, in the order written.
func (s Spec) File(i int) (ids []int64, emails []string) {
	return RandomRows(rand.New(rand.NewPCG(s.Seed, uint64(i))), s.Rows)
}

// RandomRows draws n rows of the tables' columns.
func RandomRows(rng *rand.Rand, n int) ([]int64, []string) {
	ids := make([]int64, n)
	emails := make([]string, n)
	for j := range n {
		ids[j] = RandomID(rng)
		emails[j] = RandomEmail(rng)
	}
	return ids, emails
}

// RandomID draws an id uniformly from [0, 2^63).
func RandomID(rng *rand.Rand) int64 { return rng.Int64() }

// RandomEmail draws an email: a local part of 12 characters of alphabet
// and one of the domains.
func RandomEmail(rng *rand.Rand) string {
	var b strings.Builder
	b.Grow(localLen + 1 + 13)
	for range localLen {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	b.WriteByte('@')
	b.WriteString(domains[rng.IntN(len(domains))])
	return b.String()
}

// EdgeID reports whether v lies in the lowest or highest EdgePercent of the
// id range.
func EdgeID(v int64) bool { return v < edgeIDSpan || v > math.MaxInt64-edgeIDSpan }

// EdgeEmail reports whether v lies in the lowest or highest 1/36 of the
// emails (its first character is alphabet's first or last).
func EdgeEmail(v string) bool {
	return v != "" && (v[0] == alphabet[0] || v[0] == alphabet[len(alphabet)-1])
}

// randomEdgeID draws an id from either edge of the range.
func randomEdgeID(rng *rand.Rand) int64 {
	v := rng.Int64N(edgeIDSpan)
	if rng.IntN(2) == 0 {
		return v
	}
	return math.MaxInt64 - v
}

// randomEdgeEmail draws an email from either edge.
func randomEdgeEmail(rng *rand.Rand) string {
	e := []byte(RandomEmail(rng))
	e[0] = alphabet[0]
	if rng.IntN(2) == 1 {
		e[0] = alphabet[len(alphabet)-1]
	}
	return string(e)
}

// Timings are what making a table cost: writing its files, and registering
// them with add_files commits.
type Timings struct {
	Write, Add time.Duration
}

// Create creates table ident of Schema in cat, at a local (file://)
// location, writes spec's files into its data directory, as many at a time
// as GOMAXPROCS (at least two), and registers them with one add_files commit
// per spec.Batch files, telling progress after each commit how many files
// are registered. The add_files commits skip iceberg-go's check for files
// the table holds already, which reads every file registered before: the
// names are unique by construction.
func Create(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, spec Spec, progress func(done int, t Timings)) (*table.Table, Timings, error) {
	var t Timings
	name := strings.Join(ident, ".")
	if spec.Files < 1 || spec.Rows < 1 || spec.Batch < 1 {
		return nil, t, fmt.Errorf("%s: spec %+v: want files, rows and batch of at least 1", name, spec)
	}
	tbl, err := cat.CreateTable(ctx, ident, Schema())
	if err != nil {
		return nil, t, fmt.Errorf("create %s: %w", name, err)
	}
	if !strings.HasPrefix(tbl.Location(), "file://") {
		return nil, t, fmt.Errorf("%s is at %s: only a local (file://) location is written", name, tbl.Location())
	}
	dataDir := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, t, err
	}
	for first := 0; first < spec.Files; first += spec.Batch {
		n := min(spec.Batch, spec.Files-first)
		start := time.Now()
		paths := make([]string, n)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(max(runtime.GOMAXPROCS(0), 2))
		for k := range n {
			g.Go(func() error {
				if err := gctx.Err(); err != nil {
					return err
				}
				i := first + k
				ids, emails := spec.File(i)
				var buf bytes.Buffer
				if err := smallfiles.WriteColumns(&buf, IDCol, ids, EmailCol, emails); err != nil {
					return err
				}
				p := filepath.Join(dataDir, spec.Name(i))
				paths[k] = "file://" + p
				return os.WriteFile(p, buf.Bytes(), 0o644)
			})
		}
		if err := g.Wait(); err != nil {
			return nil, t, fmt.Errorf("write the files of %s: %w", name, err)
		}
		t.Write += time.Since(start)
		start = time.Now()
		if tbl, err = AddFiles(ctx, cat, ident, paths); err != nil {
			return nil, t, err
		}
		t.Add += time.Since(start)
		if progress != nil {
			progress(first+n, t)
		}
	}
	return tbl, t, nil
}

// AddFiles registers paths with table ident of cat in one add_files commit
// (a fast append: one new manifest), without iceberg-go's check for files
// the table holds already, and returns the table as committed.
func AddFiles(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, paths []string) (*table.Table, error) {
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, paths, nil, true); err != nil {
		return nil, fmt.Errorf("add %d files to %s: %w", len(paths), name, err)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", name, err)
	}
	return committed, nil
}

// WriteExtra writes one more data file of rows drawn from rng into the
// data directory of the table at location, named as a file of a new write
// (a UUID of its own), and returns its location and rows.
func WriteExtra(location string, rng *rand.Rand, rows, task int) (string, []int64, []string, error) {
	ids, emails := RandomRows(rng, rows)
	var buf bytes.Buffer
	if err := smallfiles.WriteColumns(&buf, IDCol, ids, EmailCol, emails); err != nil {
		return "", nil, nil, err
	}
	dir := filepath.Join(strings.TrimPrefix(location, "file://"), "data")
	p := filepath.Join(dir, fmt.Sprintf("%05d-%d-%s-%05d.parquet", 0, task, UUID(rng), 1))
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		return "", nil, nil, err
	}
	return "file://" + p, ids, emails, nil
}

// Value is a point lookup's value: of column IDCol (ID) or EmailCol
// (Email), and the data file that holds it ("" for a value drawn afresh,
// which no file holds but by a chance of about files x rows / 2^63).
type Value struct {
	Column string
	ID     int64
	Email  string
	Holder string
	Edge   bool
}

// Filter is the point lookup of v: its column equal to it.
func (v Value) Filter() iceberg.BooleanExpression {
	if v.Column == EmailCol {
		return iceberg.EqualTo(iceberg.Reference(EmailCol), v.Email)
	}
	return iceberg.EqualTo(iceberg.Reference(IDCol), v.ID)
}

func (v Value) String() string {
	if v.Column == EmailCol {
		return fmt.Sprintf("%s = %q", EmailCol, v.Email)
	}
	return fmt.Sprintf("%s = %d", IDCol, v.ID)
}

// Drawer hands out values to plan, each new (never handed out before by
// the same Drawer), safely from many goroutines.
type Drawer struct {
	spec     Spec
	location string
	mu       sync.Mutex
	rng      *rand.Rand
	seen     map[string]bool
}

// NewDrawer draws values of the table of spec at location, from a stream
// of stream.
func NewDrawer(spec Spec, location string, stream uint64) *Drawer {
	return &Drawer{spec: spec, location: location, rng: rand.New(rand.NewPCG(spec.Seed^0x9e3779b97f4a7c15, stream)), seen: map[string]bool{}}
}

// Path is the location of file i.
func (d *Drawer) Path(i int) string { return d.location + "/data/" + d.spec.Name(i) }

// Present draws a value of column some file holds, with that file: with
// edge, one from the column's edges, else one from its middle.
func (d *Drawer) Present(column string, edge bool) Value {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		i := d.rng.IntN(d.spec.Files)
		ids, emails := d.spec.File(i)
		var rows []int
		for j := range ids {
			if onEdge := column == IDCol && EdgeID(ids[j]) || column == EmailCol && EdgeEmail(emails[j]); onEdge == edge {
				rows = append(rows, j)
			}
		}
		if len(rows) == 0 {
			continue
		}
		j := rows[d.rng.IntN(len(rows))]
		v := Value{Column: column, ID: ids[j], Email: emails[j], Holder: d.Path(i), Edge: edge}
		if d.fresh(v) {
			return v
		}
	}
}

// Fresh draws a value of column afresh, which no file holds but by chance:
// with edge, from the column's edges, else from its middle.
func (d *Drawer) Fresh(column string, edge bool) Value {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		v := Value{Column: column, Edge: edge}
		switch {
		case column == IDCol && edge:
			v.ID = randomEdgeID(d.rng)
		case column == IDCol:
			v.ID = RandomID(d.rng)
		case edge:
			v.Email = randomEdgeEmail(d.rng)
		default:
			v.Email = RandomEmail(d.rng)
		}
		if column == IDCol && !edge && EdgeID(v.ID) || column == EmailCol && !edge && EdgeEmail(v.Email) {
			continue // a middle value: the edges are drawn apart
		}
		if d.fresh(v) {
			return v
		}
	}
}

// Rand is a new random stream drawn from the Drawer's, for what the
// caller draws itself.
func (d *Drawer) Rand() *rand.Rand {
	d.mu.Lock()
	defer d.mu.Unlock()
	return rand.New(rand.NewPCG(d.rng.Uint64(), d.rng.Uint64()))
}

// Take marks v as handed out, and reports whether it was new.
func (d *Drawer) Take(v Value) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fresh(v)
}

func (d *Drawer) fresh(v Value) bool {
	k := v.String()
	if d.seen[k] {
		return false
	}
	d.seen[k] = true
	return true
}

// recordFormat is the version of Record's JSON: a record of another is
// not reused.
const recordFormat = 1

// Record is what the bench keeps of a table it made, beside the catalog,
// so that a later run reuses the table: its spec (from which every value
// is known), where it is, and the table version the index was built on,
// which each run returns the table to after appending to it.
type Record struct {
	Format     int    `json:"format"`
	Table      string `json:"table"`
	Spec       Spec   `json:"spec"`
	Location   string `json:"location"`
	SnapshotID int64  `json:"snapshot_id"`
	// Statistics are the statistics files of the table version the index
	// was built on.
	Statistics []string `json:"statistics"`
	// FPP is the false-positive rate the index was built with.
	FPP  float64   `json:"fpp"`
	Made time.Time `json:"made"`
	// WriteS, AddS and IndexS are the seconds making it took: writing
	// the files, their add_files commits, and the index's build.
	WriteS    float64 `json:"write_s"`
	AddS      float64 `json:"add_s"`
	IndexS    float64 `json:"index_s"`
	GoVersion string  `json:"go_version"`
}

// ReadRecord reads the record at path; an error wrapping os.ErrNotExist
// when there is none.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("record %s: %w", path, err)
	}
	if r.Format != recordFormat {
		return nil, fmt.Errorf("record %s is of format %d, want %d: make the table again in another directory", path, r.Format, recordFormat)
	}
	return &r, nil
}

// Write writes the record to path, whole or not at all.
func (r *Record) Write(path string) error {
	r.Format = recordFormat
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// StatisticsPaths are the paths of the statistics files of meta, sorted.
func StatisticsPaths(meta table.Metadata) []string {
	var paths []string
	for sf := range meta.Statistics() {
		paths = append(paths, sf.StatisticsPath)
	}
	slices.Sort(paths)
	return paths
}

// Restore returns table ident to the version r records: the main branch at
// r's snapshot, and every snapshot that is not one of its ancestors removed
// (with their statistics files' entries), in one commit; it reports the
// snapshots removed (none when the table is at that version). It fails
// when the recorded snapshot is gone or the statistics files differ from
// the recorded ones afterwards.
func Restore(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, r *Record) ([]int64, error) {
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	base := meta.SnapshotByID(r.SnapshotID)
	if base == nil {
		return nil, fmt.Errorf("%s has no snapshot %d, which the index was built on: make the table again in another directory", name, r.SnapshotID)
	}
	keep := map[int64]bool{}
	for s := base; s != nil; {
		keep[s.SnapshotID] = true
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	var remove []int64
	for _, s := range meta.Snapshots() {
		if !keep[s.SnapshotID] {
			remove = append(remove, s.SnapshotID)
		}
	}
	cur := meta.CurrentSnapshot()
	if len(remove) > 0 || cur == nil || cur.SnapshotID != r.SnapshotID {
		updates := []table.Update{table.NewSetSnapshotRefUpdate(table.MainBranch, r.SnapshotID, table.BranchRef, 0, 0, 0)}
		if len(remove) > 0 {
			updates = append(updates, table.NewRemoveSnapshotsUpdate(remove, false))
		}
		if meta, _, err = cat.CommitTable(ctx, ident, []table.Requirement{table.AssertTableUUID(meta.TableUUID())}, updates); err != nil {
			return nil, fmt.Errorf("return %s to snapshot %d: %w", name, r.SnapshotID, err)
		}
	}
	if got := StatisticsPaths(meta); !slices.Equal(got, r.Statistics) {
		return remove, errors.New(name + ": its statistics files " + strings.Join(got, ", ") + " are not those the index was built with, " +
			strings.Join(r.Statistics, ", ") + ": make the table again in another directory")
	}
	return remove, nil
}
