package filescan

import (
	"fmt"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// LiveFiles lists the data files of a snapshot that keep accepts (nil:
// all): manifests of data files only (delete files are not indexed),
// entries not marked DELETED. A shard's keep holds only its files in
// memory, however many the snapshot has.
func LiveFiles(fs icebergio.IO, meta table.Metadata, snap *table.Snapshot, keep func(path string) bool) ([]File, error) {
	var files []File
	err := EachDataFile(fs, snap, nil, func(df iceberg.DataFile) {
		if keep == nil || keep(df.FilePath()) {
			files = append(files, File{Path: df.FilePath(), Size: df.FileSizeBytes(), Identity: identityValues(meta, df)})
		}
	})
	return files, err
}

// EachDataFile calls fn for every live data file of the snapshot's data
// manifests, skipping manifests already in seen (nil: none) and adding the
// others to it, so that walking several snapshots reads a shared manifest
// once. The data files passed to fn carry no column statistics: the
// manifests are read with iceberg-go's projection that leaves them out
// (ManifestEntryProjection), as every caller needs only a file's location,
// size, spec and partition, and decoding the per-column maps of every entry
// was most of the cost of walking a large table's manifests.
func EachDataFile(fs icebergio.IO, snap *table.Snapshot, seen map[string]bool, fn func(iceberg.DataFile)) error {
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData || seen[m.FilePath()] {
			continue
		}
		if seen != nil {
			seen[m.FilePath()] = true
		}
		if err := ManifestDataFiles(fs, m, fn); err != nil {
			return err
		}
	}
	return nil
}

// ManifestDataFiles calls fn for every live data file of one data manifest
// (entries not marked DELETED), without their column statistics, as
// EachDataFile does.
func ManifestDataFiles(fs icebergio.IO, m iceberg.ManifestFile, fn func(iceberg.DataFile)) error {
	for entry, err := range iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{}) {
		if err != nil {
			return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		if df := entry.DataFile(); df.ContentType() == iceberg.EntryContentData {
			fn(df)
		}
	}
	return nil
}

// identityValues maps the source field of each identity partition field of
// df's spec to df's partition value.
func identityValues(meta table.Metadata, df iceberg.DataFile) map[int]any {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil
	}
	var values map[int]any
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.IdentityTransform); ok {
			if values == nil {
				values = map[int]any{}
			}
			values[pf.SourceID()] = df.Partition()[pf.FieldID]
		}
	}
	return values
}
