package index

import (
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
)

// NamesFold returns the full names of the schema's columns that equal name
// regardless of case, sorted, one per field: how both the lookup's filters
// and the indexer's --columns resolve a name that matches no column
// exactly (one match is the column; several are ambiguous).
func NamesFold(schema *iceberg.Schema, name string) ([]string, error) {
	names, err := iceberg.IndexByName(schema)
	if err != nil {
		return nil, err
	}
	var matches []string
	ids := map[int]bool{}
	for n, id := range names {
		if strings.EqualFold(n, name) && !ids[id] {
			ids[id] = true
			matches = append(matches, n)
		}
	}
	slices.Sort(matches)
	return matches, nil
}
