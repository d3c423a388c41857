package indexer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/filescan"
	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/indexfile"
	"github.com/icebloom/icebloom/puffin"
)

// Table properties that choose indexed columns and their false-positive
// rates when the caller does not: the ones Iceberg writers already use for
// Parquet row-group bloom filters, so a table configured for those gets a
// file-level index of the same columns.
const (
	PropBloomEnabledPrefix = "write.parquet.bloom-filter-enabled.column."
	PropBloomFPPPrefix     = "write.parquet.bloom-filter-fpp.column."
)

// DefaultFPP is the false-positive rate used when neither the caller nor the
// table names one.
const DefaultFPP = 0.01

// ErrNoColumns is why a run has nothing to index: no column was named, the
// table's index holds no filters, and no table property enables a column.
// Callers that go over many tables (maintain) skip such a table; any other
// column error (a misspelt or unindexable column) is a failure.
var ErrNoColumns = errors.New("no columns to index")

// Why a column is indexed, as ColumnSummary.Sources lists it.
const (
	SourceIndex    = "index"    // the table's index holds filters of it
	SourceProperty = "property" // write.parquet.bloom-filter-enabled.column.<name>=true
	SourceNamed    = "columns"  // named by the caller (--columns)
)

// Column is an indexed column: the column read and hashed (its field, the
// type its values are hashed as — its type in the current schema — and the
// target false-positive rate of its filters), and why it is indexed.
type Column struct {
	filescan.Column
	// Sources say why the column is indexed (SourceIndex, SourceProperty,
	// SourceNamed), in that order.
	Sources []string
}

// HeldColumn is a field the table's index holds filters of.
type HeldColumn struct {
	FieldID int
	// FPP is the strictest target rate its filters were built for, 0 when
	// unknown (only table metadata, not the segment, could be read).
	FPP float64
}

// NotIndexed is a field the index holds filters of that a run no longer
// indexes: the current schema dropped it, or it cannot be indexed. Its
// filters stay (lookups cannot name it; a time-travel reader may) until
// dropped with CompactOptions.DropColumns.
type NotIndexed struct {
	FieldID int    `json:"field_id"`
	Name    string `json:"name,omitempty"` // in the latest schema that has it
	Reason  string `json:"reason"`
}

// ColumnChoice is what IndexedColumns decided.
type ColumnChoice struct {
	Columns    []Column
	NotIndexed []NotIndexed
}

// HeldColumns returns the fields the table's index holds filters of, by
// field id order: those of the segments Load read, and those table
// metadata lists or records for the index (the fields of its items, and
// indexfile.PropIndexColumns with their rates) — so a broken segment, or a
// column whose every filter a repair left out, does not make the index
// forget its columns: the next sync indexes them again.
func HeldColumns(ix *index.TableIndex, meta table.Metadata) []HeldColumn {
	fpp := map[int]float64{}
	hold := func(id int, rate float64) {
		if old, ok := fpp[id]; !ok || rate > 0 && (old == 0 || rate < old) {
			fpp[id] = rate
		}
	}
	if ix != nil {
		for _, seg := range ix.Segments() {
			for _, e := range seg.Entries {
				hold(e.FieldID, e.FPP)
			}
			if dir := seg.Directory(); dir != nil {
				for _, g := range dir.Groups {
					hold(g.FieldID, g.FPP)
				}
			}
		}
	}
	if meta != nil {
		for sf := range meta.Statistics() {
			for _, bm := range sf.BlobMetadata {
				if !index.IsIndexBlobType(puffin.BlobType(bm.Type)) {
					continue
				}
				for _, id := range bm.Fields {
					hold(int(id), 0)
				}
				// A record that does not parse adds nothing: the fields
				// listed still count, and verify reports the index's state.
				recorded, _ := indexfile.RecordedColumns(bm)
				for id, rate := range recorded {
					hold(id, rate)
				}
			}
		}
	}
	held := make([]HeldColumn, 0, len(fpp))
	for id, rate := range fpp {
		held = append(held, HeldColumn{id, rate})
	}
	slices.SortFunc(held, func(a, b HeldColumn) int { return a.FieldID - b.FieldID })
	return held
}

// IndexedColumns decides a table's indexed columns, for every run that
// writes or keeps the index (build, sync, rebuild, maintain): the columns
// the index already holds filters of (held, HeldColumns), united with those
// the table properties enable and those named (--columns), which add to
// them. Removing a column is explicit (CompactOptions.DropColumns), never
// the effect of leaving it unnamed. With none at all, the error wraps
// ErrNoColumns.
//
// A held field the current schema no longer has, or that cannot be
// indexed, is reported in NotIndexed, not an error: the others are still
// indexed. A named or enabled column that is unknown or cannot be indexed
// is an error naming it.
//
// The rate of a column is fpp when positive, else its fpp table property,
// else the strictest its filters already target, else DefaultFPP. Named
// columns come first, in the order given, then the others by name.
func IndexedColumns(meta table.Metadata, held []HeldColumn, names []string, fpp float64) (*ColumnChoice, error) {
	if fpp != 0 && !(fpp > 0 && fpp < 1) {
		return nil, fmt.Errorf("false-positive rate %v is not in (0, 1)", fpp)
	}
	schema, props := meta.CurrentSchema(), meta.Properties()
	choice := &ColumnChoice{}
	byID := map[int]int{} // field id → index in choice.Columns
	add := func(name, source string, heldFPP float64) error {
		col, err := resolveColumn(schema, props, name, fpp, heldFPP)
		if err != nil {
			return err
		}
		if i, ok := byID[col.Field.ID]; ok {
			c := &choice.Columns[i]
			if !slices.Contains(c.Sources, source) {
				c.Sources = append(c.Sources, source)
			}
			if heldFPP > 0 && fpp == 0 && !hasFPPProperty(props, c.Name) {
				c.FPP = heldFPP
			}
			return nil
		}
		col.Sources = []string{source}
		byID[col.Field.ID] = len(choice.Columns)
		choice.Columns = append(choice.Columns, col)
		return nil
	}
	for _, name := range names {
		if err := add(strings.TrimSpace(name), SourceNamed, 0); err != nil {
			return nil, err
		}
	}
	named := len(choice.Columns)
	for _, h := range held {
		name, ok := schema.FindColumnName(h.FieldID)
		if !ok {
			choice.NotIndexed = append(choice.NotIndexed, NotIndexed{FieldID: h.FieldID, Name: formerName(meta, h.FieldID),
				Reason: "no longer in the table schema"})
			continue
		}
		if err := add(name, SourceIndex, h.FPP); err != nil {
			choice.NotIndexed = append(choice.NotIndexed, NotIndexed{FieldID: h.FieldID, Name: name, Reason: err.Error()})
		}
	}
	for _, name := range EnabledColumns(props) {
		if err := add(name, SourceProperty, 0); err != nil {
			return nil, fmt.Errorf("table property %s%s=true: %w", PropBloomEnabledPrefix, name, err)
		}
	}
	if len(choice.Columns) == 0 {
		why := "the table has no index"
		if len(choice.NotIndexed) > 0 {
			var held []string
			for _, n := range choice.NotIndexed {
				held = append(held, fmt.Sprintf("field %d %q: %s", n.FieldID, n.Name, n.Reason))
			}
			why = "the index holds only columns that can no longer be indexed (" + strings.Join(held, "; ") + ")"
		}
		return nil, fmt.Errorf("%w: %s; name them (--columns) or set %s<name>=true on the table",
			ErrNoColumns, why, PropBloomEnabledPrefix)
	}
	rest := choice.Columns[named:]
	slices.SortFunc(rest, func(a, b Column) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range choice.Columns {
		order := []string{SourceIndex, SourceProperty, SourceNamed}
		slices.SortFunc(c.Sources, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	}
	return choice, nil
}

// EnabledColumns returns the column names the table properties enable
// bloom filters for, sorted.
func EnabledColumns(props iceberg.Properties) []string {
	var names []string
	for key, value := range props {
		name, ok := strings.CutPrefix(key, PropBloomEnabledPrefix)
		if ok && strings.EqualFold(strings.TrimSpace(value), "true") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TableColumns decides the indexed columns of a table as a run would
// (IndexedColumns), loading its index to learn which columns it holds.
func TableColumns(ctx context.Context, tbl *table.Table, names []string, fpp float64) (*ColumnChoice, error) {
	fs, err := catalog.TableIO(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("table %s storage: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	choice, _, _, err := loadColumns(ctx, fs, tbl.Metadata(), names, fpp)
	return choice, err
}

// loadColumns loads the table's index and decides its indexed columns from
// it; it returns the index and Load's problems for the caller to use too.
func loadColumns(ctx context.Context, fs icebergio.IO, meta table.Metadata, names []string, fpp float64) (*ColumnChoice, *index.TableIndex, []error, error) {
	ix, errs := index.Load(ctx, fs, meta, nil)
	choice, err := IndexedColumns(meta, HeldColumns(ix, meta), names, fpp)
	return choice, ix, errs, err
}

// formerName returns the name a field had in the latest schema of the
// table that has it, "" if none does.
func formerName(meta table.Metadata, id int) string {
	schemas := meta.Schemas()
	for i := len(schemas) - 1; i >= 0; i-- {
		if name, ok := schemas[i].FindColumnName(id); ok {
			return name
		}
	}
	return ""
}

// ResolveColumns resolves column names to indexed columns, as given and
// nothing more (IndexedColumns decides what a run indexes). The rate is fpp
// when positive, else the column's fpp property, else DefaultFPP. Every
// column must be a primitive the index supports, outside any list or map.
//
// Names match regardless of case, as in lookup filters: the column of
// exactly that name if there is one, else the only one whose name differs
// from it in case; several such columns are an error naming them. A
// Column's Name is the schema's.
func ResolveColumns(schema *iceberg.Schema, props iceberg.Properties, names []string, fpp float64) ([]Column, error) {
	if fpp != 0 && !(fpp > 0 && fpp < 1) {
		return nil, fmt.Errorf("false-positive rate %v is not in (0, 1)", fpp)
	}
	cols := make([]Column, 0, len(names))
	seen := map[int]bool{}
	for _, name := range names {
		col, err := resolveColumn(schema, props, strings.TrimSpace(name), fpp, 0)
		if err != nil {
			return nil, err
		}
		if !seen[col.Field.ID] {
			seen[col.Field.ID] = true
			cols = append(cols, col)
		}
	}
	return cols, nil
}

// resolveColumn resolves one name to an indexable column with its rate:
// fpp when positive, else the fpp property, else heldFPP when positive,
// else DefaultFPP.
func resolveColumn(schema *iceberg.Schema, props iceberg.Properties, name string, fpp, heldFPP float64) (Column, error) {
	field, err := findColumn(schema, name)
	if err != nil {
		return Column{}, err
	}
	typ, ok := field.Type.(iceberg.PrimitiveType)
	if !ok || !hashing.SupportsType(typ) {
		return Column{}, fmt.Errorf("column %q of type %s cannot be indexed", name, field.Type)
	}
	if in := repeatedAncestor(schema, field.ID); in != "" {
		// A Parquet leaf inside a list or map holds many values per row;
		// the build reads only leaves with one value per row, so such a
		// column would get filters with no value in them, which a reader
		// would prune every file with.
		return Column{}, fmt.Errorf("column %q cannot be indexed: it is inside %s; the index covers top-level and struct-nested primitive columns", name, in)
	}
	full, _ := schema.FindColumnName(field.ID)
	col := Column{Column: filescan.Column{Field: field, Name: full, Type: typ, FPP: fpp}}
	if col.FPP == 0 {
		col.FPP = DefaultFPP
		if heldFPP > 0 {
			col.FPP = heldFPP
		}
		if key, s, ok := fppProperty(props, full, name); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(v > 0 && v < 1) {
				return Column{}, fmt.Errorf("table property %s=%q is not a rate in (0, 1)", key, s)
			}
			col.FPP = v
		}
	}
	return col, nil
}

// repeatedAncestor describes the list or map a field lies inside ("the
// list tags"), "" if it lies in none.
func repeatedAncestor(schema *iceberg.Schema, id int) string {
	parents, err := iceberg.IndexParents(schema)
	if err != nil {
		return ""
	}
	for p, ok := parents[id]; ok; p, ok = parents[p] {
		f, found := schema.FindFieldByID(p)
		if !found {
			break
		}
		name, _ := schema.FindColumnName(p)
		switch f.Type.(type) {
		case *iceberg.ListType:
			return "the list " + name
		case *iceberg.MapType:
			return "the map " + name
		}
	}
	return ""
}

// findColumn returns the field name names: the one of exactly that name,
// else the only one whose name differs from it in case.
func findColumn(schema *iceberg.Schema, name string) (iceberg.NestedField, error) {
	if field, ok := schema.FindFieldByName(name); ok {
		return field, nil
	}
	matches, err := index.NamesFold(schema, name)
	if err != nil {
		return iceberg.NestedField{}, fmt.Errorf("column %q: %w", name, err)
	}
	switch len(matches) {
	case 0:
		return iceberg.NestedField{}, fmt.Errorf("column %q is not in the table schema", name)
	case 1:
		field, _ := schema.FindFieldByName(matches[0])
		return field, nil
	}
	return iceberg.NestedField{}, fmt.Errorf("column %q is ambiguous: it matches %s regardless of case",
		name, strings.Join(matches, ", "))
}

// fppProperty returns the table's fpp property of a column: the one keyed by
// its name in the schema, else by the name as the caller wrote it.
func fppProperty(props iceberg.Properties, full, written string) (key, value string, ok bool) {
	for _, name := range []string{full, written} {
		key = PropBloomFPPPrefix + name
		if value, ok = props[key]; ok {
			return key, value, true
		}
	}
	return "", "", false
}

// hasFPPProperty reports whether the table sets the fpp of the column.
func hasFPPProperty(props iceberg.Properties, name string) bool {
	_, _, ok := fppProperty(props, name, name)
	return ok
}

// dropFields resolves the columns a compaction drops to field ids: each a
// column of the current schema, or of an earlier one (a column the schema
// dropped), whose filters the index holds. A column a table property
// enables is refused: the next sync would index it again, so the property
// must be unset first.
func dropFields(meta table.Metadata, held []HeldColumn, names []string) (map[int]string, error) {
	drop := map[int]string{}
	props := meta.Properties()
	for _, name := range names {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		field, err := findColumn(meta.CurrentSchema(), name)
		if err != nil {
			// A column no longer in the schema: by its name in the
			// latest earlier schema that has it.
			found := false
			schemas := meta.Schemas()
			for i := len(schemas) - 1; i >= 0 && !found; i-- {
				field, found = schemas[i].FindFieldByName(name)
			}
			if !found {
				return nil, fmt.Errorf("drop column %q: %w", name, err)
			}
		}
		if !slices.ContainsFunc(held, func(h HeldColumn) bool { return h.FieldID == field.ID }) {
			return nil, fmt.Errorf("drop column %q: the index holds no filters of it", name)
		}
		full, ok := meta.CurrentSchema().FindColumnName(field.ID)
		if !ok {
			full = name
		}
		for _, enabled := range EnabledColumns(props) {
			if f, err := findColumn(meta.CurrentSchema(), enabled); err == nil && f.ID == field.ID {
				return nil, fmt.Errorf("drop column %q: table property %s%s=true enables it, so the next sync would index it again; unset the property first",
					name, PropBloomEnabledPrefix, enabled)
			}
		}
		drop[field.ID] = full
	}
	return drop, nil
}

// ColumnSummary is what a run did for one indexed column.
type ColumnSummary struct {
	Name    string   `json:"name"`
	FieldID int      `json:"field_id"`
	FPP     float64  `json:"fpp"`
	Sources []string `json:"sources"` // why it is indexed: SourceIndex, SourceProperty, SourceNamed
	// FilesCovered counts the live data files the index covered for the
	// column before the run (a sync's; a build covers every file again).
	FilesCovered int `json:"files_covered"`
	// FilesRead counts the data files whose chunks of the column the run
	// read: a sync reads a column only for the files lacking its filter.
	FilesRead    int `json:"files_read"`
	FilesIndexed int `json:"files_indexed"` // filters of the column the run wrote
	// FilesFailedCount counts the data files whose column could not be
	// read (Summary.FilesFailed lists them, with the whole files that
	// failed).
	FilesFailedCount int `json:"files_failed_count"`
}

// chooseColumns decides the job's columns (IndexedColumns), from the index
// it loads and keeps for the run, and starts the summary's per-column
// report.
func (j *job) chooseColumns(ctx context.Context) error {
	choice, ix, errs, err := loadColumns(ctx, j.fs, j.tbl.Metadata(), j.o.Columns, j.o.FPP)
	if j.o.knobs.ExactColumns {
		choice = &ColumnChoice{}
		if len(j.o.Columns) == 0 {
			err = fmt.Errorf("%w: ExactColumns with no column named", ErrNoColumns)
		} else if choice.Columns, err = ResolveColumns(j.tbl.Schema(), j.tbl.Properties(), j.o.Columns, j.o.FPP); err == nil {
			for i := range choice.Columns {
				choice.Columns[i].Sources = []string{SourceNamed}
			}
		}
	}
	if err != nil {
		return err
	}
	j.ix, j.ixErrs, j.cols = ix, errs, choice.Columns
	j.columns = recordedColumns(HeldColumns(ix, j.tbl.Metadata()), j.cols)
	j.sum.NotIndexed = choice.NotIndexed
	for _, c := range j.cols {
		j.sum.Columns = append(j.sum.Columns, c.Name)
		j.sum.PerColumn = append(j.sum.PerColumn, ColumnSummary{Name: c.Name, FieldID: c.Field.ID, FPP: c.FPP, Sources: c.Sources})
	}
	if len(choice.NotIndexed) > 0 && j.o.Logger != nil {
		for _, n := range choice.NotIndexed {
			j.o.Logger.Warn("the index holds filters of a column it no longer indexes: they stay until dropped (compact-index --drop-columns)",
				"table", strings.Join(j.ident, "."), "field_id", n.FieldID, "column", n.Name, "reason", n.Reason)
		}
	}
	return nil
}

// scanColumns returns what index/filescan needs of each column, in order.
func scanColumns(cols []Column) []filescan.Column {
	out := make([]filescan.Column, len(cols))
	for i, c := range cols {
		out[i] = c.Column
	}
	return out
}

// recordedColumns is what a segment a run writes records of the index's
// columns (indexfile.PropIndexColumns): every column the index holds,
// with the rate the run indexes it at when it does (cols), else the rate
// its filters target.
func recordedColumns(held []HeldColumn, cols []Column) map[int]float64 {
	rec := make(map[int]float64, len(held)+len(cols))
	for _, h := range held {
		rec[h.FieldID] = h.FPP
	}
	for _, c := range cols {
		rec[c.Field.ID] = c.FPP
	}
	return rec
}
