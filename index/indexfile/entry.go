package indexfile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// Entry returns the table-metadata entry that registers the v2 index file
// sf names as icebloom's writers register it (File.StatisticsFile),
// derived from the file itself — its footer and directory — and not from
// the items sf lists, which a careless tool may have edited: the path,
// sizes and snapshot are sf's, other tools' items are those sf lists (or,
// when it lists none, those the footer gives), and the index-columns
// record is the one sf holds. ok is false for a file without a v2
// directory (format v1, or only other tools' blobs); a file that cannot be
// read is an UnreadableError.
func Entry(fs icebergio.IO, sf table.StatisticsFile) (want table.StatisticsFile, ok bool, err error) {
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		return table.StatisticsFile{}, false, &UnreadableError{sf.StatisticsPath, fmt.Errorf("open %s: %w", sf.StatisticsPath, err)}
	}
	defer f.Close()
	pr, err := puffin.Open(f, sf.FileSizeInBytes, puffin.WithFooterSize(sf.FileFooterSizeInBytes))
	if err != nil {
		return table.StatisticsFile{}, false, &UnreadableError{sf.StatisticsPath, fmt.Errorf("read %s: %w", sf.StatisticsPath, err)}
	}
	off, length, isV2 := segment.FindDirectory(pr)
	if !isV2 {
		return table.StatisticsFile{}, false, nil
	}
	dir, err := segment.ReadDirectory(f, off, length)
	if err != nil {
		return table.StatisticsFile{}, false, &UnreadableError{sf.StatisticsPath, fmt.Errorf("read the directory of %s: %w", sf.StatisticsPath, err)}
	}
	file := File{Path: sf.StatisticsPath, Stats: puffin.Stats{FileSize: sf.FileSizeInBytes, FooterSize: sf.FileFooterSizeInBytes}}
	res := segment.Result{Directory: dir, DirectoryOffset: off, DirectoryLength: length, Members: map[int]int{}}
	fields := map[int]bool{}
	for _, g := range dir.Groups {
		res.Members[g.FieldID] += len(g.Members)
		fields[g.FieldID] = true
	}
	for _, l := range dir.Links {
		for _, id := range l.Fields {
			fields[id] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(fields)) {
		res.Fields = append(res.Fields, int32(id))
	}
	file.Dir = &res
	var sequence int64
	footerForeign := table.StatisticsFile{}
	for i := range pr.NumBlobs() {
		b, _ := pr.Blob(i)
		if b.Type == segment.DirectoryBlobType {
			sequence = b.SequenceNumber
		}
		if !index.IsIndexBlobType(b.Type) {
			file.foreign++
			footerForeign.BlobMetadata = append(footerForeign.BlobMetadata, table.BlobMetadata{Type: table.BlobType(b.Type),
				SnapshotID: b.SnapshotID, SequenceNumber: b.SequenceNumber, Fields: b.Fields, Properties: b.Properties})
		}
	}
	replaced := &footerForeign
	for _, bm := range sf.BlobMetadata {
		if !index.IsIndexBlobType(puffin.BlobType(bm.Type)) {
			replaced = &sf // it lists other tools' items: they stay as listed
		}
		if cols, _ := RecordedColumns(bm); len(cols) > 0 {
			file.Columns = cols
		}
	}
	return file.StatisticsFile(&table.Snapshot{SnapshotID: sf.SnapshotID, SequenceNumber: sequence}, replaced), true, nil
}

// EntryProblems compares what table metadata lists of an index file
// (have) with what the file holds (want, Entry's), item by item of the
// index: a group item per field with its entry-count, and the directory
// item's fields, place, links and shard-runs. Each difference is a
// problem naming the file; a reader trusting have would miss filters
// (no item: the file's files uncovered), or gc links (no links count).
func EntryProblems(have, want table.StatisticsFile) []string {
	var problems []string
	problem := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("index file %s: table metadata ", have.StatisticsPath)+fmt.Sprintf(format, args...))
	}
	counts := func(sf table.StatisticsFile) (groups map[int32]string, dir *table.BlobMetadata) {
		groups = map[int32]string{}
		for i, bm := range sf.BlobMetadata {
			switch puffin.BlobType(bm.Type) {
			case segment.GroupBlobType:
				for _, id := range bm.Fields {
					groups[id] = bm.Properties[PropEntryCount]
				}
			case segment.DirectoryBlobType:
				dir = &sf.BlobMetadata[i]
			}
		}
		return groups, dir
	}
	haveGroups, haveDir := counts(have)
	wantGroups, wantDir := counts(want)
	if haveDir == nil {
		problem("lists no directory item, so no reader finds the file's index (%s of the file's directory)", describeDirectory(wantDir))
		return problems
	}
	for _, id := range slices.Sorted(maps.Keys(wantGroups)) {
		if got, ok := haveGroups[id]; !ok {
			problem("lists no item of field %d, of which the file holds %s filters", id, wantGroups[id])
		} else if got != wantGroups[id] {
			problem("gives field %d an entry-count of %q, the file holds %s filters", id, got, wantGroups[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(haveGroups)) {
		if _, ok := wantGroups[id]; !ok {
			problem("lists an item of field %d, of which the file holds no group", id)
		}
	}
	if !slices.Equal(haveDir.Fields, wantDir.Fields) {
		problem("gives the directory the fields %v, the file's are %v", haveDir.Fields, wantDir.Fields)
	}
	for _, key := range []string{segment.PropDirectoryOffset, segment.PropDirectoryLength, segment.PropLinks, PropShardRuns} {
		got, had := haveDir.Properties[key]
		exp, has := wantDir.Properties[key]
		switch {
		case had && !has:
			problem("gives the directory %s=%s, which the file does not have", key, got)
		case !had && has:
			problem("lacks the directory's %s (the file's is %s)", key, exp)
		case got != exp:
			problem("gives the directory %s=%s, the file's is %s", key, got, exp)
		}
	}
	return problems
}

// describeDirectory says what a directory item counts: its fields and links.
func describeDirectory(dir *table.BlobMetadata) string {
	parts := []string{fmt.Sprintf("fields %v", dir.Fields)}
	if n, ok := dir.Properties[segment.PropLinks]; ok {
		parts = append(parts, n+" links")
	}
	return strings.Join(parts, ", ")
}
