package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/maintenance"
)

// ListCmd is `icebloom list [NAMESPACE]`: the tables of a catalog with the
// state of their index, as iceberg-go's and PyIceberg's CLIs list tables.
type ListCmd struct {
	Namespace string `arg:"positional" help:"list the tables of this namespace [default: every namespace]"`
	Names     bool   `arg:"--names" help:"print the tables' names alone, one a line, without reading their indexes (for scripts and shell completion)"`
}

// ListOutput is the JSON output of list.
type ListOutput struct {
	Tables []TableState `json:"tables"`
}

// TableState is one table and its index.
type TableState struct {
	Table string `json:"table"`
	// LiveFiles counts the data files of the current snapshot.
	LiveFiles int `json:"live_files"`
	// Segments counts the index's segment files.
	Segments int `json:"segments"`
	// Columns are the indexed columns, each with the live files its
	// filters cover.
	Columns []ColumnCoverage `json:"columns"`
	// LastSync is when the newest index segment's snapshot was committed:
	// the index covers the table as of then (absent without an index).
	LastSync *time.Time `json:"last_sync,omitempty"`
	// Error says why the table's index could not be read; the listing
	// goes on.
	Error string `json:"error,omitempty"`
}

// ColumnCoverage is an indexed column and the live files it covers.
type ColumnCoverage struct {
	Name    string `json:"name"`
	Covered int    `json:"covered_files"`
}

func (c *ListCmd) run(ctx context.Context, e *env) error {
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	var ns []string
	if c.Namespace != "" {
		if ns, err = catalog.ParseNamespace(c.Namespace); err != nil {
			return err
		}
	}
	idents, err := maintenance.Tables(ctx, cat, ns)
	if err != nil {
		return err
	}
	if c.Names {
		for _, ident := range idents {
			e.printf("%s\n", strings.Join(ident, "."))
		}
		return nil
	}
	out := ListOutput{Tables: []TableState{}}
	for _, ident := range idents {
		name := strings.Join(ident, ".")
		st := TableState{Table: name, Columns: []ColumnCoverage{}}
		if err := tableState(ctx, e, name, &st); err != nil {
			st.Error = err.Error()
			e.log.Warn("table state unknown", "command", "list", "table", name, "error", st.Error)
		}
		out.Tables = append(out.Tables, st)
	}
	if e.json {
		return e.printJSON(out)
	}
	if len(out.Tables) == 0 {
		// Nothing printed at all read as a catalog that answered nothing.
		if c.Namespace != "" {
			e.printf("no tables in namespace %s of catalog %s\n", c.Namespace, catalogName(cat))
		} else {
			e.printf("no tables in catalog %s\n", catalogName(cat))
		}
		return nil
	}
	for _, st := range out.Tables {
		switch {
		case st.Error != "":
			e.printf("%s\t%s\n", st.Table, st.Error)
		case st.Segments == 0:
			e.printf("%s\t%s, no index (icebloom build %s --columns COL builds one)\n", st.Table, plural(st.LiveFiles, "data file"), st.Table)
		default:
			cols := make([]string, len(st.Columns))
			for i, col := range st.Columns {
				cols[i] = fmt.Sprintf("%s %d/%d", col.Name, col.Covered, st.LiveFiles)
			}
			line := fmt.Sprintf("%s\t%s, %s: %s", st.Table, plural(st.LiveFiles, "data file"), plural(st.Segments, "segment"), strings.Join(cols, ", "))
			if st.LastSync != nil {
				line += "; synced " + st.LastSync.UTC().Format(time.RFC3339)
			}
			e.printf("%s\n", line)
		}
	}
	return nil
}

// tableState fills st with the state of the table's index, measured as
// inspect measures it.
func tableState(ctx context.Context, e *env, name string, st *TableState) error {
	tbl, err := e.table(ctx, name)
	if err != nil {
		return err
	}
	if tbl.CurrentSnapshot() == nil {
		return nil // no data file, no index
	}
	in, err := inspect(ctx, tbl, 0)
	if err != nil {
		return err
	}
	st.LiveFiles, st.Segments = in.LiveFiles, len(in.Segments)
	for _, col := range in.Columns {
		st.Columns = append(st.Columns, ColumnCoverage{Name: col.Name, Covered: col.Covered})
	}
	var newest int64
	var at time.Time
	for _, seg := range in.Segments {
		if snap := tbl.SnapshotByID(seg.SnapshotID); snap != nil && snap.TimestampMs > newest {
			newest, at = snap.TimestampMs, time.UnixMilli(snap.TimestampMs).UTC()
		}
	}
	if newest > 0 {
		st.LastSync = &at
	}
	return nil
}

// catalogName is the name cat was opened under, which a SQL catalog keys
// its tables by; its type for catalogs without a name.
func catalogName(cat icecatalog.Catalog) string {
	if named, ok := cat.(interface{ Name() string }); ok && named.Name() != "" {
		return fmt.Sprintf("%q (%s)", named.Name(), cat.CatalogType())
	}
	return string(cat.CatalogType())
}
