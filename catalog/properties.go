package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// PropertyChange is a change of table properties: the keys of Set get its
// values, the keys of Remove go.
type PropertyChange struct {
	Set    iceberg.Properties
	Remove []string
}

// PrepareProperties builds a property change on the metadata of the table
// as it is, or fails: it validates the change against that metadata (the
// columns a property names, say), and is called again on each attempt.
type PrepareProperties func(meta table.Metadata) (PropertyChange, error)

// CommitProperties commits the property change prepare builds, as one
// commit that also requires the table's current schema to be the one the
// change was validated against. A commit the catalog refuses because the
// table changed meanwhile is built and validated again on the table as it
// is then, as Retry retries (IsConflict, IsTransient). A change that
// changes nothing commits nothing; the table returned is then the one
// loaded.
func CommitProperties(ctx context.Context, cat icecatalog.Catalog, ident table.Identifier, prepare PrepareProperties, opts ...CommitOption) (*table.Table, error) {
	name := strings.Join(ident, ".")
	cfg := newConfig(opts)
	fromTable := cfg.props == nil
	var committed *table.Table
	err := retryWith(ctx, &cfg, ident, "properties commit", func(ctx context.Context) (bool, error) {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return IsTransient(err), fmt.Errorf("load table %s: %w", name, err)
		}
		if fromTable {
			cfg.props = tbl.Properties()
		}
		meta := tbl.Metadata()
		change, err := prepare(meta)
		if err != nil {
			return false, err
		}
		updates, err := change.updates(meta.Properties())
		if err != nil {
			return false, fmt.Errorf("properties of %s: %w", name, err)
		}
		if len(updates) == 0 {
			committed = tbl
			return false, nil
		}
		reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID()), table.AssertCurrentSchemaID(meta.CurrentSchema().ID)}
		newMeta, loc, err := cat.CommitTable(ctx, ident, reqs, updates)
		if err != nil {
			return IsConflict(err) || IsTransient(err), fmt.Errorf("commit properties of %s: %w", name, err)
		}
		committed = table.New(ident, newMeta, loc, tbl.FS, cat)
		return false, nil
	})
	return committed, err
}

// updates returns the table updates of the change on props, leaving out
// what would change nothing; a key both set and removed, or an empty key,
// is an error.
func (c PropertyChange) updates(props iceberg.Properties) ([]table.Update, error) {
	set := iceberg.Properties{}
	for _, k := range slices.Sorted(maps.Keys(c.Set)) {
		switch {
		case strings.TrimSpace(k) == "":
			return nil, fmt.Errorf("property with an empty key")
		case slices.Contains(c.Remove, k):
			return nil, fmt.Errorf("property %s both set and removed", k)
		}
		if old, ok := props[k]; !ok || old != c.Set[k] {
			set[k] = c.Set[k]
		}
	}
	var remove []string
	for _, k := range c.Remove {
		if _, ok := props[k]; ok && !slices.Contains(remove, k) {
			remove = append(remove, k)
		}
	}
	var updates []table.Update
	if len(set) > 0 {
		updates = append(updates, table.NewSetPropertiesUpdate(set))
	}
	if len(remove) > 0 {
		updates = append(updates, table.NewRemovePropertiesUpdate(remove))
	}
	return updates, nil
}
