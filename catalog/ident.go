package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// ParseIdentifier parses a dotted table name, "namespace.table" or, with a
// nested namespace, "a.b.table". Unlike iceberg-go's catalog.ToIdentifier it
// rejects names that cannot be a table's — no namespace, or an empty part — so
// that a mistyped name fails here with the name in the error rather than in
// the catalog.
func ParseIdentifier(s string) (table.Identifier, error) {
	parts := strings.Split(s, ".")
	switch {
	case len(parts) < 2:
		return nil, fmt.Errorf("table name %q: want namespace.table", s)
	case slices.Contains(parts, ""):
		return nil, fmt.Errorf("table name %q has an empty part", s)
	}
	return parts, nil
}

// ParseNamespace parses a dotted namespace, "ns" or, nested, "a.b".
func ParseNamespace(s string) (table.Identifier, error) {
	parts := strings.Split(s, ".")
	if slices.Contains(parts, "") {
		return nil, fmt.Errorf("namespace %q has an empty part", s)
	}
	return parts, nil
}
