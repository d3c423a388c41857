package planning

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Residual is the residual serve sends with a task of data file f for the
// bound filter, for the package's external tests.
func Residual(meta table.Metadata, schema *iceberg.Schema, bound iceberg.BooleanExpression, caseSensitive bool, f iceberg.DataFile) (iceberg.BooleanExpression, error) {
	return newResiduals(meta, schema, bound, caseSensitive).of(f)
}

// keys are the keys the cache holds, for tests to find an entry.
func (c *lruCache[V]) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.entries {
		out = append(out, k)
	}
	return out
}
