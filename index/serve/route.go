package serve

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// routeKind names what a request asks the REST catalog API for.
type routeKind string

const (
	routeConfig       routeKind = "config"
	routeNamespaces   routeKind = "namespaces"
	routeNamespace    routeKind = "namespace"
	routeTables       routeKind = "tables"
	routeTable        routeKind = "table"
	routePlan         routeKind = "plan"
	routePlanID       routeKind = "plan_id"
	routeTasks        routeKind = "tasks"
	routeTransactions routeKind = "transactions"
	routeOther        routeKind = "other"
)

// route is a parsed REST path: /v1/{prefix}/namespaces/{namespace}/tables/{table}/...
type route struct {
	kind routeKind
	// prefix is the escaped {prefix} segment, "" without one.
	prefix string
	// nsRaw is the escaped namespace segment; ns the namespace it names
	// (levels separated by the unit separator, 0x1F).
	nsRaw  string
	ns     table.Identifier
	table  string
	planID string
}

func (r route) ident() table.Identifier { return append(append(table.Identifier{}, r.ns...), r.table) }

// tablePath is the escaped path of the route's table, for loading it.
func (r route) tablePath() string {
	p := "/v1/"
	if r.prefix != "" {
		p += r.prefix + "/"
	}
	return p + "namespaces/" + r.nsRaw + "/tables/" + url.PathEscape(r.table)
}

// unsafePath reports why an escaped request path must not be served or
// forwarded: it leaves /v1, or has segments that a server behind us could
// read differently from us (dot segments, plain or percent-encoded, and
// encoded slashes or backslashes), or empty segments.
func unsafePath(escaped string) error {
	rest, ok := strings.CutPrefix(escaped, "/v1/")
	if !ok {
		return fmt.Errorf("path %q is not under /v1/", escaped)
	}
	for _, seg := range strings.Split(rest, "/") {
		lower := strings.ToLower(seg)
		if seg == "" {
			return fmt.Errorf("path %q has an empty segment", escaped)
		}
		if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(seg, `\`) {
			return fmt.Errorf("path %q has an encoded slash or a backslash", escaped)
		}
		// A server behind may read ";x" as parameters (..;/ is .. to some)
		// or decode twice (%252e is %2e, then .): refused whole.
		if strings.ContainsAny(seg, ";") || strings.Contains(lower, "%3b") || strings.Contains(lower, "%25") {
			return fmt.Errorf("path %q has a ';' or a double-encoded character", escaped)
		}
		un, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Errorf("path %q: %w", escaped, err)
		}
		if un == "." || un == ".." {
			return fmt.Errorf("path %q has a dot segment", escaped)
		}
	}
	return nil
}

// parseRoute parses an escaped path that unsafePath accepted.
func parseRoute(escaped string) route {
	if escaped == "/v1/config" {
		return route{kind: routeConfig}
	}
	segs := strings.Split(strings.TrimPrefix(escaped, "/v1/"), "/")
	var r route
	if len(segs) > 0 && segs[0] != "namespaces" && segs[0] != "transactions" && segs[0] != "tables" {
		r.prefix, segs = segs[0], segs[1:]
	}
	unescape := func(s string) string { u, _ := url.PathUnescape(s); return u }
	n := len(segs)
	switch {
	case n == 2 && segs[0] == "transactions" && segs[1] == "commit":
		r.kind = routeTransactions
		return r
	case n == 0 || segs[0] != "namespaces":
		r.kind = routeOther
		return r
	case n == 1:
		r.kind = routeNamespaces
		return r
	}
	r.nsRaw = segs[1]
	r.ns = strings.Split(unescape(segs[1]), "\x1f")
	switch {
	case n == 2:
		r.kind = routeNamespace
	case segs[2] != "tables":
		r.kind = routeOther
	case n == 3:
		r.kind = routeTables
	default:
		r.table = unescape(segs[3])
		switch {
		case n == 4:
			r.kind = routeTable
		case n == 5 && segs[4] == "plan":
			r.kind = routePlan
		case n == 6 && segs[4] == "plan":
			r.kind, r.planID = routePlanID, unescape(segs[5])
		case n == 5 && segs[4] == "tasks":
			r.kind = routeTasks
		default:
			r.kind = routeOther
		}
	}
	return r
}

// key names the route's table in the plan store.
func (r route) key() string { return strings.Join(r.ident(), "\x1f") }
