package restspec

import (
	"encoding/json"
	"regexp"
	"strings"
)

// errorResponse checks IcebergErrorResponse: an object with only "error",
// an ErrorModel whose code is the HTTP status.
func (c *checker) errorResponse(body []byte, status int) {
	v, err := decode(body)
	if err != nil {
		c.fail("", string(shorten(body)), "an error answer is an IcebergErrorResponse (JSON): %v", err)
		return
	}
	m, ok := c.object("", v, "IcebergErrorResponse")
	if !ok {
		return
	}
	c.closed("", m, "IcebergErrorResponse", "error")
	c.required("", m, "IcebergErrorResponse", "error")
	if e, ok := m["error"]; ok && e != nil {
		c.errorModel("error", e, status)
	}
}

// errorModel checks ErrorModel; status is the HTTP status its code must
// equal, 0 when there is none (a failed plan in a 200 answer).
func (c *checker) errorModel(path string, v any, status int) {
	m, ok := c.object(path, v, "ErrorModel")
	if !ok {
		return
	}
	c.required(path, m, "ErrorModel", "message", "type", "code")
	optional(c, path, m, "message", "ErrorModel", func(p string, v any) { c.str(p, v, "ErrorModel.message") })
	optional(c, path, m, "type", "ErrorModel", func(p string, v any) { c.str(p, v, "ErrorModel.type") })
	optional(c, path, m, "code", "ErrorModel", func(p string, v any) {
		code, ok := c.integer(p, v, 32, "ErrorModel.code")
		switch {
		case !ok:
		case code < 400 || code > 600:
			c.fail(p, v, "ErrorModel.code is an HTTP error code, 400 to 600")
		case status != 0 && code != int64(status):
			c.fail(p, v, "ErrorModel.code is the HTTP response code, %d", status)
		}
	})
	optional(c, path, m, "stack", "ErrorModel", func(p string, v any) { c.strings(p, v, "ErrorModel.stack") })
}

// An endpoint of CatalogConfig.endpoints: "<HTTP verb> <resource path>",
// one space between (Java's Endpoint.fromString splits on it).
var endpointForm = regexp.MustCompile(`^(GET|HEAD|POST|PUT|DELETE|PATCH|OPTIONS) /v1/\S*$`)

// isoDuration is an ISO-8601 duration (idempotency-key-lifetime).
var isoDuration = regexp.MustCompile(`^P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$`)

// checkCatalogConfig checks CatalogConfig (getConfig).
func checkCatalogConfig(c *checker, v any) {
	m, ok := c.object("", v, "CatalogConfig")
	if !ok {
		return
	}
	c.required("", m, "CatalogConfig", "defaults", "overrides")
	for _, k := range []string{"defaults", "overrides"} {
		optional(c, "", m, k, "CatalogConfig", func(p string, v any) { c.stringMap(p, v, "CatalogConfig."+k) })
	}
	optional(c, "", m, "endpoints", "CatalogConfig", func(p string, v any) {
		for i, e := range c.strings(p, v, "CatalogConfig.endpoints") {
			if !endpointForm.MatchString(e) {
				c.fail(index(p, i), e, `CatalogConfig.endpoints item is "<HTTP verb> <resource path from the spec>", one space between`)
			}
		}
	})
	optional(c, "", m, "idempotency-key-lifetime", "CatalogConfig", func(p string, v any) {
		if s, ok := c.str(p, v, "CatalogConfig.idempotency-key-lifetime"); ok && (s == "P" || s == "PT" || !isoDuration.MatchString(s)) {
			c.fail(p, v, "CatalogConfig.idempotency-key-lifetime is an ISO-8601 duration (PT30M)")
		}
	})
}

// pageToken checks next-page-token (PageToken): a string or null, and
// null or absent when the request did not send pageToken ("Servers that
// support pagination must return all results in a single response with
// the value of next-page-token set to null if the query parameter
// pageToken is not set in the request").
func (c *checker) pageToken(m map[string]any, schema string) {
	v, ok := m["next-page-token"]
	if !ok || v == nil {
		return
	}
	c.str("next-page-token", v, schema+".next-page-token (PageToken)")
	if !c.query.Has("pageToken") {
		c.fail("next-page-token", v, "PageToken: without pageToken in the request the server answers every result at once, next-page-token null (the request had %q)", c.query.Encode())
	}
}

// namespace checks Namespace: an array of strings.
func (c *checker) namespace(path string, v any) []string {
	return c.strings(path, v, "Namespace")
}

// unique checks uniqueItems over keys of an array's items.
func (c *checker) unique(path string, keys []string, schema string) {
	seen := map[string]bool{}
	for i, k := range keys {
		if seen[k] {
			c.fail(index(path, i), k, "%s has uniqueItems: true", schema)
		}
		seen[k] = true
	}
}

// checkListNamespaces checks ListNamespacesResponse (listNamespaces).
func checkListNamespaces(c *checker, v any) {
	m, ok := c.object("", v, "ListNamespacesResponse")
	if !ok {
		return
	}
	c.pageToken(m, "ListNamespacesResponse")
	optional(c, "", m, "namespaces", "ListNamespacesResponse", func(p string, v any) {
		a, ok := c.array(p, v, "ListNamespacesResponse.namespaces")
		if !ok {
			return
		}
		keys := make([]string, len(a))
		for i, ns := range a {
			keys[i] = strings.Join(c.namespace(index(p, i), ns), "\x1f")
		}
		c.unique(p, keys, "ListNamespacesResponse.namespaces")
	})
}

// checkListTables checks ListTablesResponse (listTables).
func checkListTables(c *checker, v any) {
	m, ok := c.object("", v, "ListTablesResponse")
	if !ok {
		return
	}
	c.pageToken(m, "ListTablesResponse")
	optional(c, "", m, "identifiers", "ListTablesResponse", func(p string, v any) {
		a, ok := c.array(p, v, "ListTablesResponse.identifiers")
		if !ok {
			return
		}
		keys := make([]string, len(a))
		for i, id := range a {
			ip := index(p, i)
			im, ok := c.object(ip, id, "TableIdentifier")
			if !ok {
				continue
			}
			c.required(ip, im, "TableIdentifier", "namespace", "name")
			var ns []string
			optional(c, ip, im, "namespace", "TableIdentifier", func(p string, v any) { ns = c.namespace(p, v) })
			name, _ := im["name"].(string)
			if n, ok := im["name"]; ok && n != nil {
				c.str(join(ip, "name"), n, "TableIdentifier.name")
			}
			keys[i] = strings.Join(append(ns, name), "\x1f")
		}
		c.unique(p, keys, "ListTablesResponse.identifiers")
	})
}

// checkGetNamespace checks GetNamespaceResponse (loadNamespaceMetadata).
func checkGetNamespace(c *checker, v any) {
	m, ok := c.object("", v, "GetNamespaceResponse")
	if !ok {
		return
	}
	c.required("", m, "GetNamespaceResponse", "namespace")
	optional(c, "", m, "namespace", "GetNamespaceResponse", func(p string, v any) { c.namespace(p, v) })
	// properties is nullable: a server without namespace properties
	// answers null.
	if p, ok := m["properties"]; ok && p != nil {
		c.stringMap("properties", p, "GetNamespaceResponse.properties")
	}
}

// checkLoadTable checks LoadTableResult (loadTable).
func checkLoadTable(c *checker, v any) {
	m, ok := c.object("", v, "LoadTableResult")
	if !ok {
		return
	}
	c.required("", m, "LoadTableResult", "metadata")
	// metadata-location is nullable (a staged table has none).
	if l, ok := m["metadata-location"]; ok && l != nil {
		c.str("metadata-location", l, "LoadTableResult.metadata-location")
	}
	optional(c, "", m, "metadata", "LoadTableResult", c.tableMetadata)
	optional(c, "", m, "config", "LoadTableResult", func(p string, v any) {
		c.stringMap(p, v, "LoadTableResult.config")
		if mode, ok := v.(map[string]any)["scan-planning-mode"]; ok && mode != "client" && mode != "server" {
			c.fail(join(p, "scan-planning-mode"), mode, "LoadTableResult.config scan-planning-mode is client or server")
		}
	})
	optional(c, "", m, "storage-credentials", "LoadTableResult", c.storageCredentials)
}

// checkCommitTable checks CommitTableResponse (updateTable).
func checkCommitTable(c *checker, v any) {
	m, ok := c.object("", v, "CommitTableResponse")
	if !ok {
		return
	}
	c.required("", m, "CommitTableResponse", "metadata-location", "metadata")
	optional(c, "", m, "metadata-location", "CommitTableResponse", func(p string, v any) { c.str(p, v, "CommitTableResponse.metadata-location") })
	optional(c, "", m, "metadata", "CommitTableResponse", c.tableMetadata)
}

// tableMetadata checks what TableMetadata requires (format-version 1 to 3,
// table-uuid) and that the checks can read its schemas and specs.
func (c *checker) tableMetadata(path string, v any) {
	m, ok := c.object(path, v, "TableMetadata")
	if !ok {
		return
	}
	c.required(path, m, "TableMetadata", "format-version", "table-uuid")
	optional(c, path, m, "format-version", "TableMetadata", func(p string, v any) {
		if n, ok := c.integer(p, v, 32, "TableMetadata.format-version"); ok && (n < 1 || n > 3) {
			c.fail(p, v, "TableMetadata.format-version is 1 to 3")
		}
	})
	optional(c, path, m, "table-uuid", "TableMetadata", func(p string, v any) { c.str(p, v, "TableMetadata.table-uuid") })
	raw, _ := json.Marshal(v)
	if _, err := ParseTable(raw); err != nil {
		c.fail(path, missing, "TableMetadata: schemas and partition-specs are readable: %v", err)
	}
}

// storageCredentials checks an array of StorageCredential.
func (c *checker) storageCredentials(path string, v any) {
	a, ok := c.array(path, v, "storage-credentials")
	if !ok {
		return
	}
	for i, e := range a {
		p := index(path, i)
		m, ok := c.object(p, e, "StorageCredential")
		if !ok {
			continue
		}
		c.required(p, m, "StorageCredential", "prefix", "config")
		optional(c, p, m, "prefix", "StorageCredential", func(p string, v any) { c.str(p, v, "StorageCredential.prefix") })
		optional(c, p, m, "config", "StorageCredential", func(p string, v any) { c.stringMap(p, v, "StorageCredential.config") })
	}
}

// planStatus reads PlanStatus and checks its enum.
func (c *checker) planStatus(m map[string]any, schema string) string {
	c.required("", m, schema, "status")
	s, _ := m["status"].(string)
	if v, ok := m["status"]; ok && v != nil {
		switch s {
		case "completed", "submitted", "cancelled", "failed":
		default:
			c.fail("status", v, "PlanStatus is one of completed, submitted, cancelled, failed")
			return ""
		}
	}
	return s
}

// checkPlanTableScan checks PlanTableScanResult (planTableScan): by
// status, CompletedPlanningWithIDResult, AsyncPlanningResult or
// FailedPlanningResult; cancelled "is considered invalid for this
// endpoint".
func checkPlanTableScan(c *checker, v any) {
	m, ok := c.object("", v, "PlanTableScanResult")
	if !ok {
		return
	}
	switch c.planStatus(m, "PlanTableScanResult") {
	case "completed":
		c.required("", m, "CompletedPlanningWithIDResult", "plan-id")
		optional(c, "", m, "plan-id", "CompletedPlanningWithIDResult", func(p string, v any) { c.str(p, v, "CompletedPlanningWithIDResult.plan-id") })
		c.completed(m, "CompletedPlanningWithIDResult")
	case "submitted":
		c.required("", m, "AsyncPlanningResult", "plan-id")
		optional(c, "", m, "plan-id", "AsyncPlanningResult", func(p string, v any) { c.str(p, v, "AsyncPlanningResult.plan-id") })
		c.noTasks(m, "AsyncPlanningResult")
	case "failed":
		c.failed(m)
	case "cancelled":
		c.fail("status", "cancelled", `PlanTableScanResult: "A cancelled status is considered invalid for this endpoint"`)
	}
}

// checkFetchPlanningResult checks FetchPlanningResult
// (fetchPlanningResult): CompletedPlanningResult, EmptyPlanningResult
// (submitted, cancelled) or FailedPlanningResult.
func checkFetchPlanningResult(c *checker, v any) {
	m, ok := c.object("", v, "FetchPlanningResult")
	if !ok {
		return
	}
	switch c.planStatus(m, "FetchPlanningResult") {
	case "completed":
		c.completed(m, "CompletedPlanningResult")
	case "submitted", "cancelled":
		c.noTasks(m, "EmptyPlanningResult")
	case "failed":
		c.failed(m)
	}
}

// checkFetchScanTasks checks FetchScanTasksResult (fetchScanTasks);
// Java's FetchScanTasksResponse also requires plan-tasks or
// file-scan-tasks.
func checkFetchScanTasks(c *checker, v any) {
	m, ok := c.object("", v, "FetchScanTasksResult")
	if !ok {
		return
	}
	if m["plan-tasks"] == nil && m["file-scan-tasks"] == nil {
		c.fail("", v, "FetchScanTasksResult has plan-tasks or file-scan-tasks (Java: \"planTasks and fileScanTask cannot both be null\")")
	}
	c.scanTasks(m, "FetchScanTasksResult")
}

// completed checks a CompletedPlanningResult's ScanTasks and credentials.
func (c *checker) completed(m map[string]any, schema string) {
	c.scanTasks(m, schema)
	optional(c, "", m, "storage-credentials", schema, c.storageCredentials)
	c.noError(m, schema)
}

// failed checks FailedPlanningResult: an ErrorModel in "error", no tasks.
func (c *checker) failed(m map[string]any) {
	c.required("", m, "FailedPlanningResult", "error")
	if e, ok := m["error"]; ok && e != nil {
		c.errorModel("error", e, 0)
	}
	c.noTasks(m, "FailedPlanningResult")
}

// noTasks: "Tasks must not be included for any other response status"
// than completed.
func (c *checker) noTasks(m map[string]any, schema string) {
	for _, k := range []string{"plan-tasks", "file-scan-tasks", "delete-files"} {
		if v, ok := m[k]; ok {
			c.fail(k, v, "%s: tasks are included only when the status is completed", schema)
		}
	}
	if schema != "FailedPlanningResult" {
		c.noError(m, schema)
	}
}

// noError: Java's responses refuse an error unless the status is failed.
func (c *checker) noError(m map[string]any, schema string) {
	if v, ok := m["error"]; ok {
		c.fail("error", v, "%s: an error is included only when the status is failed", schema)
	}
}

// scanTasks checks ScanTasks: delete-files, file-scan-tasks (each
// reference an index into delete-files) and plan-tasks.
func (c *checker) scanTasks(m map[string]any, schema string) {
	var deletes []any
	optional(c, "", m, "delete-files", schema, func(p string, v any) {
		a, ok := c.array(p, v, "ScanTasks.delete-files")
		if !ok {
			return
		}
		deletes = a
		for i, d := range a {
			c.deleteFile(index(p, i), d)
		}
	})
	referenced := make([]bool, len(deletes))
	var tasks []any
	optional(c, "", m, "file-scan-tasks", schema, func(p string, v any) {
		a, ok := c.array(p, v, "ScanTasks.file-scan-tasks")
		if !ok {
			return
		}
		tasks = a
		for i, t := range a {
			c.fileScanTask(index(p, i), t, len(deletes), referenced)
		}
	})
	optional(c, "", m, "plan-tasks", schema, func(p string, v any) { c.strings(p, v, "ScanTasks.plan-tasks (PlanTask)") })
	if len(deletes) > 0 && len(tasks) == 0 {
		c.fail("delete-files", deletes, "ScanTasks: delete files come only with the file scan tasks that reference them (Java: \"deleteFiles should only be returned with fileScanTasks that reference them\")")
		return
	}
	for i, r := range referenced {
		if !r {
			c.fail(index("delete-files", i), deletes[i], "ScanTasks.delete-files holds the delete files referenced by file scan tasks; no task references this one")
		}
	}
}

// fileScanTask checks FileScanTask. residual-filter is required here,
// beyond the yaml: Java's RESTFileScanTaskParser builds the task's
// residual evaluator from it, and FileScanTask.residual() throws on a
// partitioned spec when it is absent.
func (c *checker) fileScanTask(path string, v any, deletes int, referenced []bool) {
	m, ok := c.object(path, v, "FileScanTask")
	if !ok {
		return
	}
	c.required(path, m, "FileScanTask", "data-file")
	optional(c, path, m, "data-file", "FileScanTask", c.dataFile)
	optional(c, path, m, "delete-file-references", "FileScanTask", func(p string, v any) {
		for i, ref := range c.integers(p, v, 32, "FileScanTask.delete-file-references") {
			if ref < 0 || int(ref) >= deletes {
				c.fail(index(p, i), ref, "FileScanTask.delete-file-references are indices into delete-files (0 to %d)", deletes-1)
				continue
			}
			referenced[ref] = true
		}
	})
	if _, ok := m["residual-filter"]; !ok {
		c.fail(join(path, "residual-filter"), missing, "FileScanTask.residual-filter is required by Java's clients: FileScanTask.residual() throws on a partitioned spec without it (RESTFileScanTaskParser); send true when nothing remains")
	}
	optional(c, path, m, "residual-filter", "FileScanTask", func(p string, v any) { c.expression(p, v) })
}

// contentFile checks the fields of ContentFile that DataFile,
// PositionDeleteFile and EqualityDeleteFile (schema) share, and the
// partition values in the single-value form of their partition field's
// type.
func (c *checker) contentFile(path string, m map[string]any, schema string) {
	c.required(path, m, schema, "spec-id", "partition", "content", "file-path", "file-format", "file-size-in-bytes", "record-count")
	optional(c, path, m, "file-path", schema, func(p string, v any) { c.str(p, v, "ContentFile.file-path") })
	optional(c, path, m, "file-format", schema, func(p string, v any) {
		if s, ok := c.str(p, v, "ContentFile.file-format (FileFormat)"); ok && !contains([]string{"avro", "orc", "parquet", "puffin"}, s) {
			c.fail(p, v, "FileFormat is one of avro, orc, parquet, puffin (lowercase)")
		}
	})
	optional(c, path, m, "file-size-in-bytes", schema, func(p string, v any) { c.integer(p, v, 64, "ContentFile.file-size-in-bytes") })
	optional(c, path, m, "record-count", schema, func(p string, v any) { c.integer(p, v, 64, "ContentFile.record-count") })
	optional(c, path, m, "key-metadata", schema, func(p string, v any) { c.value(p, v, "binary", false) })
	optional(c, path, m, "split-offsets", schema, func(p string, v any) { c.integers(p, v, 64, "ContentFile.split-offsets") })
	optional(c, path, m, "sort-order-id", schema, func(p string, v any) { c.integer(p, v, 32, "ContentFile.sort-order-id") })
	var fields []partitionField
	known := false
	optional(c, path, m, "spec-id", schema, func(p string, v any) {
		id, ok := c.integer(p, v, 32, "ContentFile.spec-id")
		if ok && c.table != nil {
			if fields, known = c.table.specs[int(id)]; !known {
				c.fail(p, v, "ContentFile.spec-id names a partition spec of the table's metadata")
			}
		}
	})
	optional(c, path, m, "partition", schema, func(p string, v any) {
		a, ok := c.array(p, v, "ContentFile.partition")
		if !ok {
			return
		}
		if known && len(a) != len(fields) {
			c.fail(p, v, "ContentFile.partition holds a value for each of the %d fields of partition spec %v", len(fields), m["spec-id"])
			return
		}
		for i, e := range a {
			typ := ""
			if known {
				typ = fields[i].resultType
			}
			c.value(index(p, i), e, typ, true)
		}
	})
}

// content checks the content discriminator.
func (c *checker) content(path string, m map[string]any, allowed ...string) string {
	s, _ := m["content"].(string)
	if v, ok := m["content"]; ok && v != nil && !contains(allowed, s) {
		c.fail(join(path, "content"), v, "content is %s here (ContentFile discriminator)", strings.Join(allowed, " or "))
		return ""
	}
	return s
}

// dataFile checks DataFile: content "data", its counts and bounds.
func (c *checker) dataFile(path string, v any) {
	m, ok := c.object(path, v, "DataFile")
	if !ok {
		return
	}
	c.content(path, m, "data")
	c.contentFile(path, m, "DataFile")
	optional(c, path, m, "first-row-id", "DataFile", func(p string, v any) { c.integer(p, v, 64, "DataFile.first-row-id") })
	for _, k := range []string{"column-sizes", "value-counts", "null-value-counts", "nan-value-counts"} {
		optional(c, path, m, k, "DataFile", func(p string, v any) { c.countMap(p, v) })
	}
	for _, k := range []string{"lower-bounds", "upper-bounds"} {
		optional(c, path, m, k, "DataFile", func(p string, v any) { c.valueMap(p, v) })
	}
}

// deleteFile checks DeleteFile: PositionDeleteFile or EqualityDeleteFile
// by content.
func (c *checker) deleteFile(path string, v any) {
	m, ok := c.object(path, v, "DeleteFile")
	if !ok {
		return
	}
	switch c.content(path, m, "position-deletes", "equality-deletes") {
	case "position-deletes":
		c.contentFile(path, m, "PositionDeleteFile")
		optional(c, path, m, "content-offset", "PositionDeleteFile", func(p string, v any) { c.integer(p, v, 64, "PositionDeleteFile.content-offset") })
		optional(c, path, m, "content-size-in-bytes", "PositionDeleteFile", func(p string, v any) {
			c.integer(p, v, 64, "PositionDeleteFile.content-size-in-bytes")
		})
		optional(c, path, m, "referenced-data-file", "PositionDeleteFile", func(p string, v any) { c.str(p, v, "referenced-data-file") })
		if _, ok := m["content-offset"]; ok {
			c.required(path, m, "PositionDeleteFile (content-size-in-bytes is \"required if content-offset is present\")", "content-size-in-bytes")
		}
		// A deletion vector (a blob of a Puffin file) is found by these:
		// the table spec requires them of a v3 deletion vector.
		if m["file-format"] == "puffin" {
			c.required(path, m, "PositionDeleteFile of a deletion vector (file-format puffin)", "content-offset", "content-size-in-bytes", "referenced-data-file")
		}
	case "equality-deletes":
		c.contentFile(path, m, "EqualityDeleteFile")
		// The table spec requires equality ids of an equality delete
		// file; without them a reader cannot apply it.
		c.required(path, m, "EqualityDeleteFile (the table spec requires equality_ids)", "equality-ids")
		optional(c, path, m, "equality-ids", "EqualityDeleteFile", func(p string, v any) {
			for i, id := range c.integers(p, v, 32, "EqualityDeleteFile.equality-ids") {
				if c.table != nil {
					if _, ok := c.table.byID[int(id)]; !ok {
						c.fail(index(p, i), id, "EqualityDeleteFile.equality-ids are field ids of the table's schema")
					}
				}
			}
		})
	}
}

// mapKeys checks the keys of a CountMap or ValueMap (IntegerTypeValue,
// field ids) and that values match them by index.
func (c *checker) mapKeys(path string, m map[string]any, schema string) ([]int64, []any, bool) {
	c.required(path, m, schema+" (Java's SingleValueParser reads a map only with both)", "keys", "values")
	keys := c.integers(join(path, "keys"), m["keys"], 32, schema+".keys")
	values, ok := c.array(join(path, "values"), m["values"], schema+".values")
	if !ok || keys == nil {
		return nil, nil, false
	}
	if len(keys) != len(values) {
		c.fail(path, m, "%s: values are matched to keys by index, so there are as many", schema)
		return nil, nil, false
	}
	for i, k := range keys {
		if c.table != nil {
			if _, ok := c.table.byID[int(k)]; !ok {
				c.fail(index(join(path, "keys"), i), k, "%s keys are column ids of the table's schema", schema)
			}
		}
	}
	return keys, values, true
}

// countMap checks CountMap: LongTypeValue values.
func (c *checker) countMap(path string, v any) {
	m, ok := c.object(path, v, "CountMap")
	if !ok {
		return
	}
	if _, values, ok := c.mapKeys(path, m, "CountMap"); ok {
		for i, e := range values {
			c.integer(index(join(path, "values"), i), e, 64, "CountMap.values item (LongTypeValue)")
		}
	}
}

// valueMap checks ValueMap (lower-bounds, upper-bounds). Java's
// ContentFileParser reads the bounds as map<int, binary>: each value is
// the binary single-value serialization of the column's bound, as a
// BinaryTypeValue (uppercase hex); its length must fit the column's type.
func (c *checker) valueMap(path string, v any) {
	m, ok := c.object(path, v, "ValueMap")
	if !ok {
		return
	}
	keys, values, ok := c.mapKeys(path, m, "ValueMap")
	if !ok {
		return
	}
	for i, e := range values {
		p := index(join(path, "values"), i)
		s, isStr := e.(string)
		if !isStr || !upperHex.MatchString(s) {
			c.fail(p, e, "ValueMap values of bounds are BinaryTypeValue: uppercase hexadecimal (Java's ContentFileParser reads bounds as map<int, binary>)")
			continue
		}
		if c.table == nil {
			continue
		}
		typ := c.table.byID[int(keys[i])].typ
		if w := boundWidth(typ); w != 0 && len(s) != 2*w && !(typ == "long" && len(s) == 8) && !(typ == "double" && len(s) == 8) {
			// long and double columns may hold int and float bounds of
			// files written before a type promotion.
			c.fail(p, e, "a bound of a %s column is %d bytes (the table spec's binary single-value serialization)", typ, w)
		}
	}
}
