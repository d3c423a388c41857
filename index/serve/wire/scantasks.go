package wire

import (
	"fmt"
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
// the table's current schema.
func ScanTasks(meta table.Metadata, tasks []table.FileScanTask, statsFields map[int]bool) (rest.ScanTasks, error) {
	var env rest.ScanTasks
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
				if wt.ResidualFilter, err = Expression(t.Residual, meta.CurrentSchema()); err != nil {
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

// deleteKey tells delete files apart: deletion vectors of one Puffin file
// differ by their blob's offset.
func deleteKey(d iceberg.DataFile) string {
	key := d.FilePath()
	if off := d.ContentOffset(); off != nil {
		key += fmt.Sprintf("@%d", *off)
	}
	return key
}
