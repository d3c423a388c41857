package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/index/where"
)

// filterError rewrites an error of planning a filter on tbl (named name)
// for the command line: an unknown column is named with the columns the
// table has, not as lookup's "x: no such column".
func filterError(name string, tbl *table.Table, err error) error {
	var uc *where.UnknownColumnError
	if !errors.As(err, &uc) {
		return err
	}
	return fmt.Errorf("unknown column %q in the filter (table %s has columns %s)", uc.Column, name, schemaColumns(tbl.Schema(), 30))
}

// schemaColumns lists the columns of schema a filter can name — nested
// struct fields by their full name — at most max of them.
func schemaColumns(schema *iceberg.Schema, max int) string {
	var names []string
	var walk func(prefix string, fields []iceberg.NestedField)
	walk = func(prefix string, fields []iceberg.NestedField) {
		for _, f := range fields {
			if st, ok := f.Type.(*iceberg.StructType); ok {
				walk(prefix+f.Name+".", st.FieldList)
				continue
			}
			names = append(names, prefix+f.Name)
		}
	}
	walk("", schema.Fields())
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

// withRepair adds to an error about table's index (a problem lookup or
// inspect met; the files it concerns stay candidates) the command that
// repairs it:
//   - an index file that is missing or cannot be read at all, or whose
//     directory fails its checksum (index.SegmentError): sync finds it
//     broken, indexes its files again and compacts it away;
//   - a run of filters that fails its checksum or is cut short in a file
//     whose directory is sound: sync reads only directories and would keep
//     trusting it, so maintain, whose repair reads every run and rewrites
//     the index without the groups that fail (its sync then indexes their
//     files again).
//
// A failure that may pass (a cancelled run, a transient storage error)
// gets no advice.
func withRepair(table string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || catalog.IsTransient(err) {
		return err
	}
	var se *index.SegmentError
	switch {
	case errors.As(err, &se), errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (`icebloom sync %s` indexes its files again and removes it)", err, table)
	case errors.Is(err, segment.ErrChecksum), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w (`icebloom maintain %s` repairs it)", err, table)
	}
	return err
}

// withRepairs is withRepair of each error.
func withRepairs(table string, errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		out[i] = withRepair(table, err)
	}
	return out
}
