package catalog_test

// The REST catalog: iceberg-go's REST client opened through catalog.Open, as
// the command's --catalog rest flags open it, against catalogtest.RESTServer
// over real HTTP. The server records every request, so the tests see the
// OAuth flow, the bearer token and the path prefix on the wire.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/catalog/catalogtest"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/indexer"
)

var restEvents = table.Identifier{"db", "events"}

// openREST opens the REST catalog at uri with the options o adds, and
// closes it at the end of the test.
func openREST(t *testing.T, o catalog.Options) icecatalog.Catalog {
	t.Helper()
	t.Setenv("HOME", t.TempDir()) // no ~/.iceberg-go.yaml: the options alone
	o.Type = "rest"
	cat, err := catalog.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecatalog.Closer).Close() })
	return cat
}

// restTable creates db.events with columns id and id2 (long) through cat.
func restTable(t *testing.T, cat icecatalog.Catalog) *table.Table {
	t.Helper()
	tbl, err := cat.CreateTable(t.Context(), restEvents, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "id2", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// restAppend appends, through the table's catalog, a data file of the rows
// (4j+k, 4j+k+1000) for j < 100 and returns the table and the file. Every
// file's range spans nearly all of 0..399, so min/max statistics keep every
// file for an id in it, and the ids 4j+k of the residues k not yet appended
// are in none.
func restAppend(t *testing.T, tbl *table.Table, k int64) (*table.Table, string) {
	t.Helper()
	before := dataFiles(t, tbl)
	tbl = appendPairs(t, tbl, residues(4, k, 100))
	return tbl, newestFile(t, tbl, before)
}

// restLoad loads db.events through cat.
func restLoad(t *testing.T, cat icecatalog.Catalog) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), restEvents)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// checkLookup fails the test unless the lookup col = v on tbl, planned with
// its index, leaves exactly the files want, after statistics kept them all,
// and no candidate is unindexed.
func checkLookup(t *testing.T, tbl *table.Table, col string, v int64, want ...string) {
	t.Helper()
	got, unindexed := candidates(t, tbl, col, v)
	if len(unindexed) > 0 {
		t.Fatalf("lookup %s = %d: unindexed %v", col, v, unindexed)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("lookup %s = %d: candidates %v, want %v", col, v, got, want)
	}
}

// checkWire fails the test unless every request srv got but those of the
// config and token endpoints was authorized with srv's token, went to a
// path under base, and succeeded unless a status in allowed says otherwise.
// It returns the number of token requests.
func checkWire(t *testing.T, srv *catalogtest.RESTServer, base string, allowed ...int) (tokens int) {
	t.Helper()
	for _, r := range srv.Requests() {
		switch {
		case r.Path == "/v1/oauth/tokens":
			tokens++
		case r.Path == "/v1/config":
		case !strings.HasPrefix(r.Path, base):
			t.Errorf("%s %s: not under %s", r.Method, r.Path, base)
		case r.Header.Get("Authorization") != "Bearer "+srv.Token:
			t.Errorf("%s %s: authorization %q, want the bearer token", r.Method, r.Path, r.Header.Get("Authorization"))
		case r.Status >= 400 && !slices.Contains(allowed, r.Status):
			t.Errorf("%s %s: status %d", r.Method, r.Path, r.Status)
		}
	}
	return tokens
}

// TestRESTIndexLifecycle builds, queries and syncs an index on a REST
// catalog opened with an OAuth2 client credential and scope, a warehouse,
// for which the server's config names the path prefix, and a property: a
// build, lookups of present and absent values, an append and a sync. The
// statistics files are committed in the server's catalog, and on the wire
// the client asked for tokens with the scope, got one per session and sent
// it, under the prefix, on every later request, with the header the
// property sets.
func TestRESTIndexLifecycle(t *testing.T) {
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "analytics", Warehouse: "lake"})
	cat := openREST(t, catalog.Options{
		URI: srv.URL, Credential: srv.Credential, Scope: "catalog:lake", Warehouse: "lake",
		Properties: []string{"header.X-Tenant=acme"},
	})
	ctx := t.Context()
	tbl := restTable(t, cat)
	var files []string
	for k := range int64(2) {
		var f string
		tbl, f = restAppend(t, tbl, k)
		files = append(files, f)
	}

	sum, err := indexer.Build(ctx, cat, restEvents, indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 || sum.Blobs != 2 {
		t.Fatalf("build %+v, want both files indexed", sum)
	}
	tbl = restLoad(t, cat)
	checkLookup(t, tbl, "id", 8, files[0])
	checkLookup(t, tbl, "id", 9, files[1])
	checkLookup(t, tbl, "id", 10) // 4j+2: in no file
	backing, err := srv.Catalog.LoadTable(ctx, restEvents)
	if err != nil {
		t.Fatal(err)
	}
	if got := statisticsPaths(backing); len(got) != 1 || got[0] != sum.StatisticsPath {
		t.Fatalf("the server's catalog has statistics files %v, want the build's %s", got, sum.StatisticsPath)
	}

	_, f := restAppend(t, tbl, 2)
	files = append(files, f)
	sum, err = indexer.Sync(ctx, cat, restEvents, indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 1 || sum.FilesCovered != 2 || sum.Segments != 2 {
		t.Fatalf("sync %+v, want the appended file indexed as a second segment", sum)
	}
	tbl = restLoad(t, cat)
	checkLookup(t, tbl, "id", 10, files[2])
	checkLookup(t, tbl, "id", 11) // 4j+3
	checkLookup(t, tbl, "id", 8, files[0])

	var config []string
	for _, r := range srv.Requests() {
		switch {
		case r.Path == "/v1/config":
			config = append(config, r.Query)
		case r.Path == "/v1/oauth/tokens" && (r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "catalog:lake"):
			t.Errorf("token request %v, want the client credentials grant for scope catalog:lake", r.Form)
		}
		if r.Header.Get("X-Tenant") != "acme" {
			t.Errorf("%s %s: no X-Tenant header from the header.X-Tenant property", r.Method, r.Path)
		}
	}
	if !slices.Equal(config, []string{"warehouse=lake"}) {
		t.Errorf("config requests with queries %q, want one naming the warehouse", config)
	}
	// iceberg-go fetches the config with a session of its own, and then
	// makes the catalog's session: each gets a token, which it keeps.
	if tokens := checkWire(t, srv, "/v1/analytics/"); tokens != 2 {
		t.Errorf("%d token requests, want 2: one for the config, one for the catalog's session", tokens)
	}
}

// TestRESTTokenAndPrefix opens the catalog with a bearer token and the path
// prefix as --token and --rest-prefix give them, on a server whose config
// does not name its prefix: the client uses both, never asks for a token,
// and without the prefix finds no route.
func TestRESTTokenAndPrefix(t *testing.T) {
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "wh1"})
	cat := openREST(t, catalog.Options{URI: srv.URL, Token: srv.Token, Prefix: "wh1"})
	_, f := restAppend(t, restTable(t, cat), 0)
	if _, err := indexer.Build(t.Context(), cat, restEvents, indexer.Options{Columns: []string{"id2"}}); err != nil {
		t.Fatal(err)
	}
	tbl := restLoad(t, cat)
	checkLookup(t, tbl, "id2", 1004, f)
	checkLookup(t, tbl, "id2", 1005)
	if tokens := checkWire(t, srv, "/v1/wh1/"); tokens != 0 {
		t.Errorf("%d token requests with a token given", tokens)
	}

	noPrefix := openREST(t, catalog.Options{URI: srv.URL, Token: srv.Token})
	_, err := noPrefix.LoadTable(t.Context(), restEvents)
	if !errors.Is(err, rest.ErrBadRequest) || !strings.Contains(err.Error(), "served under /v1/wh1/") {
		t.Errorf("without the prefix: %v, want a bad request naming the prefix", err)
	}
}

// TestRESTBadCredentials: a credential, token or warehouse the server
// refuses fails catalog.Open with an error naming the catalog and the
// problem; with no credential at all, Open succeeds (the config needs none)
// and the first table request is refused.
func TestRESTBadCredentials(t *testing.T) {
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "p", Warehouse: "lake"})
	t.Setenv("HOME", t.TempDir())
	id, _, _ := strings.Cut(srv.Credential, ":")
	tests := []struct {
		name string
		o    catalog.Options
		is   error
		want string
	}{
		{"wrong secret", catalog.Options{Credential: id + ":wrong"}, rest.ErrOAuthError,
			fmt.Sprintf(`invalid_client: unknown client %q or wrong client secret`, id)},
		{"unknown client", catalog.Options{Credential: "nobody:" + srv.Credential}, rest.ErrOAuthError, `unknown client "nobody"`},
		{"wrong token", catalog.Options{Token: "stale"}, rest.ErrUnauthorized, "NotAuthorizedException: wrong bearer token"},
		{"unknown warehouse", catalog.Options{Token: srv.Token, Warehouse: "swamp"}, rest.ErrRESTError,
			`NoSuchWarehouseException: warehouse "swamp" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Type, tt.o.URI = "rest", srv.URL
			cat, err := catalog.Open(t.Context(), tt.o)
			if err == nil {
				cat.(icecatalog.Closer).Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `open catalog "default"`) {
				t.Errorf("Open: %v\nwant an error (%v) about catalog default containing %q", err, tt.is, tt.want)
			}
		})
	}

	anonymous := openREST(t, catalog.Options{URI: srv.URL, Warehouse: "lake"})
	_, err := anonymous.LoadTable(t.Context(), restEvents)
	if !errors.Is(err, rest.ErrUnauthorized) || !strings.Contains(err.Error(), "missing or wrong bearer token") {
		t.Errorf("LoadTable without credentials: %v, want unauthorized", err)
	}
}

// TestRESTCatalogOperations: the namespace and table calls icebloom's work
// relies on answer through the REST client as iceberg-go's catalog errors,
// and a commit whose requirement fails is refused with 409 as a conflict.
func TestRESTCatalogOperations(t *testing.T) {
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	cat := openREST(t, catalog.Options{URI: srv.URL, Token: srv.Token})
	ctx := t.Context()

	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		t.Errorf("CreateNamespace(db) = %v, want ErrNamespaceAlreadyExists", err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ops"}, iceberg.Properties{"owner": "ops"}); err != nil {
		t.Fatal(err)
	}
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 2 {
		t.Errorf("ListNamespaces = %v, %v; want db and ops", nss, err)
	}
	if props, err := cat.LoadNamespaceProperties(ctx, table.Identifier{"ops"}); err != nil || props["owner"] != "ops" {
		t.Errorf("LoadNamespaceProperties(ops) = %v, %v", props, err)
	}
	for ns, want := range map[string]bool{"ops": true, "missing": false} {
		if ok, err := cat.CheckNamespaceExists(ctx, table.Identifier{ns}); ok != want || err != nil {
			t.Errorf("CheckNamespaceExists(%s) = %v, %v; want %v", ns, ok, err, want)
		}
	}

	_, err = cat.LoadTable(ctx, restEvents)
	if !errors.Is(err, icecatalog.ErrNoSuchTable) || !strings.Contains(err.Error(), "NoSuchTableException") {
		t.Errorf("LoadTable of a missing table: %v, want ErrNoSuchTable", err)
	}
	tbl := restTable(t, cat)
	if _, err := cat.CreateTable(ctx, restEvents, tbl.Schema()); !errors.Is(err, icecatalog.ErrTableAlreadyExists) {
		t.Errorf("CreateTable of an existing table: %v, want ErrTableAlreadyExists", err)
	}
	var tables []table.Identifier
	for id, err := range cat.ListTables(ctx, table.Identifier{"db"}) {
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, id)
	}
	if len(tables) != 1 || !slices.Equal(tables[0], restEvents) {
		t.Errorf("ListTables(db) = %v", tables)
	}

	_, _, err = cat.CommitTable(ctx, restEvents,
		[]table.Requirement{table.AssertTableUUID(uuid.New())},
		[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})})
	if !errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "CommitFailedException: Requirement failed: UUID mismatch") {
		t.Errorf("commit with a failing requirement: %v, want a conflict", err)
	}
	if got := restLoad(t, cat); got.Properties()["k"] != "" || got.MetadataLocation() != tbl.MetadataLocation() {
		t.Error("the refused commit changed the table")
	}

	if err := cat.DropTable(ctx, restEvents); err != nil {
		t.Fatal(err)
	}
	if ok, err := cat.CheckTableExists(ctx, restEvents); ok || err != nil {
		t.Errorf("CheckTableExists after DropTable = %v, %v", ok, err)
	}
	var heads int
	for _, r := range srv.Requests() {
		if r.Method == "HEAD" {
			heads++
		}
	}
	if heads != 3 {
		t.Errorf("%d HEAD requests, want the 3 existence checks", heads)
	}
	checkWire(t, srv, "/v1/namespaces", 404, 409)
}

// restWriter is a Prepare setting a statistics file of one snapshot; it
// counts its calls and discards and keeps the tables it was called with.
type restWriter struct {
	dir      string
	snapshot int64
	tables   []*table.Table
	paths    []string
	discards int
}

func (w *restWriter) prepare(_ context.Context, tbl *table.Table) (catalog.StatisticsChange, func(), error) {
	w.tables = append(w.tables, tbl)
	path := filepath.Join(w.dir, fmt.Sprintf("stats-%d-%d.puffin", w.snapshot, len(w.tables)))
	if err := os.WriteFile(path, make([]byte, 1000), 0o644); err != nil {
		return catalog.StatisticsChange{}, nil, err
	}
	w.paths = append(w.paths, path)
	sf := table.StatisticsFile{
		SnapshotID: w.snapshot, StatisticsPath: path, FileSizeInBytes: 1000, FileFooterSizeInBytes: 200,
		BlobMetadata: []table.BlobMetadata{{Type: table.BlobType(index.BlobType), SnapshotID: w.snapshot, SequenceNumber: 1, Fields: []int32{1}}},
	}
	return catalog.StatisticsChange{Set: []table.StatisticsFile{sf}}, func() { w.discards++; os.Remove(path) }, nil
}

// commitStatuses returns the statuses of the commits to db.events srv got,
// in the order they arrived, from the first at or after request from on.
func commitStatuses(srv *catalogtest.RESTServer, from int) []int {
	var statuses []int
	for _, r := range srv.Requests()[from:] {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/namespaces/db/tables/events") {
			statuses = append(statuses, r.Status)
		}
	}
	return statuses
}

// TestRESTCommitStatisticsConflict: two writers with catalog clients of
// their own commit statistics of different snapshots at once. The second
// commits while the server is committing the first, which loses the race:
// the server answers 409, the REST client reports table.ErrCommitFailed,
// and CommitStatistics discards the attempt's file, reloads the table (now
// with the other writer's file) and commits again. Both files end up in the
// table.
func TestRESTCommitStatisticsConflict(t *testing.T) {
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{})
	o := catalog.Options{URI: srv.URL, Credential: srv.Credential}
	catA, catB := openREST(t, o), openREST(t, o)
	tbl := restTable(t, catA)
	var snapshots []int64
	for k := range int64(2) {
		tbl, _ = restAppend(t, tbl, k)
		snapshots = append(snapshots, tbl.CurrentSnapshot().SnapshotID)
	}
	dir := t.TempDir()
	a, b := &restWriter{dir: dir, snapshot: snapshots[0]}, &restWriter{dir: dir, snapshot: snapshots[1]}
	var raced atomic.Bool
	srv.BeforeCommit = func(table.Identifier) {
		if raced.CompareAndSwap(false, true) {
			if _, err := catalog.CommitStatistics(t.Context(), catB, restEvents, b.prepare); err != nil {
				t.Error(err)
			}
		}
	}
	from := len(srv.Requests())
	var waits []time.Duration
	_, err := catalog.CommitStatistics(t.Context(), catA, restEvents, a.prepare, catalog.WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}

	if got := commitStatuses(srv, from); !slices.Equal(got, []int{409, 200, 200}) {
		t.Errorf("commit statuses %v, want A's refused, B's and A's retry committed", got)
	}
	if len(a.tables) != 2 || a.discards != 1 || len(b.tables) != 1 || len(waits) != 1 {
		t.Fatalf("A prepared %d times, discarded %d, waited %d times; B prepared %d times; want 2, 1, 1; 1",
			len(a.tables), a.discards, len(waits), len(b.tables))
	}
	if _, err := os.Stat(a.paths[0]); !os.IsNotExist(err) {
		t.Errorf("A's refused attempt left its file: %v", err)
	}
	if !slices.Contains(statisticsPaths(a.tables[1]), b.paths[0]) {
		t.Error("A's retry did not get the table with B's statistics")
	}
	backing, err := srv.Catalog.LoadTable(t.Context(), restEvents)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statisticsPaths(backing), []string{b.paths[0], a.paths[1]}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("statistics files %v, want B's and A's retry's %v", got, want)
	}
}

// TestRESTConcurrentSyncs: two syncs of the same snapshot, indexing
// different columns, commit at once through REST. The second commits while
// the server is committing the first; that one is refused with 409, and
// its retry carries the other's entries into the snapshot's one statistics
// file, so lookups on both columns prune.
func TestRESTConcurrentSyncs(t *testing.T) {
	srv := catalogtest.NewRESTServer(t, catalogtest.RESTConfig{Prefix: "p", Warehouse: "lake"})
	o := catalog.Options{URI: srv.URL, Credential: srv.Credential, Warehouse: "lake"}
	catA, catB := openREST(t, o), openREST(t, o)
	tbl := restTable(t, catA)
	var files []string
	for k := range int64(2) {
		var f string
		tbl, f = restAppend(t, tbl, k)
		files = append(files, f)
	}
	var raced atomic.Bool
	srv.BeforeCommit = func(table.Identifier) {
		if raced.CompareAndSwap(false, true) {
			if _, err := indexer.Sync(t.Context(), catB, restEvents, indexer.Options{Columns: []string{"id2"}}); err != nil {
				t.Error(err)
			}
		}
	}
	from := len(srv.Requests())
	sum, err := indexer.Sync(t.Context(), catA, restEvents, indexer.Options{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesIndexed != 2 {
		t.Fatalf("sync %+v", sum)
	}
	if got := commitStatuses(srv, from); !slices.Equal(got, []int{409, 200, 200}) {
		t.Errorf("commit statuses %v, want A's refused, B's and A's retry committed", got)
	}
	tbl = restLoad(t, catA)
	if n := len(statisticsPaths(tbl)); n != 1 {
		t.Fatalf("%d statistics files, want the snapshot's one", n)
	}
	checkLookup(t, tbl, "id", 4, files[0])
	checkLookup(t, tbl, "id2", 1005, files[1])
	checkLookup(t, tbl, "id", 6)
	checkLookup(t, tbl, "id2", 1006)
	checkWire(t, srv, "/v1/p/", 409)
}
