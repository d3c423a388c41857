package indexer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index"
	"github.com/icebloom/icebloom/index/hashing"
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

// Column is an indexed column: the field whose values are hashed, the type
// they are hashed as (its type in the current schema) and the target
// false-positive rate of its filters.
type Column struct {
	Field iceberg.NestedField
	Name  string // full dotted name in the schema
	Type  iceberg.PrimitiveType
	FPP   float64
}

// ResolveColumns picks the columns to index: names when given, else every
// column the table properties enable bloom filters for, else an error. The
// rate is fpp when positive, else the column's fpp property, else
// DefaultFPP. Every column must be a primitive the index supports.
//
// Names match regardless of case, as in lookup filters: the column of
// exactly that name if there is one, else the only one whose name differs
// from it in case; several such columns are an error naming them. A
// Column's Name is the schema's.
func ResolveColumns(schema *iceberg.Schema, props iceberg.Properties, names []string, fpp float64) ([]Column, error) {
	if len(names) == 0 {
		for key, value := range props {
			name, ok := strings.CutPrefix(key, PropBloomEnabledPrefix)
			if ok && strings.EqualFold(strings.TrimSpace(value), "true") {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("no columns to index: name them (--columns) or set %s<name>=true on the table", PropBloomEnabledPrefix)
		}
	}
	if fpp != 0 && !(fpp > 0 && fpp < 1) {
		return nil, fmt.Errorf("false-positive rate %v is not in (0, 1)", fpp)
	}
	cols := make([]Column, 0, len(names))
	seen := map[int]bool{}
	for _, name := range names {
		name = strings.TrimSpace(name)
		field, err := findColumn(schema, name)
		if err != nil {
			return nil, err
		}
		typ, ok := field.Type.(iceberg.PrimitiveType)
		if !ok || !hashing.SupportsType(typ) {
			return nil, fmt.Errorf("column %q of type %s cannot be indexed", name, field.Type)
		}
		if seen[field.ID] {
			continue
		}
		seen[field.ID] = true
		full, _ := schema.FindColumnName(field.ID)
		col := Column{Field: field, Name: full, Type: typ, FPP: fpp}
		if col.FPP == 0 {
			col.FPP = DefaultFPP
			key, s, ok := fppProperty(props, full, name)
			if ok {
				v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err != nil || !(v > 0 && v < 1) {
					return nil, fmt.Errorf("table property %s=%q is not a rate in (0, 1)", key, s)
				}
				col.FPP = v
			}
		}
		cols = append(cols, col)
	}
	return cols, nil
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
