package segment

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/hashing"
	"github.com/icebloom/icebloom/index/sbbf"
)

// workedExample is the segment of docs/format.md §9: two data files, one
// long column (field 1), one block per filter, the group's tag fixed.
func workedExample() (run []byte, dir []byte, g Group) {
	g = Group{FieldID: 1, ValueType: iceberg.PrimitiveTypes.Int64, FPP: 0.01, Blocks: 1,
		Members: []Member{{File: 0, NDV: 2}, {File: 1, NDV: 1}}, Tag: 0x0123456789abcdef, Offset: 4}
	a, b := sbbf.New(1), sbbf.New(1)
	a.Insert(hashing.Int64(7842913))
	a.Insert(hashing.Int64(42))
	b.Insert(hashing.Int64(7))
	run = append(run, a.Bytes()...)
	run = append(run, b.Bytes()...)
	c := g.ChunkOf(0, 0)
	run = binary.LittleEndian.AppendUint32(run, c.sum(run))
	d := Directory{Groups: []Group{g}}
	d.Files.Append("s3://b/t/data/a.parquet", 1000)
	d.Files.Append("s3://b/t/data/b.parquet", 2000)
	return run, d.Encode(), g
}

// TestFormatWorkedExampleV2 keeps docs/format.md §9 honest: the run and the
// directory it shows are what the code writes, and they decode and verify.
func TestFormatWorkedExampleV2(t *testing.T) {
	run, dir, g := workedExample()
	if !g.ChunkOf(0, 1).Verify(run) {
		t.Fatal("the example's run does not verify")
	}
	if _, err := DecodeDirectory(dir, 4+int64(len(run))); err != nil {
		t.Fatal(err)
	}
	// §9's lookup: 7842913 is in member 0's block, not in member 1's.
	h := hashing.Int64(7842913)
	if sbbf.BlockIndex(h, 1) != 0 || !sbbf.CheckBlock(run[:32], h) || sbbf.CheckBlock(run[32:64], h) {
		t.Error("the example's lookup of 7842913 does not go as §9 says")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "format.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	for name, b := range map[string][]byte{"member 0's block": run[:32], "member 1's block": run[32:64], "checksum": run[64:], "directory": dir} {
		if want := spaced(b); !strings.Contains(text, want) {
			t.Errorf("docs/format.md §9 lacks the %s bytes:\n%s", name, want)
		}
	}
}

// spaced is hex in groups of 4 bytes, as the specification shows bytes.
func spaced(b []byte) string {
	var parts []string
	for len(b) > 0 {
		n := min(4, len(b))
		parts = append(parts, hex.EncodeToString(b[:n]))
		b = b[n:]
	}
	return strings.Join(parts, " ")
}
