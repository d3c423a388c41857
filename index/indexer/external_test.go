package indexer_test

import (
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icebloom/icebloom/index/hashing"
)

func newRand() *rand.Rand { return rand.New(rand.NewPCG(rand.Uint64(), 1)) }

type externalTable struct {
	name     string
	base     string                               // directory the table's relative paths start from
	metadata string                               // metadata file location, relative to base
	files    map[string]map[int][]iceberg.Literal // data file → field id → values it holds
}

// externalTables reads the EXPECTED.json of each golden table under root:
// its current metadata file and, per live data file, the values listed for
// each column. Paths are relative to root, except lineitem_iceberg's, which
// start from data/persistent/iceberg.
func externalTables(t *testing.T, root string) []externalTable {
	t.Helper()
	var out []externalTable
	err := filepath.WalkDir(filepath.Join(root, "data"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "EXPECTED.json" {
			return err
		}
		var exp struct {
			TableDir         string `json:"table_dir"`
			PathsRelativeTo  string `json:"paths_relative_to"`
			LatestMetadata   string `json:"latest_metadata_file"`
			CurrentDataFiles map[string]struct {
				Columns map[string]struct {
					Type    string            `json:"iceberg_type"`
					Values  []json.RawMessage `json:"values"`
					Samples []json.RawMessage `json:"sample_present_values"`
				} `json:"columns_by_field_id"`
			} `json:"current_data_files"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &exp); err != nil {
			return err
		}
		base := "."
		if !strings.HasPrefix(exp.PathsRelativeTo, "(") {
			base = exp.PathsRelativeTo
		}
		tableDir, err := filepath.Rel(base, exp.TableDir)
		if err != nil {
			return err
		}
		et := externalTable{
			name:     filepath.Base(exp.TableDir),
			base:     filepath.Join(root, base),
			metadata: filepath.Join(tableDir, "metadata", exp.LatestMetadata),
			files:    map[string]map[int][]iceberg.Literal{},
		}
		for file, df := range exp.CurrentDataFiles {
			et.files[file] = map[int][]iceberg.Literal{}
			for id, col := range df.Columns {
				fieldID, _ := strconv.Atoi(id)
				for _, raw := range append(col.Values, col.Samples...) {
					if lit := literalOf(t, col.Type, raw); lit != nil {
						et.files[file][fieldID] = append(et.files[file][fieldID], lit)
					}
				}
			}
		}
		out = append(out, et)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("found %d external tables, want at least 5", len(out))
	}
	return out
}

// literalOf converts a JSON value of EXPECTED.json to a literal of the type;
// nil for JSON null.
func literalOf(t *testing.T, typ string, raw json.RawMessage) iceberg.Literal {
	t.Helper()
	if string(raw) == "null" {
		return nil
	}
	var n json.Number
	var s string
	switch typ {
	case "string":
		must(t, json.Unmarshal(raw, &s))
		return iceberg.StringLiteral(s)
	case "uuid":
		must(t, json.Unmarshal(raw, &s))
		b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
		must(t, err)
		u, err := uuid.FromBytes(b)
		must(t, err)
		return iceberg.UUIDLiteral(u)
	}
	must(t, json.Unmarshal(raw, &n))
	v, err := n.Int64()
	must(t, err)
	if dt, err := hashing.ParseValueType(typ); err == nil {
		if dec, ok := dt.(iceberg.DecimalType); ok { // listed unscaled
			return iceberg.DecimalLiteral(iceberg.Decimal{Val: decimal128.FromI64(v), Scale: dec.Scale()})
		}
	}
	switch {
	case typ == "int":
		return iceberg.Int32Literal(v)
	case typ == "long":
		return iceberg.Int64Literal(v)
	case typ == "date":
		return iceberg.DateLiteral(v)
	}
	t.Fatalf("no literal for %s value %s", typ, raw)
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
