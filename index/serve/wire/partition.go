package wire

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// PartitionTypes are the types of spec's partition tuple, field by field:
// each field's transform result type over its source column (the spec's
// partition type; Java's spec.partitionType()). A day field is a date, a
// bucket an int, an identity or truncate field its column's type. The
// source column is looked up in the current schema and then in the
// table's older ones, as a spec may partition on a column since dropped.
func PartitionTypes(meta table.Metadata, spec *iceberg.PartitionSpec) ([]iceberg.Type, error) {
	types := make([]iceberg.Type, 0, spec.NumFields())
	for _, field := range spec.Fields() {
		src, ok := sourceType(meta, field.SourceID())
		if !ok {
			return nil, fmt.Errorf("partition spec %d: field %s: no schema has source column %d", spec.ID(), field.Name, field.SourceID())
		}
		types = append(types, field.Transform.ResultType(src))
	}
	return types, nil
}

func sourceType(meta table.Metadata, id int) (iceberg.Type, bool) {
	if s := meta.CurrentSchema(); s != nil {
		if f, ok := s.FindFieldByID(id); ok {
			return f.Type, true
		}
	}
	for _, s := range meta.Schemas() {
		if f, ok := s.FindFieldByID(id); ok {
			return f.Type, true
		}
	}
	return nil, false
}

// Partition writes f's partition tuple as the spec's ContentFile
// partition: a JSON array in the order of its spec's fields, each value in
// the single-value form of the field's partition type.
func Partition(meta table.Metadata, f iceberg.DataFile) ([]json.RawMessage, error) {
	spec := meta.PartitionSpecByID(int(f.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("unknown partition spec %d", f.SpecID())
	}
	types, err := PartitionTypes(meta, spec)
	if err != nil {
		return nil, err
	}
	values := f.Partition()
	out := make([]json.RawMessage, 0, len(types))
	for i, field := range spec.Fields() {
		raw, err := Value(types[i], values[field.FieldID])
		if err != nil {
			return nil, fmt.Errorf("partition field %s: %w", field.Name, err)
		}
		out = append(out, raw)
	}
	return out, nil
}

// ParsePartition reads a partition tuple of spec specID back, as Java's
// ContentFileParser does: one value a field, in order; the result maps
// partition field ids to values (nil for null), as DataFile.Partition does.
func ParsePartition(meta table.Metadata, specID int, values []json.RawMessage) (map[int]any, error) {
	spec := meta.PartitionSpecByID(specID)
	if spec == nil {
		return nil, fmt.Errorf("unknown partition spec %d", specID)
	}
	types, err := PartitionTypes(meta, spec)
	if err != nil {
		return nil, err
	}
	if len(values) != len(types) {
		return nil, fmt.Errorf("partition spec %d has %d fields, the tuple %d values", specID, len(types), len(values))
	}
	out := make(map[int]any, len(types))
	for i, field := range spec.Fields() {
		v, err := ParseValue(types[i], values[i])
		if err != nil {
			return nil, fmt.Errorf("partition field %s: %w", field.Name, err)
		}
		out[field.FieldID] = v
	}
	return out, nil
}
