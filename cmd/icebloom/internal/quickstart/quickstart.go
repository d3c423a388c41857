// Package quickstart is the demo of `icebloom quickstart`: it creates a
// table of random events in a catalog, runs the demo's lookups with and
// without the index and tells which files hold the value, and says how to
// run a lookup again from the shell. It prints nothing and parses no flags:
// the command does both.
package quickstart

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/cmd/internal/scanrows"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/lookup"
)

// marker is the table property that marks the demo table, so a
// rerun replaces it and never a table of the user's.
const marker = "icebloom.quickstart"

// Table is the demo table, demo.events, named TableName on the command
// line.
var Table = table.Identifier{"demo", "events"}

// TableName is Table as the command line names it.
const TableName = "demo.events"

// Lookup is one demo lookup: how many files each step leaves, what
// the files the index left hold, and the scan with and without the index.
type Lookup struct {
	Where           string `json:"where"`
	FilesTotal      int    `json:"files_total"`
	FilesAfterStats int    `json:"files_after_stats"`
	Candidates      int    `json:"candidates"`
	// Holding counts the candidates that hold the value, found by reading
	// each candidate (the scan without the index returning the same rows
	// shows that no other file holds it).
	Holding int `json:"files_holding"`
	// FalsePositives counts the indexed candidates that do not hold the
	// value: files whose filter answered "maybe" for a value they lack.
	FalsePositives int `json:"false_positives"`
	// Unindexed counts the candidates no filter covers, kept unread by the
	// index.
	Unindexed int `json:"unindexed"`
	// FPP is the false-positive rate the filters were sized for (the
	// largest, if they differ) and ExpectedFalsePositives its expectation:
	// the sum of each filter's FPP over the indexed files statistics left
	// that do not hold the value.
	FPP                    float64 `json:"fpp"`
	ExpectedFalsePositives float64 `json:"false_positives_expected"`
	Rows                   int     `json:"rows"`
	ScanMillis             float64 `json:"scan_ms"`
	NoIndexMillis          float64 `json:"scan_no_index_ms"`
}

// TryCommand is the command line of a lookup of where on the demo table
// that the quickstart suggests, as this process was started: dirFlag is
// its --dir, given the catalog flags it had, catalogPath and dir the demo
// catalog's database and directory.
func TryCommand(dirFlag string, given catalog.Options, catalogPath, dir, where string) string {
	return tryCommand(ProgramName(), catalogFlagsNeeded(dirFlag, given, userHome()), catalogPath, dir, where)
}

// ProgramName is how to run this program again from the directory it runs
// in (programName of this process).
func ProgramName() string {
	return programName(os.Args[0], executable(), cwd(), moduleVersion())
}

// tryCommand is the lookup the demo suggests, as a shell runs it from the
// directory the quickstart ran in: with the catalog flags that name the
// demo's catalog by absolute paths, or without any when the embedded
// default reaches it.
func tryCommand(prog string, catalogFlags bool, catalogPath, dir, where string) string {
	return fmt.Sprintf("%s %slookup demo.events --where %s", prog, globalFlags(catalogFlags, catalogPath, dir), shellQuote(where))
}

// globalFlags are the catalog flags a suggested command needs, "" or
// ending in a space.
func globalFlags(catalogFlags bool, catalogPath, dir string) string {
	if !catalogFlags {
		return ""
	}
	return fmt.Sprintf("--catalog sql --uri %s --warehouse %s ", shellQuote("file:"+catalogPath), shellQuote("file://"+dir))
}

// ServeAddress is where the suggested serve command listens (serve's
// default).
const ServeAddress = "127.0.0.1:8181"

// ServeCommands are the demo's server step, as TryCommand's lookup: serve
// over the demo's catalog, and a plan request of the column userID = value
// that a client sends it (curl, as an engine would plan through it).
func ServeCommands(dirFlag string, given catalog.Options, catalogPath, dir string, value int64) (serve, plan string) {
	serve = fmt.Sprintf("%s %sserve", ProgramName(), globalFlags(catalogFlagsNeeded(dirFlag, given, userHome()), catalogPath, dir))
	body := fmt.Sprintf(`{"filter":{"type":"eq","term":"user_id","value":%d}}`, value)
	ns, tbl, _ := strings.Cut(TableName, ".")
	plan = fmt.Sprintf("curl -s -H 'Content-Type: application/json' -d %s http://%s/v1/namespaces/%s/tables/%s/plan",
		shellQuote(body), ServeAddress, ns, tbl)
	return serve, plan
}

// catalogFlagsNeeded tells whether a command must name the demo's catalog:
// a command without catalog flags opens the embedded catalog in
// ./warehouse only when the demo is there and neither flags nor a config
// file (home's ~/.iceberg-go.yaml) select another catalog.
func catalogFlagsNeeded(dirFlag string, given catalog.Options, home string) bool {
	if filepath.Clean(dirFlag) != "warehouse" || given.Type != "" || given.URI != "" || given.Name != "" || given.ConfigPath != "" {
		return true
	}
	return home == "" || fileExists(filepath.Join(home, ".iceberg-go.yaml"))
}

func userHome() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return home
}

// goRunPackage is the package path go run takes to build this command.
const goRunPackage = "github.com/icebloom/icebloom/cmd/icebloom"

// programName returns how to run this program again from the directory
// it runs in, given how it was started: arg0 (os.Args[0]), the executable's
// path, the working directory, and the module version from the build
// info. After `go run`, the executable was a temporary file, gone once the
// command ends: the suggestion is go run again — ./cmd/icebloom from the
// module's root, as the README runs it; the versioned package path when go
// run fetched a release; the package path inside the module otherwise. A
// binary found on PATH is named as typed; one run by its path keeps that
// path, which works from the same directory.
func programName(arg0, exe, wd, version string) string {
	if underGoRun(exe) {
		switch {
		case wd != "" && fileExists(filepath.Join(wd, "cmd", "icebloom", "main.go")):
			return "go run ./cmd/icebloom"
		case version != "" && version != "(devel)":
			return "go run " + goRunPackage + "@" + version
		}
		return "go run " + goRunPackage
	}
	if arg0 == "" {
		return "icebloom"
	}
	return shellQuote(arg0)
}

// underGoRun tells whether exe is a binary go run built: in a directory
// exe of go's temporary work directory (go-buildNNN/bNNN/exe/), or, as go
// run caches what it links since Go 1.24, in the build cache's directory
// of the link's action (GOCACHE/xx/<64 hex digits>-d/).
func underGoRun(exe string) bool {
	if exe == "" {
		return false
	}
	parent := filepath.Base(filepath.Dir(exe))
	if hash, ok := strings.CutSuffix(parent, "-d"); ok && len(hash) == 64 && strings.Trim(hash, "0123456789abcdef") == "" {
		return true
	}
	if parent != "exe" {
		return false
	}
	for d := filepath.Dir(exe); d != filepath.Dir(d); d = filepath.Dir(d) {
		if strings.HasPrefix(filepath.Base(d), "go-build") {
			return true
		}
	}
	return false
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// executable, cwd and moduleVersion are what programName needs from the
// process; "" when they cannot be told.
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

func cwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it needs quoting: in single
// quotes, each single quote in s closed, escaped and reopened.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@=+,%", r))
	}) < 0 {
		return s
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Create (re)creates the demo table in cat, of files data files of rows
// rows each, with random, high-cardinality columns — min/max statistics cannot prune them — and returns a user id
// that one of its files holds and one, within the same range, that none
// holds.
func Create(ctx context.Context, cat icecatalog.Catalog, files, rows int) (needle, absent int64, err error) {
	if err := cat.CreateNamespace(ctx, table.Identifier{"demo"}, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return 0, 0, fmt.Errorf("create namespace demo: %w", err)
	}
	if old, err := cat.LoadTable(ctx, Table); err == nil {
		if old.Properties()[marker] != "true" {
			return 0, 0, fmt.Errorf("demo.events exists and was not made by quickstart; use another --dir")
		}
		if err := cat.DropTable(ctx, Table); err != nil {
			return 0, 0, fmt.Errorf("replace demo.events: %w", err)
		}
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "order_id", Type: iceberg.PrimitiveTypes.UUID, Required: true},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64, Required: true},
	)
	// Manifests are merged as Java and Spark writers do by default, so that
	// planning reads a few manifests, not one per append.
	props := iceberg.Properties{marker: "true", table.ManifestMergeEnabledKey: "true"}
	for _, col := range []string{"user_id", "email", "order_id"} {
		props[indexer.PropBloomEnabledPrefix+col] = "true"
	}
	tbl, err := cat.CreateTable(ctx, Table, sc, icecatalog.WithProperties(props))
	if err != nil {
		return 0, 0, fmt.Errorf("create demo.events: %w", err)
	}
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return 0, 0, err
	}
	rng := rand.New(rand.NewPCG(7842913, 1))
	ids := map[int64]bool{}
	for i := range files {
		rec := RandomEvents(as, rng, rows)
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			ids[id] = true
		}
		if i == files/2 {
			needle = rec.Column(0).(*array.Int64).Value(rows / 2)
		}
		tbl, err = appendRecord(ctx, tbl, rec)
		rec.Release()
		if err != nil {
			return 0, 0, fmt.Errorf("append to demo.events: %w", err)
		}
	}
	for absent = needle; ids[absent]; {
		absent = 1 + rng.Int64N(1_000_000_000_000)
	}
	return needle, absent, nil
}

// RandomEvents makes a record of n random rows of the demo table's arrow
// schema as, drawn from rng: what each data file of the demo holds.
func RandomEvents(as *arrow.Schema, rng *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	var u uuid.UUID
	for range n {
		b.Field(0).(*array.Int64Builder).Append(1 + rng.Int64N(1_000_000_000_000))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", rng.Int64N(100_000_000)))
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		b.Field(2).(*extensions.UUIDBuilder).Append(u)
		b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
	}
	return b.NewRecordBatch()
}

func appendRecord(ctx context.Context, tbl *table.Table, rec arrow.RecordBatch) (*table.Table, error) {
	at := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer at.Release()
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, at, rec.NumRows(), nil); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

// Look plans and scans the filter where on the demo table of cat with and
// without the index, and reads each candidate alone to tell the files that hold the value from
// false positives.
func Look(ctx context.Context, cat icecatalog.Catalog, where string) (Lookup, error) {
	name := TableName
	tbl, filter, res, err := scanrows.Plan(ctx, cat, Table, where)
	if err != nil {
		return Lookup{}, err
	}
	withIndex, err := scanrows.Count(ctx, cat, Table, where, false)
	if err != nil {
		return Lookup{}, err
	}
	without, err := scanrows.Count(ctx, cat, Table, where, true)
	if err != nil {
		return Lookup{}, err
	}
	if withIndex.Rows != without.Rows {
		return Lookup{}, fmt.Errorf("%s: %d rows with the index, %d without", where, withIndex.Rows, without.Rows)
	}
	l := Lookup{
		Where: where, FilesTotal: res.FilesTotal, FilesAfterStats: len(cli.DataFiles(res.AfterStats)),
		Candidates: len(cli.DataFiles(res.Candidates)), Rows: int(withIndex.Rows),
		ScanMillis:    float64(withIndex.Elapsed.Microseconds()) / 1000,
		NoIndexMillis: float64(without.Elapsed.Microseconds()) / 1000,
	}
	holding, err := filesHolding(ctx, tbl, filter, res)
	if err != nil {
		return Lookup{}, err
	}
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return Lookup{}, err
	}
	ix, errs := index.Load(ctx, fs, tbl.Metadata(), nil)
	if len(errs) > 0 {
		return Lookup{}, fmt.Errorf("load the index of %s: %w", name, errors.Join(errs...))
	}
	field, ok := tbl.Schema().FindFieldByName("user_id")
	if !ok {
		return Lookup{}, fmt.Errorf("%s has no column user_id", name)
	}
	candidate := map[string]bool{}
	for _, f := range cli.DataFiles(res.Candidates) {
		candidate[f] = true
	}
	seen := map[string]bool{}
	for _, t := range res.AfterStats {
		path := t.File.FilePath()
		if seen[path] {
			continue
		}
		seen[path] = true
		entry, indexed := ix.Lookup(path, t.File.FileSizeBytes(), field.ID)
		switch {
		case holding[path]:
			l.Holding++
		case !indexed:
			l.Unindexed++
		default:
			l.ExpectedFalsePositives += entry.FPP
			l.FPP = max(l.FPP, entry.FPP)
			if candidate[path] {
				l.FalsePositives++
			}
		}
	}
	return l, nil
}

// filesHolding reads each candidate of res alone with filter and returns
// the data files that have a matching row.
func filesHolding(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, res *lookup.Result) (map[string]bool, error) {
	byFile := map[string][]table.FileScanTask{}
	for _, t := range res.Candidates {
		byFile[t.File.FilePath()] = append(byFile[t.File.FilePath()], t)
	}
	holding := map[string]bool{}
	for path, tasks := range byFile {
		scan := tbl.Scan(table.WithRowFilter(filter), table.WithSnapshotID(res.SnapshotID), table.WithLimit(1))
		_, records, err := scan.ReadTasks(ctx, tasks)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		for rec, err := range records {
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			if rec.NumRows() > 0 {
				holding[path] = true
			}
			rec.Release()
		}
	}
	return holding, nil
}
