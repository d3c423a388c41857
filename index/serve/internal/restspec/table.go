package restspec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Table is what the checks need of a table's metadata (the spec's
// TableMetadata): the type of each field and the fields of each partition
// spec, to type partition values, bounds and residual literals.
type Table struct {
	byID   map[int]field
	byName map[string]field
	specs  map[int][]partitionField
}

// field is a schema field: its full name (dotted through structs) and its
// type as the metadata writes it ("long", "decimal(9,2)", "fixed[16]"),
// "" for nested types.
type field struct {
	id   int
	name string
	typ  string
}

// partitionField is a field of a partition spec and the type of its
// values: the type Java's transform gives (Transform.getResultType), which
// ContentFileParser parses partition values with.
type partitionField struct {
	name       string
	transform  string
	resultType string
}

// metadataJSON is the part of TableMetadata the checks read.
type metadataJSON struct {
	CurrentSchemaID int             `json:"current-schema-id"`
	Schemas         []schemaJSON    `json:"schemas"`
	Schema          *schemaJSON     `json:"schema"` // format version 1
	PartitionSpecs  []specJSON      `json:"partition-specs"`
	PartitionSpec   []specFieldJSON `json:"partition-spec"` // format version 1
}

type schemaJSON struct {
	SchemaID int         `json:"schema-id"`
	Fields   []fieldJSON `json:"fields"`
}

type fieldJSON struct {
	ID   int             `json:"id"`
	Name string          `json:"name"`
	Type json.RawMessage `json:"type"`
}

type specJSON struct {
	SpecID int             `json:"spec-id"`
	Fields []specFieldJSON `json:"fields"`
}

type specFieldJSON struct {
	Name      string `json:"name"`
	SourceID  *int   `json:"source-id"`
	SourceIDs []int  `json:"source-ids"`
	Transform string `json:"transform"`
}

// nestedTypeJSON is a struct, list or map type.
type nestedTypeJSON struct {
	Type      string          `json:"type"`
	Fields    []fieldJSON     `json:"fields"`
	ElementID int             `json:"element-id"`
	Element   json.RawMessage `json:"element"`
	KeyID     int             `json:"key-id"`
	Key       json.RawMessage `json:"key"`
	ValueID   int             `json:"value-id"`
	Value     json.RawMessage `json:"value"`
}

// ParseTable reads table metadata JSON (the metadata field of a
// LoadTableResult).
func ParseTable(metadata []byte) (*Table, error) {
	var m metadataJSON
	if err := json.Unmarshal(metadata, &m); err != nil {
		return nil, fmt.Errorf("table metadata: %w", err)
	}
	t := &Table{byID: map[int]field{}, byName: map[string]field{}, specs: map[int][]partitionField{}}
	schemas := m.Schemas
	if len(schemas) == 0 && m.Schema != nil {
		schemas = []schemaJSON{*m.Schema}
	}
	// The current schema's names win; older schemas fill in fields it
	// dropped (a time-travel plan may name them).
	for pass := range 2 {
		for _, s := range schemas {
			if (s.SchemaID == m.CurrentSchemaID) == (pass == 0) {
				if err := t.addFields("", s.Fields); err != nil {
					return nil, err
				}
			}
		}
	}
	specs := m.PartitionSpecs
	if len(specs) == 0 && m.PartitionSpec != nil {
		specs = []specJSON{{SpecID: 0, Fields: m.PartitionSpec}}
	}
	for _, s := range specs {
		fields := []partitionField{}
		for _, f := range s.Fields {
			source := -1
			if f.SourceID != nil {
				source = *f.SourceID
			} else if len(f.SourceIDs) > 0 {
				source = f.SourceIDs[0]
			}
			fields = append(fields, partitionField{name: f.Name, transform: f.Transform, resultType: resultType(f.Transform, t.byID[source].typ)})
		}
		t.specs[s.SpecID] = fields
	}
	return t, nil
}

func (t *Table) addFields(parent string, fields []fieldJSON) error {
	for _, f := range fields {
		if err := t.addField(join(parent, f.Name), f.ID, f.Type); err != nil {
			return err
		}
	}
	return nil
}

// addField records a field and, for nested types, the fields inside it
// under Java's full names (a.b, list.element, map.key, map.value).
func (t *Table) addField(name string, id int, typ json.RawMessage) error {
	var prim string
	if json.Unmarshal(typ, &prim) == nil {
		t.add(field{id: id, name: name, typ: prim})
		return nil
	}
	var n nestedTypeJSON
	if err := json.Unmarshal(typ, &n); err != nil {
		return fmt.Errorf("table metadata: field %s: type %s: %w", name, typ, err)
	}
	t.add(field{id: id, name: name})
	switch n.Type {
	case "struct":
		return t.addFields(name, n.Fields)
	case "list":
		return t.addField(name+".element", n.ElementID, n.Element)
	case "map":
		if err := t.addField(name+".key", n.KeyID, n.Key); err != nil {
			return err
		}
		return t.addField(name+".value", n.ValueID, n.Value)
	}
	return nil
}

func (t *Table) add(f field) {
	if _, ok := t.byID[f.id]; !ok {
		t.byID[f.id] = f
	}
	if _, ok := t.byName[f.name]; !ok {
		t.byName[f.name] = f
	}
}

// fieldByName finds a field by its full name: exactly, then ignoring case
// (a plan may be case-insensitive).
func (t *Table) fieldByName(name string) (field, bool) {
	if f, ok := t.byName[name]; ok {
		return f, true
	}
	for n, f := range t.byName {
		if strings.EqualFold(n, name) {
			return f, true
		}
	}
	return field{}, false
}

// resultType is the type of a transform's values for a source type, as
// Java's transforms give it: identity, truncate and void keep the source
// type; bucket, year, month and hour give int; day gives date (Java's
// Days.getResultType), so a day partition value is written as a date.
// "" when unknown: the value is then not typed.
func resultType(transform, source string) string {
	switch {
	case transform == "identity" || transform == "void" || strings.HasPrefix(transform, "truncate["):
		return source
	case transform == "year" || transform == "month" || transform == "hour" || strings.HasPrefix(transform, "bucket["):
		return "int"
	case transform == "day":
		return "date"
	}
	return ""
}
