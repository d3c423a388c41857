package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/icebloom/internal/rowformat"
	"github.com/icebloom/icebloom/index/indexer"
)

// ColumnsCmd is `icebloom columns TABLE [--enable A,B [--fpp X]] [--disable C]`:
// the table properties that choose the indexed columns
// (write.parquet.bloom-filter-enabled.column.<name>, the same the Parquet
// writers of Iceberg read, and write.parquet.bloom-filter-fpp.column.<name>),
// shown, and changed in one commit.
type ColumnsCmd struct {
	Table   string   `arg:"positional,required" help:"table identifier, ns.table"`
	Enable  string   `arg:"--enable" placeholder:"COLS" help:"comma-separated columns to index from the next sync on (sets write.parquet.bloom-filter-enabled.column.<name>=true); a name with a comma in double quotes"`
	Disable string   `arg:"--disable" placeholder:"COLS" help:"comma-separated columns no longer to enable (removes their enabled and fpp properties); their filters stay until compact-index --drop-columns"`
	FPP     *float64 `arg:"--fpp" help:"false-positive rate of the enabled columns (sets write.parquet.bloom-filter-fpp.column.<name>)"`
}

// validate: --fpp goes with --enable.
func (c *ColumnsCmd) validate() error {
	if c.FPP != nil && c.Enable == "" {
		return errors.New("--fpp sets the rate of the columns --enable names: give --enable too")
	}
	return nil
}

// ColumnsOutput is the JSON output of columns: the table's columns that
// are indexed, enabled or both.
type ColumnsOutput struct {
	Table   string          `json:"table"`
	Columns []ColumnSetting `json:"columns"`
	// Changed says whether this run committed a change.
	Changed bool `json:"changed"`
	// Notes say when a change takes effect where that is not at once.
	Notes []string `json:"notes,omitempty"`
}

// ColumnSetting is one column's index settings.
type ColumnSetting struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Enabled: a table property enables it; Indexed: the index holds its
	// filters.
	Enabled bool `json:"enabled"`
	Indexed bool `json:"indexed"`
	// FPP is the rate the next sync builds its filters for.
	FPP float64 `json:"fpp,omitempty"`
	// NotIndexable says why a column the index holds can no longer be
	// indexed.
	NotIndexable string `json:"not_indexable,omitempty"`
}

func (c *ColumnsCmd) run(ctx context.Context, e *env) error {
	enable, err := splitColumns("--enable", c.Enable)
	if err != nil {
		return err
	}
	disable, err := splitColumns("--disable", c.Disable)
	if err != nil {
		return err
	}
	cat, ident, err := e.tableRef(ctx, c.Table)
	if err != nil {
		return err
	}
	var tbl *table.Table
	changed := false
	if len(enable) > 0 || len(disable) > 0 {
		before, err := catalog.LoadTable(ctx, cat, ident)
		if err != nil {
			return err
		}
		tbl, err = catalog.CommitProperties(ctx, cat, ident, func(meta table.Metadata) (catalog.PropertyChange, error) {
			return columnChange(meta, enable, disable, c.FPP)
		}, catalog.WithLogger(e.log))
		if err != nil {
			return err
		}
		changed = tbl.MetadataLocation() != before.MetadataLocation()
		e.log.Info("columns changed", "command", "columns", "table", c.Table, "enabled", nonNil(enable), "disabled", nonNil(disable), "committed", changed)
	} else if tbl, err = catalog.LoadTable(ctx, cat, ident); err != nil {
		return err
	}
	out, err := columnSettings(ctx, c.Table, tbl)
	if err != nil {
		return err
	}
	out.Changed = changed
	if c.FPP != nil {
		out.Notes = fppNotes(c.Table, out.Columns, enable, *c.FPP)
	}
	if e.json {
		return e.printJSON(out)
	}
	defer func() {
		for _, note := range out.Notes {
			e.printf("%s\n", note)
		}
	}()
	if len(out.Columns) == 0 {
		e.printf("%s: no column is indexed or enabled (icebloom columns %s --enable COL enables one)\n", c.Table, c.Table)
		return nil
	}
	for _, s := range out.Columns {
		var state []string
		if s.Enabled {
			state = append(state, "enabled")
		}
		if s.Indexed {
			state = append(state, "indexed")
		}
		line := fmt.Sprintf("%s\t%s\t%s", s.Name, s.Type, strings.Join(state, ", "))
		if s.FPP > 0 {
			line += "\tfpp " + rowformat.FloatText(s.FPP, 64)
		}
		if s.NotIndexable != "" {
			line += "\t(" + s.NotIndexable + ")"
		}
		e.printf("%s\n", line)
	}
	return nil
}

// nonNil is names, or an empty list for none: a log record says [], not
// null.
func nonNil(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

// fppNotes says, for each column of enable the index holds already, that
// a new --fpp applies to the files indexed from the next sync on, and how
// to rebuild the filters it holds at that rate.
func fppNotes(table string, settings []ColumnSetting, enable []string, fpp float64) []string {
	var notes []string
	for _, s := range settings {
		if s.Indexed && slices.ContainsFunc(enable, func(name string) bool { return strings.EqualFold(name, s.Name) }) {
			notes = append(notes, fmt.Sprintf("%s: fpp %s applies to the data files indexed from the next sync on; "+
				"the filters the index holds keep their rate until `icebloom rebuild %s`", s.Name, rowformat.FloatText(fpp, 64), table))
		}
	}
	return notes
}

// columnSettings lists the columns the table's index holds or its
// properties enable, in schema order.
func columnSettings(ctx context.Context, name string, tbl *table.Table) (*ColumnsOutput, error) {
	out := &ColumnsOutput{Table: name, Columns: []ColumnSetting{}}
	choice, err := indexer.TableColumns(ctx, tbl, nil, 0)
	if errors.Is(err, indexer.ErrNoColumns) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, col := range choice.Columns {
		out.Columns = append(out.Columns, ColumnSetting{Name: col.Name, Type: col.Type.String(), FPP: col.FPP,
			Enabled: slices.Contains(col.Sources, indexer.SourceProperty), Indexed: slices.Contains(col.Sources, indexer.SourceIndex)})
	}
	for _, n := range choice.NotIndexed {
		out.Columns = append(out.Columns, ColumnSetting{Name: n.Name, Indexed: true, NotIndexable: n.Reason})
	}
	return out, nil
}

// columnChange is the property change that enables and disables columns
// of the table meta describes, each checked against its current schema:
// an enabled column must be one the index can hold, a disabled one must be
// enabled by a property.
func columnChange(meta table.Metadata, enable, disable []string, fpp *float64) (catalog.PropertyChange, error) {
	schema, props := meta.CurrentSchema(), meta.Properties()
	change := catalog.PropertyChange{Set: iceberg.Properties{}}
	var rate float64
	if fpp != nil {
		rate = *fpp
	}
	cols, err := indexer.ResolveColumns(schema, props, enable, rate)
	if err != nil {
		return change, fmt.Errorf("--enable: %w", err)
	}
	for _, col := range cols {
		change.Set[indexer.PropBloomEnabledPrefix+col.Name] = "true"
		if fpp != nil {
			change.Set[indexer.PropBloomFPPPrefix+col.Name] = strconv.FormatFloat(*fpp, 'g', -1, 64)
		}
	}
	for _, name := range disable {
		field, ok := findField(schema, name)
		var keys []string
		for key := range props {
			col, isEnabled := strings.CutPrefix(key, indexer.PropBloomEnabledPrefix)
			if !isEnabled {
				continue
			}
			if f, found := findField(schema, col); col == name || found && ok && f.ID == field.ID {
				keys = append(keys, key)
			}
		}
		if len(keys) == 0 {
			return change, fmt.Errorf("--disable %s: no table property %s<name> enables it", name, indexer.PropBloomEnabledPrefix)
		}
		slices.Sort(keys)
		for _, key := range keys {
			col := strings.TrimPrefix(key, indexer.PropBloomEnabledPrefix)
			if _, set := change.Set[key]; set {
				return change, fmt.Errorf("column %s: both --enable and --disable name it", col)
			}
			change.Remove = append(change.Remove, key)
			if _, has := props[indexer.PropBloomFPPPrefix+col]; has {
				change.Remove = append(change.Remove, indexer.PropBloomFPPPrefix+col)
			}
		}
	}
	return change, nil
}

// findField finds a column by its full name, else the only one whose name
// differs from it in case, as filters and --columns name columns.
func findField(schema *iceberg.Schema, name string) (iceberg.NestedField, bool) {
	if f, ok := schema.FindFieldByName(name); ok {
		return f, true
	}
	f, ok := schema.FindFieldByNameCaseInsensitive(name)
	return f, ok
}

// splitColumns splits a comma-separated list of column names; a name that
// holds a comma (or starts or ends with a space) is written in double
// quotes, a double quote inside them doubled, as SQL quotes identifiers:
// `id,"a,b",c` is id, a,b and c. flag names the list in errors.
func splitColumns(flag, s string) ([]string, error) {
	var cols []string
	for i := 0; i < len(s); {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var name string
		if i < len(s) && s[i] == '"' {
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(s) {
					return nil, fmt.Errorf("%s %s: a double-quoted name is not closed", flag, s)
				}
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						b.WriteByte('"')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			name, i = b.String(), j+1
			for i < len(s) && s[i] == ' ' {
				i++
			}
			if i < len(s) && s[i] != ',' {
				return nil, fmt.Errorf("%s %s: want a comma after the quoted name %q", flag, s, name)
			}
		} else {
			j := strings.IndexByte(s[i:], ',')
			if j < 0 {
				j = len(s) - i
			}
			name = strings.TrimSpace(s[i : i+j])
			i += j
		}
		i++ // the comma
		if name != "" {
			cols = append(cols, name)
		}
	}
	return cols, nil
}
