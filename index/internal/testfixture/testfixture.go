// Package testfixture locates the project's test fixtures, reads the
// Parquet bloom filters stored in them and makes the tables that tests of
// several packages read, for tests only.
package testfixture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/icebloom/icebloom/catalog/catalogtest"
)

// Root returns the repository's root directory.
func Root() string { return catalogtest.RepoRoot() }

// External returns the path of a file under testdata/external, the golden
// files other projects wrote (see testdata/external/MANIFEST.md).
func External(elem ...string) string {
	return filepath.Join(append([]string{Root(), "testdata", "external"}, elem...)...)
}

// ReadExternal reads a file under testdata/external.
func ReadExternal(t testing.TB, elem ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(External(elem...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DecodeJSON decodes a JSON file under testdata/external into v.
func DecodeJSON(t testing.TB, v any, elem ...string) {
	t.Helper()
	if err := json.Unmarshal(ReadExternal(t, elem...), v); err != nil {
		t.Fatalf("decode %s: %v", filepath.Join(elem...), err)
	}
}

// ParquetBloomBitset splits a Parquet bloom filter (a Thrift compact
// BloomFilterHeader followed by the bitset) at the start of b and returns the
// bitset. It accepts only the one header form the format defines today —
// BLOCK algorithm, XXHASH, UNCOMPRESSED — and fails on anything else, such as
// the deprecated Murmur3 filters.
func ParquetBloomBitset(b []byte) ([]byte, error) {
	// field 1 (numBytes, i32): 0x15, then a zigzag varint.
	if len(b) < 2 || b[0] != 0x15 {
		return nil, fmt.Errorf("not a BloomFilterHeader: first byte %#x", b[0])
	}
	var zz uint64
	i := 1
	for shift := 0; ; shift += 7 {
		if i >= len(b) || shift > 35 {
			return nil, fmt.Errorf("bad numBytes varint")
		}
		c := b[i]
		i++
		zz |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	numBytes := int64(zz>>1) ^ -int64(zz&1)
	// fields 2, 3, 4: struct{ union field 1: empty struct }, then stop.
	rest := []byte{0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0}
	if len(b) < i+len(rest) || string(b[i:i+len(rest)]) != string(rest) {
		return nil, fmt.Errorf("header is not BLOCK/XXHASH/UNCOMPRESSED")
	}
	i += len(rest)
	if numBytes <= 0 || int64(len(b)-i) < numBytes {
		return nil, fmt.Errorf("numBytes %d does not fit the %d bytes after the header", numBytes, len(b)-i)
	}
	return b[i : i+int(numBytes)], nil
}
