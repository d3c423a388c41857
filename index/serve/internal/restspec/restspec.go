// Package restspec checks REST answers against the Iceberg REST catalog
// specification, for tests.
//
// The rules are written by hand from the specification's OpenAPI file
// (open-api/rest-catalog-open-api.yaml in apache/iceberg) and from what
// Java's parsers require beyond it (RESTFileScanTaskParser,
// ContentFileParser, SingleValueParser, ExpressionParser and the response
// parsers of org.apache.iceberg.rest), Java being the strictest client.
// Each rule names the schema it checks. The file itself is not read: a
// schema engine would check shapes but not the single-value forms of typed
// values, which need the table's schema and partition specs.
//
// Check checks one answer; a Checker also remembers each table's metadata
// from the load-table answers it checks, so that the partition values,
// bounds and residual literals of later plan answers can be typed.
package restspec

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Violation is one way an answer departs from the specification.
type Violation struct {
	// Route is the operation the answer is for, as the spec names it
	// (operationId, e.g. planTableScan), with its HTTP status.
	Route string
	// Field is the JSON path of the offending value, e.g.
	// file-scan-tasks[0].data-file.partition[0]; "" for the whole body.
	Field string
	// Value is the offending JSON value, shortened.
	Value string
	// Rule says what the spec requires and names the schema.
	Rule string
}

func (v Violation) Error() string {
	field := v.Field
	if field == "" {
		field = "(body)"
	}
	return fmt.Sprintf("%s: %s = %s: %s", v.Route, field, v.Value, v.Rule)
}

// Violations is every violation found in one answer; Check returns it as
// its error.
type Violations []Violation

func (vs Violations) Error() string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.Error()
	}
	return strings.Join(lines, "\n")
}

// Route is a request target matched to an operation of the spec.
type Route struct {
	// Operation is the spec's operationId, e.g. loadTable.
	Operation string
	// Table is the escaped path of the route's table
	// (/v1/{prefix}/namespaces/{namespace}/tables/{table}), "" for routes
	// of no table. Checker keys table metadata by it.
	Table string
	// Method is the request's method.
	Method string
	// Query is the request's query parameters.
	Query url.Values
}

// operation is what the spec says of one route: the statuses it lists
// (every route also lists 5XX) and the schema of its success body.
type operation struct {
	statuses []int
	// body checks a 200 answer; nil when the 2xx answer has no body.
	body func(c *checker, v any)
}

// Statuses per operation, from each path's "responses" in the yaml.
var operations = map[string]operation{
	"getConfig":             {[]int{200, 400, 401, 403, 404, 419, 503}, checkCatalogConfig},
	"listNamespaces":        {[]int{200, 400, 401, 403, 404, 419, 503}, checkListNamespaces},
	"createNamespace":       {[]int{200, 400, 401, 403, 406, 409, 419, 503}, nil},
	"loadNamespaceMetadata": {[]int{200, 400, 401, 403, 404, 419, 503}, checkGetNamespace},
	"namespaceExists":       {[]int{204, 400, 401, 403, 404, 419, 503}, nil},
	"dropNamespace":         {[]int{204, 400, 401, 403, 404, 409, 419, 503}, nil},
	"listTables":            {[]int{200, 400, 401, 403, 404, 419, 503}, checkListTables},
	"createTable":           {[]int{200, 400, 401, 403, 404, 409, 419, 503}, nil},
	"loadTable":             {[]int{200, 304, 400, 401, 403, 404, 419, 503}, checkLoadTable},
	"updateTable":           {[]int{200, 400, 401, 403, 404, 409, 419, 500, 502, 503, 504}, checkCommitTable},
	"dropTable":             {[]int{204, 400, 401, 403, 404, 419, 503}, nil},
	"tableExists":           {[]int{204, 400, 401, 403, 404, 419, 503}, nil},
	"planTableScan":         {[]int{200, 400, 401, 403, 404, 406, 419, 503}, checkPlanTableScan},
	"fetchPlanningResult":   {[]int{200, 400, 401, 403, 404, 419, 503}, checkFetchPlanningResult},
	"cancelPlanning":        {[]int{204, 400, 401, 403, 404, 419, 503}, nil},
	"fetchScanTasks":        {[]int{200, 400, 401, 403, 404, 419, 503}, checkFetchScanTasks},
}

// RouteOf matches a request to the spec's operation. target is the escaped
// path with an optional query. It reports false for paths the spec does
// not define or that this package does not check (views, OAuth, metrics).
//
// As in the spec's paths, the first segment after /v1 is {prefix} unless
// it is one of the fixed words that may follow /v1.
func RouteOf(method, target string) (Route, bool) {
	path, rawQuery, _ := strings.Cut(target, "?")
	query, _ := url.ParseQuery(rawQuery)
	r := Route{Method: method, Query: query}
	if path == "/v1/config" {
		r.Operation = map[string]string{"GET": "getConfig"}[method]
		return r, r.Operation != ""
	}
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok {
		return r, false
	}
	segs := strings.Split(rest, "/")
	prefix := ""
	if len(segs) > 0 && segs[0] != "namespaces" {
		prefix, segs = segs[0]+"/", segs[1:]
	}
	if len(segs) == 0 || segs[0] != "namespaces" {
		return r, false
	}
	n := len(segs)
	switch {
	case n == 1:
		r.Operation = map[string]string{"GET": "listNamespaces", "POST": "createNamespace"}[method]
	case n == 2:
		r.Operation = map[string]string{"GET": "loadNamespaceMetadata", "HEAD": "namespaceExists", "DELETE": "dropNamespace"}[method]
	case segs[2] != "tables":
		return r, false
	case n == 3:
		r.Operation = map[string]string{"GET": "listTables", "POST": "createTable"}[method]
	default:
		r.Table = "/v1/" + prefix + strings.Join(segs[:4], "/")
		switch {
		case n == 4:
			r.Operation = map[string]string{"GET": "loadTable", "POST": "updateTable", "DELETE": "dropTable", "HEAD": "tableExists"}[method]
		case n == 5 && segs[4] == "plan":
			r.Operation = map[string]string{"POST": "planTableScan"}[method]
		case n == 6 && segs[4] == "plan":
			r.Operation = map[string]string{"GET": "fetchPlanningResult", "DELETE": "cancelPlanning"}[method]
		case n == 5 && segs[4] == "tasks":
			r.Operation = map[string]string{"POST": "fetchScanTasks"}[method]
		}
	}
	return r, r.Operation != ""
}

// NeedsTable reports whether the route's 200 answers hold content files
// and residual filters, whose values are typed by the table's metadata
// (plan, fetch plan and tasks answers).
func (r Route) NeedsTable() bool {
	switch r.Operation {
	case "planTableScan", "fetchPlanningResult", "fetchScanTasks":
		return true
	}
	return false
}

// Check checks one answer: method and target (escaped path and query) of
// the request, the HTTP status and the body. table is the metadata of the
// route's table (ParseTable of a load-table answer); with nil, the values
// in content files and residual filters are checked for shape only. Routes
// the spec does not define pass. The error is Violations, or nil.
func Check(method, target string, status int, body []byte, table *Table) error {
	route, ok := RouteOf(method, target)
	if !ok {
		return nil
	}
	return check(route, status, body, table)
}

func check(route Route, status int, body []byte, table *Table) error {
	op := operations[route.Operation]
	c := &checker{route: fmt.Sprintf("%s %d", route.Operation, status), table: table, query: route.Query}
	switch {
	case status >= 500 && status < 600:
		// Every route lists 5XX: ServerErrorResponse.
	case !slices.Contains(op.statuses, status):
		c.fail("", status, "status %d is not an answer the spec lists for %s (%s, 5XX)", status, route.Operation, joinInts(op.statuses))
	}
	switch {
	case route.Method == "HEAD":
		// A HEAD answer has no body (namespaceExists, tableExists).
	case status >= 400:
		c.errorResponse(body, status)
	case status == 200 && op.body != nil:
		v, err := decode(body)
		if err != nil {
			c.fail("", string(shorten(body)), "the body is not JSON: %v", err)
			break
		}
		op.body(c, v)
	}
	if len(c.vs) == 0 {
		return nil
	}
	return c.vs
}

// Checker checks answers as Check does and keeps the metadata of each
// table whose load-table answer it checked, to type the values of later
// plan answers of that table. It is safe for concurrent use.
type Checker struct {
	mu     sync.Mutex
	tables map[string]*Table
}

// NewChecker returns a Checker that knows no table yet.
func NewChecker() *Checker { return &Checker{tables: map[string]*Table{}} }

// Check checks one answer (see the package function Check). A 200
// load-table answer's metadata is remembered for its table; plan answers
// use the table's last remembered metadata, and are an error when none
// was seen (give it with Remember first).
func (k *Checker) Check(method, target string, status int, body []byte) error {
	route, ok := RouteOf(method, target)
	if !ok {
		return nil
	}
	var table *Table
	if route.NeedsTable() && status == 200 {
		if table = k.Table(route.Table); table == nil {
			return fmt.Errorf("restspec: %s %s: no load-table answer of %s was seen to type the answer's values", method, target, route.Table)
		}
	}
	err := check(route, status, body, table)
	if route.Operation == "loadTable" && status == 200 {
		// Remembered even when the answer has violations: the plans of
		// the table are still checked. A metadata the checks cannot read
		// is a violation of the answer already.
		_ = k.Remember(route.Table, body)
	}
	return err
}

// Remember keeps the metadata of a load-table answer (LoadTableResult) of
// the table at tablePath (Route.Table).
func (k *Checker) Remember(tablePath string, loadTableBody []byte) error {
	var res struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(loadTableBody, &res); err != nil {
		return fmt.Errorf("restspec: load-table answer of %s: %w", tablePath, err)
	}
	t, err := ParseTable(res.Metadata)
	if err != nil {
		return fmt.Errorf("restspec: load-table answer of %s: %w", tablePath, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tables[tablePath] = t
	return nil
}

// Table returns the remembered metadata of the table at tablePath, or nil.
func (k *Checker) Table(tablePath string) *Table {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.tables[tablePath]
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
