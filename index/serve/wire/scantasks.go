package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// ScanTasks writes tasks as one REST ScanTasks envelope: one file-scan-task
// per data file and, once each, every delete file any of them needs, which
// each task names by its index in delete-files (delete-file-references are
// local to their envelope, so a page of a plan carries its own deletes).
//
// iceberg-go may split a large data file into several tasks (byte ranges);
// the REST FileScanTask has no range, so a client reads the whole file for
// each task it gets. Sending each split would make the client read a file's
// rows once per split, so the splits of a file become one task here, with
// the union of their delete files and the first split's residual (the
// splits of one file share its partition, so their residuals are one).
//
// statsFields are the field ids whose column statistics the client asked
// for (stats-fields); others are left out, as the spec says. A task's
// residual is written with Expression, binding any unbound predicate to
// the table's current schema. Tasks with one residual share its JSON (the
// same bytes, written once): a point lookup on an unpartitioned table gives
// every task the request's filter.
func ScanTasks(meta table.Metadata, tasks []table.FileScanTask, statsFields map[int]bool) (rest.ScanTasks, error) {
	var env rest.ScanTasks
	residuals := residualWriter{meta: meta}
	deleteIdx := map[string]int{}
	taskIdx := map[string]int{}
	for _, t := range tasks {
		path := t.File.FilePath()
		ti, seen := taskIdx[path]
		if !seen {
			df, err := DataFile(meta, t.File, statsFields)
			if err != nil {
				return rest.ScanTasks{}, err
			}
			wt := rest.RESTFileScanTask{DataFile: df}
			if t.Residual != nil {
				if wt.ResidualFilter, err = residuals.write(t.Residual); err != nil {
					return rest.ScanTasks{}, fmt.Errorf("%s: residual filter: %w", path, err)
				}
			}
			ti = len(env.FileScanTasks)
			taskIdx[path] = ti
			env.FileScanTasks = append(env.FileScanTasks, wt)
		}
		wt := &env.FileScanTasks[ti]
		for _, group := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range group {
				key := deleteKey(d)
				di, ok := deleteIdx[key]
				if !ok {
					rd, err := DeleteFile(meta, d)
					if err != nil {
						return rest.ScanTasks{}, err
					}
					di = len(env.DeleteFiles)
					deleteIdx[key] = di
					env.DeleteFiles = append(env.DeleteFiles, rd)
				}
				if !slices.Contains(wt.DeleteFileReferences, di) {
					wt.DeleteFileReferences = append(wt.DeleteFileReferences, di)
				}
			}
		}
	}
	return env, nil
}

// residualWriter writes the residuals of one envelope, each distinct one
// once. Writing one costs microseconds (a visit, a json.Marshal per node,
// and meta.CurrentSchema clones the schema at each call), about a tenth of
// a warm plan of a large table when done for each task, while most tasks
// share their residual: an unpartitioned table's tasks all have the
// request's filter, a partitioned one's have one of a few (the filter, or
// what is left of it on the partitions whose values decide some of its
// predicates).
//
// Residuals are told apart by ==, the identity of their nodes: iceberg-go's
// predicates are pointers, and And, Or and Not are structs of their
// children, so two residuals built of the same predicates (as
// planning.residuals builds them, per partition, from one compiled filter)
// are equal, and equal residuals are the same expression, which writes the
// same JSON. A residual that == cannot compare (a node type holding a
// slice or a map would make == panic) is written on its own each time.
// String would be a key for those too, but costs about what writing does.
type residualWriter struct {
	meta    table.Metadata
	schema  *iceberg.Schema // meta's current schema, taken at the first residual written
	written map[iceberg.BooleanExpression]json.RawMessage
}

// write is Expression(expr, the current schema), the bytes of an earlier
// equal residual when there was one.
func (w *residualWriter) write(expr iceberg.BooleanExpression) (json.RawMessage, error) {
	keyed := reflect.ValueOf(expr).Comparable()
	if keyed {
		if out, ok := w.written[expr]; ok {
			return out, nil
		}
	}
	if w.schema == nil {
		w.schema = w.meta.CurrentSchema()
	}
	out, err := Expression(expr, w.schema)
	if err != nil {
		return nil, err
	}
	if keyed {
		if w.written == nil {
			w.written = map[iceberg.BooleanExpression]json.RawMessage{}
		}
		w.written[expr] = out
	}
	return out, nil
}

// deleteKey tells delete files apart: deletion vectors of one Puffin file
// differ by their blob's offset.
func deleteKey(d iceberg.DataFile) string {
	key := d.FilePath()
	if off := d.ContentOffset(); off != nil {
		key += fmt.Sprintf("@%d", *off)
	}
	return key
}
