package restspec

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const tablePath = "/v1/namespaces/db/tables/events"

// metadata is a table of every primitive type, partitioned by several of
// them (spec 0) and by nothing (spec 1).
const metadata = `{
  "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "s3://b/t",
  "current-schema-id": 0,
  "schemas": [{"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": true, "type": "long"},
    {"id": 2, "name": "name", "required": false, "type": "string"},
    {"id": 3, "name": "day", "required": false, "type": "date"},
    {"id": 4, "name": "score", "required": false, "type": "double"},
    {"id": 5, "name": "cat", "required": false, "type": "int"},
    {"id": 6, "name": "ts", "required": false, "type": "timestamp"},
    {"id": 7, "name": "tstz", "required": false, "type": "timestamptz"},
    {"id": 8, "name": "price", "required": false, "type": "decimal(9,2)"},
    {"id": 9, "name": "blob", "required": false, "type": "binary"},
    {"id": 10, "name": "code", "required": false, "type": "fixed[3]"},
    {"id": 11, "name": "u", "required": false, "type": "uuid"},
    {"id": 12, "name": "t", "required": false, "type": "time"},
    {"id": 13, "name": "ok", "required": false, "type": "boolean"},
    {"id": 14, "name": "loc", "required": false, "type": {"type": "struct", "fields": [
      {"id": 15, "name": "lat", "required": false, "type": "float"}]}}
  ]}],
  "default-spec-id": 0,
  "partition-specs": [
    {"spec-id": 0, "fields": [
      {"source-id": 3, "field-id": 1000, "name": "day", "transform": "identity"},
      {"source-id": 4, "field-id": 1001, "name": "score", "transform": "identity"},
      {"source-id": 6, "field-id": 1002, "name": "ts", "transform": "identity"},
      {"source-id": 7, "field-id": 1003, "name": "tstz", "transform": "identity"},
      {"source-id": 8, "field-id": 1004, "name": "price", "transform": "identity"},
      {"source-id": 9, "field-id": 1005, "name": "blob", "transform": "identity"},
      {"source-id": 10, "field-id": 1006, "name": "code", "transform": "identity"},
      {"source-id": 11, "field-id": 1007, "name": "u", "transform": "identity"},
      {"source-id": 1, "field-id": 1008, "name": "id_bucket", "transform": "bucket[16]"},
      {"source-id": 6, "field-id": 1009, "name": "ts_day", "transform": "day"},
      {"source-id": 12, "field-id": 1010, "name": "t", "transform": "identity"}]},
    {"spec-id": 1, "fields": []}]
}`

// goodPlan is a completed plan that keeps every rule: two tasks, one with
// a position and an equality delete, partition values in each type's
// single-value form, bounds in uppercase hex, residuals of each kind.
const goodPlan = `{
  "status": "completed", "plan-id": "p1", "plan-tasks": ["t1"],
  "delete-files": [
    {"spec-id": 0, "content": "position-deletes", "file-path": "s3://b/t/d1.parquet", "file-format": "parquet",
     "partition": ["2022-01-09", 2.0, "2022-01-09T10:30:00.000000", "2022-01-09T10:30:00.123456+00:00", "12.50", "0AFF", "78797A",
                   "eb26bdb1-a1d8-4aa6-990e-da940875492c", 3, "2022-01-09", "10:30:00.5"],
     "file-size-in-bytes": 100, "record-count": 2, "referenced-data-file": "s3://b/t/a.parquet"},
    {"spec-id": 1, "content": "equality-deletes", "file-path": "s3://b/t/e1.parquet", "file-format": "parquet",
     "partition": [], "file-size-in-bytes": 100, "record-count": 2, "equality-ids": [1]},
    {"spec-id": 1, "content": "position-deletes", "file-path": "s3://b/t/dv.puffin", "file-format": "puffin",
     "partition": [], "file-size-in-bytes": 100, "record-count": 2, "content-offset": 4, "content-size-in-bytes": 40,
     "referenced-data-file": "s3://b/t/b.parquet"}
  ],
  "file-scan-tasks": [
    {"data-file": {"spec-id": 0, "content": "data", "file-path": "s3://b/t/a.parquet", "file-format": "parquet",
       "partition": ["2022-01-09", 2.5, "2022-01-09T10:30:00", "2022-01-09T10:30:00+00:00", "-0.50", "", "000000",
                     "eb26bdb1-a1d8-4aa6-990e-da940875492c", 0, null, null],
       "file-size-in-bytes": 1000, "record-count": 10, "split-offsets": [4], "sort-order-id": 0, "key-metadata": "0A0B",
       "value-counts": {"keys": [1, 4], "values": [10, 10]},
       "lower-bounds": {"keys": [1, 4, 3], "values": ["0100000000000000", "000000000000F03F", "3A4A0000"]},
       "upper-bounds": {"keys": [2], "values": ["7A7A"]}},
     "delete-file-references": [0, 1],
     "residual-filter": {"type": "and",
       "left": {"type": "or", "left": {"type": "eq", "term": "score", "value": 2.0}, "right": {"type": "in", "term": "day", "values": ["2022-01-09", "2022-01-10"]}},
       "right": {"type": "not", "child": {"type": "is-null", "term": "name"}}}},
    {"data-file": {"spec-id": 1, "content": "data", "file-path": "s3://b/t/b.parquet", "file-format": "parquet",
       "partition": [], "file-size-in-bytes": 1000, "record-count": 10},
     "delete-file-references": [2],
     "residual-filter": true}
  ],
  "storage-credentials": [{"prefix": "s3://b/", "config": {"s3.access-key-id": "k"}}]
}`

func mustTable(t *testing.T) *Table {
	t.Helper()
	tbl, err := ParseTable([]byte(metadata))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestGoodAnswersPass: a correct answer of each route passes.
func TestGoodAnswersPass(t *testing.T) {
	tbl := mustTable(t)
	for _, c := range []struct {
		method, target string
		status         int
		body           string
	}{
		{"GET", "/v1/config", 200, `{"defaults": {}, "overrides": {"warehouse": "w"}, "endpoints": ["GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"], "idempotency-key-lifetime": "PT30M"}`},
		{"GET", "/v1/namespaces", 200, `{"namespaces": [["a"], ["b", "c"]], "next-page-token": null}`},
		{"GET", "/v1/namespaces?pageToken=&pageSize=2", 200, `{"namespaces": [["a"]], "next-page-token": "x"}`},
		{"GET", "/v1/namespaces/db", 200, `{"namespace": ["db"], "properties": null}`},
		{"GET", "/v1/namespaces/db/tables", 200, `{"identifiers": [{"namespace": ["db"], "name": "events"}]}`},
		{"GET", tablePath, 200, `{"metadata-location": "s3://b/t/m.json", "metadata": ` + metadata + `, "config": {"scan-planning-mode": "server"}}`},
		{"POST", tablePath + "/plan", 200, goodPlan},
		{"POST", tablePath + "/plan", 200, `{"status": "submitted", "plan-id": "p2"}`},
		{"POST", tablePath + "/plan", 200, `{"status": "failed", "error": {"message": "m", "type": "T", "code": 500}}`},
		{"GET", tablePath + "/plan/p1", 200, strings.Replace(goodPlan, `"plan-id": "p1", `, "", 1)},
		{"GET", tablePath + "/plan/p1", 200, `{"status": "cancelled"}`},
		{"GET", tablePath + "/plan/p1", 200, `{"status": "submitted"}`},
		{"DELETE", tablePath + "/plan/p1", 204, ``},
		{"POST", tablePath + "/tasks", 200, strings.Replace(strings.Replace(goodPlan, `"status": "completed", "plan-id": "p1", `, "", 1), `"storage-credentials"`, `"x-extension"`, 1)},
		{"POST", tablePath + "/tasks", 200, `{"plan-tasks": ["t2"]}`},
		{"GET", tablePath + "/plan/nope", 404, `{"error": {"message": "no plan", "type": "NoSuchPlanIdException", "code": 404}}`},
		{"POST", tablePath + "/plan", 503, `{"error": {"message": "down", "type": "ServiceUnavailableException", "code": 503, "stack": ["a"]}}`},
		{"GET", "/metrics", 200, `not json, not a spec route`},
		{"HEAD", tablePath, 404, ``},
	} {
		if err := Check(c.method, c.target, c.status, []byte(c.body), tbl); err != nil {
			t.Errorf("%s %s %d: %v", c.method, c.target, c.status, err)
		}
	}
}

// TestViolationsCaught: each broken answer is refused, naming the field
// and the rule.
func TestViolationsCaught(t *testing.T) {
	tbl := mustTable(t)
	plan := func(old, new string) string {
		if !strings.Contains(goodPlan, old) {
			t.Fatalf("the good plan has no %s", old)
		}
		return strings.Replace(goodPlan, old, new, 1)
	}
	for _, c := range []struct {
		name, method, target string
		status               int
		body                 string
		field, rule          string
	}{
		{"missing residual-filter", "POST", tablePath + "/plan", 200, plan(`,
     "residual-filter": true}`, `}`), "file-scan-tasks[1].residual-filter", "residual-filter is required"},
		{"an integer for a double partition", "POST", tablePath + "/plan", 200, plan(`"2022-01-09", 2.5,`, `"2022-01-09", 2,`),
			"file-scan-tasks[0].data-file.partition[1]", "DoubleTypeValue"},
		{"an integer for a double literal", "POST", tablePath + "/plan", 200, plan(`"value": 2.0`, `"value": 2`),
			"file-scan-tasks[0].residual-filter.left.left.value", "DoubleTypeValue"},
		{"lowercase hex bound", "POST", tablePath + "/plan", 200, plan(`"000000000000F03F"`, `"000000000000f03f"`),
			"file-scan-tasks[0].data-file.lower-bounds.values[1]", "uppercase"},
		{"lowercase hex binary partition", "POST", tablePath + "/plan", 200, plan(`"0AFF"`, `"0aff"`),
			"delete-files[0].partition[5]", "BinaryTypeValue"},
		{"lowercase key-metadata", "POST", tablePath + "/plan", 200, plan(`"key-metadata": "0A0B"`, `"key-metadata": "0a0b"`),
			"file-scan-tasks[0].data-file.key-metadata", "BinaryTypeValue"},
		{"a bound of the wrong width", "POST", tablePath + "/plan", 200, plan(`"3A4A0000"`, `"3A4A"`),
			"file-scan-tasks[0].data-file.lower-bounds.values[2]", "4 bytes"},
		{"fixed of the wrong length", "POST", tablePath + "/plan", 200, plan(`"78797A"`, `"7879"`),
			"delete-files[0].partition[6]", "FixedTypeValue"},
		{"timestamp with a space", "POST", tablePath + "/plan", 200, plan(`"2022-01-09T10:30:00.000000"`, `"2022-01-09 10:30:00.000000"`),
			"delete-files[0].partition[2]", "TimestampTypeValue"},
		{"timestamptz without offset", "POST", tablePath + "/plan", 200, plan(`"2022-01-09T10:30:00.123456+00:00"`, `"2022-01-09T10:30:00.123456"`),
			"delete-files[0].partition[3]", "TimestampTzTypeValue"},
		{"timestamptz with Z", "POST", tablePath + "/plan", 200, plan(`"2022-01-09T10:30:00+00:00"`, `"2022-01-09T10:30:00Z"`),
			"file-scan-tasks[0].data-file.partition[3]", "TimestampTzTypeValue"},
		{"decimal as a number", "POST", tablePath + "/plan", 200, plan(`"12.50"`, `12.50`), "delete-files[0].partition[4]", "DecimalTypeValue"},
		{"decimal at another scale", "POST", tablePath + "/plan", 200, plan(`"12.50"`, `"12.5"`), "delete-files[0].partition[4]", "scale 2"},
		{"uppercase uuid", "POST", tablePath + "/plan", 200, plan(`"eb26bdb1-a1d8-4aa6-990e-da940875492c", 3`, `"EB26BDB1-A1D8-4AA6-990E-DA940875492C", 3`),
			"delete-files[0].partition[7]", "UUIDTypeValue"},
		{"date as days", "POST", tablePath + "/plan", 200, plan(`"values": ["2022-01-09", "2022-01-10"]`, `"values": [19001, "2022-01-10"]`),
			"file-scan-tasks[0].residual-filter.left.right.values[0]", "DateTypeValue"},
		{"day transform as an int", "POST", tablePath + "/plan", 200, plan(`3, "2022-01-09", "10:30:00.5"`, `3, 19001, "10:30:00.5"`),
			"delete-files[0].partition[9]", "DateTypeValue"},
		{"time with a 7-digit fraction", "POST", tablePath + "/plan", 200, plan(`"10:30:00.5"`, `"10:30:00.1234567"`),
			"delete-files[0].partition[10]", "TimeTypeValue"},
		{"a string for a bucket", "POST", tablePath + "/plan", 200, plan(`3, "2022-01-09"`, `"3", "2022-01-09"`),
			"delete-files[0].partition[8]", "IntegerTypeValue"},
		{"partition of the wrong arity", "POST", tablePath + "/plan", 200, plan(`"partition": [], "file-size-in-bytes": 1000`, `"partition": [1], "file-size-in-bytes": 1000`),
			"file-scan-tasks[1].data-file.partition", "each of the 0 fields"},
		{"unknown spec", "POST", tablePath + "/plan", 200, plan(`{"spec-id": 1, "content": "data"`, `{"spec-id": 7, "content": "data"`),
			"file-scan-tasks[1].data-file.spec-id", "partition spec"},
		{"unknown status", "POST", tablePath + "/plan", 200, plan(`"status": "completed"`, `"status": "done"`), "status", "PlanStatus"},
		{"cancelled from planTableScan", "POST", tablePath + "/plan", 200, `{"status": "cancelled"}`, "status", "invalid for this endpoint"},
		{"completed without a plan-id", "POST", tablePath + "/plan", 200, plan(`"plan-id": "p1", `, ``), "plan-id", "CompletedPlanningWithIDResult requires plan-id"},
		{"submitted without a plan-id", "POST", tablePath + "/plan", 200, `{"status": "submitted"}`, "plan-id", "AsyncPlanningResult requires plan-id"},
		{"tasks with submitted", "GET", tablePath + "/plan/p1", 200, `{"status": "submitted", "plan-tasks": ["t"]}`, "plan-tasks", "only when the status is completed"},
		{"failed without error", "GET", tablePath + "/plan/p1", 200, `{"status": "failed"}`, "error", "FailedPlanningResult requires error"},
		{"dangling delete-file reference", "POST", tablePath + "/plan", 200, plan(`"delete-file-references": [2]`, `"delete-file-references": [3]`),
			"file-scan-tasks[1].delete-file-references[0]", "indices into delete-files"},
		{"unreferenced delete file", "POST", tablePath + "/plan", 200, plan(`"delete-file-references": [0, 1]`, `"delete-file-references": [0]`),
			"delete-files[1]", "no task references"},
		{"delete files without tasks", "POST", tablePath + "/tasks", 200, `{"plan-tasks": ["t"], "delete-files": [{"spec-id": 1, "content": "equality-deletes", "file-path": "e", "file-format": "parquet", "partition": [], "file-size-in-bytes": 1, "record-count": 1, "equality-ids": [1]}]}`,
			"delete-files", "only with the file scan tasks"},
		{"a data file among deletes", "POST", tablePath + "/plan", 200, plan(`"content": "equality-deletes"`, `"content": "data"`), "delete-files[1].content", "position-deletes or equality-deletes"},
		{"an uppercase content", "POST", tablePath + "/plan", 200, plan(`"content": "data", "file-path": "s3://b/t/a.parquet"`, `"content": "DATA", "file-path": "s3://b/t/a.parquet"`),
			"file-scan-tasks[0].data-file.content", "content is data"},
		{"an uppercase file format", "POST", tablePath + "/plan", 200, plan(`"file-path": "s3://b/t/a.parquet", "file-format": "parquet"`, `"file-path": "s3://b/t/a.parquet", "file-format": "PARQUET"`),
			"file-scan-tasks[0].data-file.file-format", "FileFormat"},
		{"a missing record count", "POST", tablePath + "/plan", 200, plan(`"file-size-in-bytes": 1000, "record-count": 10, "split-offsets"`, `"file-size-in-bytes": 1000, "split-offsets"`),
			"file-scan-tasks[0].data-file.record-count", "DataFile requires record-count"},
		{"a deletion vector without its offset", "POST", tablePath + "/plan", 200, plan(`"content-offset": 4, "content-size-in-bytes": 40,`, ``),
			"delete-files[2].content-offset", "deletion vector"},
		{"equality deletes without ids", "POST", tablePath + "/plan", 200, plan(`, "equality-ids": [1]`, ``), "delete-files[1].equality-ids", "equality_ids"},
		{"count map of unequal lengths", "POST", tablePath + "/plan", 200, plan(`"values": [10, 10]`, `"values": [10]`),
			"file-scan-tasks[0].data-file.value-counts", "as many"},
		{"a residual on an unknown column", "POST", tablePath + "/plan", 200, plan(`"term": "name"`, `"term": "nope"`),
			"file-scan-tasks[0].residual-filter.right.child.term", "names a field"},
		{"a residual of an unknown kind", "POST", tablePath + "/plan", 200, plan(`"type": "is-null"`, `"type": "is-empty"`),
			"file-scan-tasks[0].residual-filter.right.child.type", "ExpressionType"},
		{"a deprecated true residual", "POST", tablePath + "/plan", 200, plan(`"residual-filter": true`, `"residual-filter": {"type": "true"}`),
			"file-scan-tasks[1].residual-filter.type", "deprecated"},
		{"a left/right comparison", "POST", tablePath + "/plan", 200, plan(`{"type": "eq", "term": "score", "value": 2.0}`, `{"type": "eq", "left": {"type": "reference", "name": "score"}, "right": 2.0}`),
			"file-scan-tasks[0].residual-filter.left.left.term", "reads term and value"},
		{"an unknown field in a closed predicate", "POST", tablePath + "/plan", 200, plan(`"term": "score", "value": 2.0`, `"term": "score", "value": 2.0, "extra": 1`),
			"file-scan-tasks[0].residual-filter.left.left.extra", "additionalProperties: false"},
		{"a credential without config", "POST", tablePath + "/plan", 200, plan(`{"prefix": "s3://b/", "config": {"s3.access-key-id": "k"}}`, `{"prefix": "s3://b/"}`),
			"storage-credentials[0].config", "StorageCredential requires config"},
		{"null key-metadata", "POST", tablePath + "/plan", 200, plan(`"key-metadata": "0A0B"`, `"key-metadata": null`),
			"file-scan-tasks[0].data-file.key-metadata", "not nullable"},
		{"tasks answer of neither", "POST", tablePath + "/tasks", 200, `{}`, "", "cannot both be null"},
		{"error code mismatch", "GET", tablePath + "/plan/nope", 404, `{"error": {"message": "m", "type": "NoSuchPlanIdException", "code": 400}}`, "error.code", "HTTP response code, 404"},
		{"error without type", "GET", tablePath, 401, `{"error": {"message": "m", "code": 401}}`, "error.type", "ErrorModel requires type"},
		{"error not wrapped", "GET", tablePath, 404, `{"message": "m", "type": "NoSuchTableException", "code": 404}`, "message", "IcebergErrorResponse allows no field"},
		{"error as plain text", "POST", tablePath + "/plan", 503, `shutting down`, "", "IcebergErrorResponse"},
		{"a status the route does not list", "POST", tablePath + "/plan", 429, `{"error": {"message": "m", "type": "SlowDownException", "code": 429}}`, "", "status 429 is not an answer"},
		{"config without overrides", "GET", "/v1/config", 200, `{"defaults": {}}`, "overrides", "CatalogConfig requires overrides"},
		{"config endpoint with two spaces", "GET", "/v1/config", 200, `{"defaults": {}, "overrides": {}, "endpoints": ["GET  /v1/config"]}`, "endpoints[0]", "one space"},
		{"config value not a string", "GET", "/v1/config", 200, `{"defaults": {"a": 1}, "overrides": {}}`, "defaults.a", "string"},
		{"a page token without pageToken", "GET", "/v1/namespaces/db/tables?pageSize=3", 200, `{"identifiers": [], "next-page-token": "x"}`, "next-page-token", "PageToken"},
		{"duplicate namespaces", "GET", "/v1/namespaces", 200, `{"namespaces": [["a"], ["a"]]}`, "namespaces[1]", "uniqueItems"},
		{"identifier without a name", "GET", "/v1/namespaces/db/tables", 200, `{"identifiers": [{"namespace": ["db"]}]}`, "identifiers[0].name", "TableIdentifier requires name"},
		{"load table without metadata", "GET", tablePath, 200, `{"metadata-location": "m"}`, "metadata", "LoadTableResult requires metadata"},
		{"planning mode of another value", "GET", tablePath, 200, `{"metadata": ` + metadata + `, "config": {"scan-planning-mode": "remote"}}`, "config.scan-planning-mode", "client or server"},
		{"namespace without its name", "GET", "/v1/namespaces/db", 200, `{"properties": {}}`, "namespace", "GetNamespaceResponse requires namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.method, c.target, c.status, []byte(c.body), tbl)
			var vs Violations
			if !errors.As(err, &vs) {
				t.Fatalf("passed, or failed otherwise (%v); want a violation of %s", err, c.field)
			}
			for _, v := range vs {
				if v.Field == c.field && strings.Contains(v.Rule, c.rule) {
					return
				}
			}
			t.Fatalf("no violation of %s saying %q; got:\n%v", c.field, c.rule, err)
		})
	}
}

// TestCheckerTypesPlansByTheLoadAnswer: a Checker types a plan answer by
// the metadata of the load-table answer it checked before, and refuses to
// check one of a table it has not seen.
func TestCheckerTypesPlansByTheLoadAnswer(t *testing.T) {
	k := NewChecker()
	bad := strings.Replace(goodPlan, `"2022-01-09", 2.5,`, `"2022-01-09", 2,`, 1)
	if err := k.Check("POST", tablePath+"/plan", 200, []byte(bad)); err == nil || errors.As(err, new(Violations)) {
		t.Fatalf("a plan of an unseen table: %v, want an error that is no violation", err)
	}
	if err := k.Check("GET", tablePath, 200, []byte(`{"metadata": `+metadata+`}`)); err != nil {
		t.Fatal(err)
	}
	if err := k.Check("POST", tablePath+"/plan", 200, []byte(goodPlan)); err != nil {
		t.Fatalf("the good plan: %v", err)
	}
	if err := k.Check("POST", tablePath+"/plan", 200, []byte(bad)); !errors.As(err, new(Violations)) {
		t.Fatalf("an integer for a double once the table is known: %v", err)
	}
}

// TestRouteOf: routes with and without a prefix; paths outside the spec
// are not matched.
func TestRouteOf(t *testing.T) {
	for _, c := range []struct{ method, target, op, table string }{
		{"GET", "/v1/config?warehouse=w", "getConfig", ""},
		{"GET", "/v1/cat/namespaces", "listNamespaces", ""},
		{"GET", "/v1/namespaces/a%1Fb/tables", "listTables", ""},
		{"GET", "/v1/cat/namespaces/db/tables/t", "loadTable", "/v1/cat/namespaces/db/tables/t"},
		{"POST", "/v1/namespaces/db/tables/t/plan", "planTableScan", "/v1/namespaces/db/tables/t"},
		{"GET", "/v1/namespaces/db/tables/t/plan/x", "fetchPlanningResult", "/v1/namespaces/db/tables/t"},
		{"DELETE", "/v1/namespaces/db/tables/t/plan/x", "cancelPlanning", "/v1/namespaces/db/tables/t"},
		{"POST", "/v1/namespaces/db/tables/t/tasks", "fetchScanTasks", "/v1/namespaces/db/tables/t"},
		{"GET", "/metrics", "", ""},
		{"GET", "/v1/namespaces/db/views/v", "", ""},
		{"PUT", "/v1/config", "", ""},
	} {
		r, ok := RouteOf(c.method, c.target)
		if ok != (c.op != "") || r.Operation != c.op || r.Table != c.table {
			t.Errorf("%s %s: %q %q %v, want %q %q", c.method, c.target, r.Operation, r.Table, ok, c.op, c.table)
		}
	}
}

// TestRecorderChecksAndCaptures: a wrapped handler's answers are checked
// (a plan before any load is typed by a load the recorder makes itself,
// with the request's Authorization) and captured in the format the Java
// checker reads, the load first.
func TestRecorderChecksAndCaptures(t *testing.T) {
	// The handler and Report run on the server's goroutines.
	var mu sync.Mutex
	var loads []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == tablePath:
			mu.Lock()
			loads = append(loads, r.Header.Get("Authorization"))
			mu.Unlock()
			io.WriteString(w, `{"metadata": `+metadata+`}`)
		case r.URL.Path == tablePath+"/plan":
			io.WriteString(w, strings.Replace(goodPlan, `"2022-01-09", 2.5,`, `"2022-01-09", 2,`, 1))
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"error": {"message": "no", "type": "NoSuchTableException", "code": 400}}`)
		}
	})
	type report struct {
		ex  Exchange
		err error
	}
	var reports []report
	dir := t.TempDir()
	rec := &Recorder{Checker: NewChecker(), CaptureDir: dir, Report: func(ex Exchange, err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, report{ex, err})
	}}
	hs := httptest.NewServer(rec.Wrap(h))
	defer hs.Close()
	for _, c := range []struct{ method, path, body string }{
		{"POST", tablePath + "/plan", `{"filter": true}`},
		{"GET", "/v1/namespaces/db/tables/nope", ""},
		{"GET", "/metrics", ""},
	} {
		req, _ := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	hs.Close() // every handler has returned
	mu.Lock()
	defer mu.Unlock()
	if len(loads) != 1 || loads[0] != "Bearer tok" {
		t.Fatalf("the recorder's own loads: %q, want one with the request's token", loads)
	}
	if len(reports) != 3 {
		t.Fatalf("%d reports, want the load, the plan and the 404 (not /metrics): %+v", len(reports), reports)
	}
	wantErr := []string{"", "file-scan-tasks[0].data-file.partition[1]", "error.code"}
	for i, r := range reports {
		var vs Violations
		switch {
		case wantErr[i] == "" && r.err != nil:
			t.Errorf("%s %s: %v", r.ex.Method, r.ex.Target, r.err)
		case wantErr[i] != "" && (!errors.As(r.err, &vs) || vs[0].Field != wantErr[i]):
			t.Errorf("%s %s: %v, want a violation of %s", r.ex.Method, r.ex.Target, r.err, wantErr[i])
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f)[7:]) // without the process-wide sequence
	}
	want := []string{"GET-_v1_namespaces_db_tables_events.json", "POST-_v1_namespaces_db_tables_events_plan.json",
		"GET-_v1_namespaces_db_tables_nope.json", "GET-_metrics.json"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("captured %v, want %v", names, want)
	}
	var doc map[string]any
	b, _ := os.ReadFile(files[1])
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["method"] != "POST" || doc["path"] != tablePath+"/plan" || doc["status"] != 200.0 || doc["request"].(map[string]any)["filter"] != true ||
		doc["response"].(map[string]any)["status"] != "completed" || len(doc) != 5 {
		t.Fatalf("the plan's capture: %s", b)
	}
	if b, _ := os.ReadFile(files[3]); !strings.Contains(string(b), `"request":null`) {
		t.Fatalf("an empty request body is not captured as null: %s", b)
	}
}
