package serve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/serve"
)

var ident = table.Identifier{"db", "events"}

// row is one row of the fixture table; nil is NULL.
type row struct {
	id    int64
	name  *string
	day   *iceberg.Date
	score *float64
	cat   *int32
}

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 4, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "cat", Type: iceberg.PrimitiveTypes.Int32},
)

// baseDay is 2022-01-09; the rows' days are it and the three after, or
// NULL.
const baseDay = 19001

// fixture is a table with a history (appends, a compaction, position and
// equality deletes, an index and its sync) and the rows it must hold: the
// ground truth, kept here, not read back.
type fixture struct {
	t       *testing.T
	rng     *rand.Rand
	cat     *catalogtest.Catalog
	nextID  int64
	live    map[int64]row
	oldSnap int64         // a time-travel snapshot
	oldLive map[int64]row // its rows
	// pointOnly makes leaf draw only = and IN (pointLeaf).
	pointOnly bool
}

func (fx *fixture) randomRow() row {
	r := row{id: fx.nextID}
	fx.nextID++
	if fx.rng.IntN(5) > 0 {
		s := fmt.Sprintf("user%d", fx.rng.IntN(40))
		r.name = &s
	}
	if fx.rng.IntN(6) > 0 {
		d := iceberg.Date(baseDay + fx.rng.IntN(4))
		r.day = &d
	}
	if fx.rng.IntN(4) > 0 {
		f := float64(fx.rng.IntN(1000)) / 10
		r.score = &f
	}
	if fx.rng.IntN(5) > 0 {
		c := int32(fx.rng.IntN(8))
		r.cat = &c
	}
	return r
}

func (fx *fixture) record(rows []row) arrow.RecordBatch {
	as, err := table.SchemaToArrowSchema(schema, nil, false, false)
	if err != nil {
		fx.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.name != nil {
			b.Field(1).(*array.StringBuilder).Append(*r.name)
		} else {
			b.Field(1).AppendNull()
		}
		if r.day != nil {
			b.Field(2).(*array.Date32Builder).Append(arrow.Date32(*r.day))
		} else {
			b.Field(2).AppendNull()
		}
		if r.score != nil {
			b.Field(3).(*array.Float64Builder).Append(*r.score)
		} else {
			b.Field(3).AppendNull()
		}
		if r.cat != nil {
			b.Field(4).(*array.Int32Builder).Append(*r.cat)
		} else {
			b.Field(4).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

func (fx *fixture) load() *table.Table {
	tbl, err := fx.cat.LoadTable(context.Background(), ident)
	if err != nil {
		fx.t.Fatal(err)
	}
	return tbl
}

// appendRows appends n random rows (a data file per day present).
func (fx *fixture) appendRows(n int) {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = fx.randomRow()
		fx.live[rows[i].id] = rows[i]
	}
	rec := fx.record(rows)
	defer rec.Release()
	catalogtest.Append(fx.t, fx.load(), rec)
}

func (fx *fixture) pickLive(n int) []int64 {
	ids := make([]int64, 0, len(fx.live))
	for id := range fx.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fx.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:min(n, len(ids))]
}

// newFixture makes the table in cat: appends, an index of id, name and
// cat, a time-travel point, a compaction (RewriteDataFiles), appends,
// position deletes (merge-on-read Delete), equality deletes, a sync, and
// a last append the index does not cover. In format version 3 the
// position deletes are deletion vectors.
func newFixture(t *testing.T, cat *catalogtest.Catalog, s uint64, formatVersion string) *fixture {
	ctx := context.Background()
	fx := &fixture{t: t, rng: rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)), cat: cat, nextID: 1, live: map[int64]row{}}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "day", Transform: iceberg.IdentityTransform{}})
	_, err := cat.CreateTable(ctx, ident, schema, icecatalog.WithPartitionSpec(&spec), icecatalog.WithProperties(iceberg.Properties{
		"format-version":         formatVersion,
		table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
	}))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		fx.appendRows(12)
	}
	if _, err := indexer.Build(ctx, cat, ident, indexer.Options{Columns: []string{"id", "name", "cat"}}); err != nil {
		t.Fatal(err)
	}
	fx.oldSnap = fx.load().CurrentSnapshot().SnapshotID
	fx.oldLive = copyRows(fx.live)

	// A compaction of every data file, as a data compaction job does it.
	tbl := fx.load()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]*table.CompactionTaskGroup{} // one per partition
	var keys []string
	for _, task := range tasks {
		key := fmt.Sprint(task.File.Partition())
		g := groups[key]
		if g == nil {
			g = &table.CompactionTaskGroup{PartitionKey: key}
			groups[key] = g
			keys = append(keys, key)
		}
		g.Tasks = append(g.Tasks, task)
		g.TotalSizeBytes += task.File.FileSizeBytes()
	}
	var list []table.CompactionTaskGroup
	for _, k := range keys {
		list = append(list, *groups[k])
	}
	if _, err := tbl.RewriteDataFiles(ctx, list, table.RewriteDataFilesOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		fx.appendRows(12)
	}

	// Position deletes of a few rows.
	del := fx.pickLive(4)
	tx := fx.load().NewTransaction()
	var lits []int64
	for _, id := range del {
		lits = append(lits, id)
		delete(fx.live, id)
	}
	if err := tx.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), lits...), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Equality deletes of a few more, by id.
	eq := fx.pickLive(3)
	// The file holds the partition column too: equality deletes are
	// written per partition (a delete applies to its partition's files).
	eqSchema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"3"})},
	}, nil)
	eb := array.NewRecordBuilder(memory.DefaultAllocator, eqSchema)
	for _, id := range eq {
		eb.Field(0).(*array.Int64Builder).Append(id)
		if d := fx.live[id].day; d != nil {
			eb.Field(1).(*array.Date32Builder).Append(arrow.Date32(*d))
		} else {
			eb.Field(1).AppendNull()
		}
		delete(fx.live, id)
	}
	rec := eb.NewRecordBatch()
	tx = fx.load().NewTransaction()
	recs := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	if err := tx.CommitEqualityDeletes(ctx, []int{1}, recs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	fx.appendRows(12)
	if _, err := indexer.Sync(ctx, cat, ident, indexer.Options{}); err != nil {
		t.Fatal(err)
	}
	fx.appendRows(6) // not indexed: the index must keep its files
	return fx
}

func copyRows(m map[int64]row) map[int64]row {
	out := make(map[int64]row, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// proxyFixture starts the REST test server over a fixture table and the
// proxy in front of it.
func proxyFixture(t *testing.T, s uint64, formatVersion string, o serve.Options) (*fixture, *catalogtest.RESTServer, *httptest.Server, *serve.Server) {
	up := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	fx := newFixture(t, up.Catalog, s, formatVersion)
	o.Upstream = mustURL(t, up.URL)
	o.PlanWithOwnCredentials = true // the test server vends no storage credentials
	srv, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(t, srv)
	return fx, up, hs, srv
}

// client opens iceberg-go's REST catalog client on uri.
func client(t *testing.T, uri, token string) *rest.Catalog {
	opts := []rest.Option{}
	if token != "" {
		opts = append(opts, rest.WithOAuthToken(token))
	}
	c, err := rest.NewCatalog(context.Background(), "serve", uri, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSQLCatalog(t *testing.T) *catalogtest.Catalog { return catalogtest.NewCatalog(t) }

// newHTTPServer serves srv for a test; every answer is checked against
// the REST spec (serve.SpecChecked).
func newHTTPServer(t *testing.T, srv *serve.Server) *httptest.Server {
	hs := httptest.NewServer(serve.SpecChecked(t, srv))
	t.Cleanup(hs.Close)
	return hs
}
