// Package rowscan reads the rows of an Iceberg table that match a filter,
// from the data files a lookup planned (index/lookup), with iceberg-go's
// reader.
//
// iceberg-go evaluates a scan's row filter with arrow-go's compute kernels,
// and some predicates break there (measured on iceberg-go v0.7.0 and
// arrow-go v18.8.0 by TestScanEveryTypeAndOperator in cmd/icebloom):
// IS [NOT] NULL of a decimal column panics in a reader goroutine
// (arrow/compute.castBinaryDecimalArgs), which no caller can recover;
// boolean <, <= and >= fail with "not implemented" (no kernel); and every
// comparison of a string field inside a struct silently finds no rows
// (an int field there came out right, but struct fields are left out of
// the push-down as a whole). Its row-group pruning also takes a row group
// with as many NULLs as values of an optional column for all NULL and
// skips it for =, IN, ranges and IS NOT NULL (prunesAllNull). NOT IN is
// NOT (is_in), and is_in is false for NULL, so NOT IN kept NULL rows that
// SQL leaves out; IN and NOT IN of booleans keep the wrong rows; and any
// predicate on a column after a struct column fails ("invalid"), as
// measured by TestScanNullTruthTable in cmd/icebloom. rowscan
// therefore splits the bound filter: what iceberg-go evaluates correctly is
// pushed down (so its row-group statistics still prune), and the rest is
// evaluated here, row by row, with iceberg-go's own expression evaluator
// over the decoded records.
package rowscan

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Options configure Read.
type Options struct {
	// Select names the columns to return, in this order; nil returns every
	// column of the schema in its order. A field of a struct is named by
	// its full name (st.name) and returned as a column of that name, NULL
	// where the struct is. Names match regardless of case unless
	// CaseSensitive.
	Select []string
	// Limit stops reading after this many matching rows; 0 reads all.
	Limit int64
	// CaseSensitive makes Select's names match exactly.
	CaseSensitive bool
	// SnapshotID is the snapshot the tasks were planned from (0: current).
	SnapshotID int64
}

// Read reads the rows of tasks that match bound, a filter bound to schema
// (the schema the tasks were planned with, as lookup.Result.Bound is), and
// returns their schema and records. The records hold only matching rows,
// at most o.Limit of them, with the columns of o.Select. A panic while the
// records are read on the caller's goroutine is returned as an error.
func Read(ctx context.Context, tbl *table.Table, schema *iceberg.Schema, bound iceberg.BooleanExpression,
	tasks []table.FileScanTask, o Options) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	if bound == nil {
		bound = iceberg.AlwaysTrue{}
	}
	push, local, localFields, err := Split(schema, bound)
	if err != nil {
		return nil, nil, err
	}
	selected, err := selectColumns(schema, o.Select, o.CaseSensitive)
	if err != nil {
		return nil, nil, err
	}
	// The columns read: those selected, and the top-level columns the local
	// filter names (whole, so that the positions of struct fields are the
	// schema's), dropped again before the records are returned.
	var read []string
	for _, sel := range selected {
		if !slices.Contains(read, sel.top) {
			read = append(read, sel.top)
		}
	}
	var test rowTest
	if local != nil {
		for _, id := range localFields {
			top := topLevel(schema, id)
			if !slices.Contains(read, top) {
				read = append(read, top)
			}
		}
		if test, err = compile(local); err != nil {
			return nil, nil, err
		}
	}
	opts := []table.ScanOption{table.WithSelectedFields(read...), table.WithCaseSensitive(true)}
	if push != nil {
		opts = append(opts, table.WithRowFilter(push))
	}
	if o.SnapshotID != 0 {
		opts = append(opts, table.WithSnapshotID(o.SnapshotID))
	}
	if o.Limit > 0 && local == nil {
		// iceberg-go stops opening files once this many rows came out; with
		// a local filter its count would include rows that filter drops.
		opts = append(opts, table.WithLimit(o.Limit))
	}
	// The planner's residuals hold the whole filter, unsafe predicates
	// included; without them iceberg-go applies the pushed-down part.
	tasks = slices.Clone(tasks)
	for i := range tasks {
		tasks[i].Residual = nil
	}
	readSchema, records, err := tbl.Scan(opts...).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, nil, err
	}
	cols := make([]column, len(selected))
	fields := make([]arrow.Field, len(selected))
	for i, sel := range selected {
		idx := readSchema.FieldIndices(sel.top)
		if len(idx) != 1 {
			return nil, nil, fmt.Errorf("column %s: not in the records read", sel.top)
		}
		f := readSchema.Field(idx[0])
		for _, pos := range sel.path {
			st, ok := f.Type.(*arrow.StructType)
			if !ok || pos >= st.NumFields() {
				return nil, nil, fmt.Errorf("column %s: not in the records read", sel.name)
			}
			f = st.Field(pos)
			f.Nullable = true // NULL where the struct is
		}
		f.Name = sel.name
		cols[i], fields[i] = column{idx[0], sel.path}, f
	}
	md := readSchema.Metadata()
	outSchema := arrow.NewSchema(fields, &md)
	var positions []int // schema position → column of the records read
	if test != nil {
		positions = make([]int, len(schema.Fields()))
		for i, f := range schema.Fields() {
			positions[i] = -1
			if idx := readSchema.FieldIndices(f.Name); len(idx) == 1 {
				positions[i] = idx[0]
			}
		}
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		left := o.Limit
		defer func() {
			if r := recover(); r != nil {
				yield(nil, fmt.Errorf("read rows: internal error: %v", r))
			}
		}()
		for rec, err := range records {
			if err != nil {
				yield(nil, err)
				return
			}
			done := emit(rec, test, positions, cols, outSchema, &left, o.Limit > 0, yield)
			rec.Release()
			if done {
				return
			}
		}
	}
	return outSchema, seq, nil
}

// emit yields the runs of rec's rows that test keeps (all rows without a
// test), projected to cols, counting them off left when limited. It
// reports whether the limit was reached or the consumer stopped.
func emit(rec arrow.RecordBatch, test rowTest, positions []int, cols []column, schema *arrow.Schema,
	left *int64, limited bool, yield func(arrow.RecordBatch, error) bool) (done bool) {
	n := int(rec.NumRows())
	row := &recordRow{rec: rec, positions: positions}
	for start := 0; start < n; {
		// The next run of kept rows: [start, end).
		if test != nil {
			for ; start < n; start++ {
				if row.i = start; test(row) == yes {
					break
				}
			}
		}
		end := start
		for end < n {
			if limited && int64(end-start) >= *left {
				break
			}
			if test != nil {
				if row.i = end; test(row) != yes {
					break
				}
			}
			end++
		}
		if end > start {
			arrs := make([]arrow.Array, len(cols))
			for i, c := range cols {
				whole := fieldOf(rec.Column(c.index), c.path)
				arrs[i] = array.NewSlice(whole, int64(start), int64(end))
				whole.Release()
			}
			out := array.NewRecordBatch(schema, arrs, int64(end-start))
			for _, a := range arrs {
				a.Release()
			}
			more := yield(out, nil)
			out.Release()
			if !more {
				return true
			}
			if limited {
				if *left -= int64(end - start); *left <= 0 {
					return true
				}
			}
		}
		start = end
	}
	return false
}

// selection is a column to return: a top-level column, or a field of
// structs within it.
type selection struct {
	name string // as returned: the column's name, or the field's full name
	top  string // the top-level column that holds it
	path []int  // the field's positions in the structs below top
}

// column is a selection in the records read: the top-level column's index
// and the path below it.
type column struct {
	index int
	path  []int
}

// fieldOf returns the field at path in the structs of arr (arr itself for
// none), NULL in each row where a struct on the way is. The caller
// releases it.
func fieldOf(arr arrow.Array, path []int) arrow.Array {
	arr.Retain()
	for _, pos := range path {
		st := arr.(*array.Struct)
		child := withNullsOf(st.Field(pos), st)
		arr.Release()
		arr = child
	}
	return arr
}

// withNullsOf returns child, a field of st, NULL also where st is: Arrow
// leaves a field's values under a NULL struct undefined.
func withNullsOf(child arrow.Array, st *array.Struct) arrow.Array {
	if st.NullN() == 0 {
		child.Retain()
		return child
	}
	data := child.Data()
	n, off := child.Len(), data.Offset()
	bits := make([]byte, bitutil.BytesForBits(int64(off+n)))
	nulls := 0
	for i := range n {
		if st.IsValid(i) && child.IsValid(i) {
			bitutil.SetBit(bits, off+i)
		} else {
			nulls++
		}
	}
	buffers := slices.Clone(data.Buffers())
	buffers[0] = memory.NewBufferBytes(bits)
	merged := array.NewData(data.DataType(), n, buffers, data.Children(), nulls, off)
	defer merged.Release()
	return array.MakeFromData(merged)
}

// selectColumns resolves names to the schema's top-level columns and
// struct fields, in the order given; none selects every top-level column.
func selectColumns(schema *iceberg.Schema, names []string, caseSensitive bool) ([]selection, error) {
	if len(names) == 0 {
		out := make([]selection, 0, len(schema.Fields()))
		for _, f := range schema.Fields() {
			out = append(out, selection{name: f.Name, top: f.Name})
		}
		return out, nil
	}
	var out []selection
	var errs []error
	for _, name := range names {
		sel, err := selectColumn(schema, name, caseSensitive)
		switch {
		case err != nil:
			errs = append(errs, err)
		case slices.ContainsFunc(out, func(o selection) bool { return o.name == sel.name }):
			errs = append(errs, fmt.Errorf("select %s: named twice", name))
		default:
			out = append(out, sel)
		}
	}
	return out, errors.Join(errs...)
}

// selectColumn resolves one name of Select: a top-level column, or a
// field of structs named by its full name; regardless of case unless
// caseSensitive, the exact name first.
func selectColumn(schema *iceberg.Schema, name string, caseSensitive bool) (selection, error) {
	var found []string
	var walk func(prefix string, fields []iceberg.NestedField)
	walk = func(prefix string, fields []iceberg.NestedField) {
		for _, f := range fields {
			full := prefix + f.Name
			if full == name || (!caseSensitive && strings.EqualFold(full, name)) {
				found = append(found, full)
			}
			if st, ok := f.Type.(*iceberg.StructType); ok && strings.Count(name, ".") > strings.Count(full, ".") {
				walk(full+".", st.FieldList)
			}
		}
	}
	walk("", schema.Fields())
	switch {
	case len(found) == 0:
		return selection{}, fmt.Errorf("select %s: no such column", name)
	case slices.Contains(found, name):
		found = []string{name}
	case len(found) > 1:
		return selection{}, fmt.Errorf("select %s: ambiguous column: matches %v regardless of case", name, found)
	}
	if slices.ContainsFunc(schema.Fields(), func(f iceberg.NestedField) bool { return f.Name == found[0] }) {
		return selection{name: found[0], top: found[0]}, nil // a top-level column, dotted or not
	}
	// Walk the schema again along the name found, noting positions.
	parts := strings.Split(found[0], ".")
	sel := selection{name: found[0], top: parts[0]}
	fields := schema.Fields()
	for depth, part := range parts {
		pos := slices.IndexFunc(fields, func(f iceberg.NestedField) bool { return f.Name == part })
		if depth > 0 {
			sel.path = append(sel.path, pos)
		}
		if st, ok := fields[pos].Type.(*iceberg.StructType); ok {
			fields = st.FieldList
		}
	}
	return sel, nil
}

// topLevel returns the name of the top-level column that holds field id.
func topLevel(schema *iceberg.Schema, id int) string {
	for _, f := range schema.Fields() {
		if holds(f, id) {
			return f.Name
		}
	}
	return ""
}

// holds reports whether f is field id or holds it.
func holds(f iceberg.NestedField, id int) bool {
	if f.ID == id {
		return true
	}
	if nt, ok := f.Type.(iceberg.NestedType); ok {
		for _, c := range nt.Fields() {
			if holds(c, id) {
				return true
			}
		}
	}
	return false
}
