package puffin

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// goldenDir holds files other Iceberg implementations wrote, with an
// expected.json per folder recording what is in them. Tests only read it.
const goldenDir = "../testdata/external/puffin"

// goldenFiles lists every golden Puffin file by folder/name.
var goldenFiles = []string{
	"iceberg-java/empty-puffin-uncompressed.bin",
	"iceberg-java/sample-metric-data-uncompressed.bin",
	"iceberg-java/sample-metric-data-compressed-zstd.bin",
	"iceberg-go/single-blob-dv.puffin",
	"iceberg-go/multi-blob-dv.puffin",
	"iceberg-go/deletion-vector-v1.puffin",
	"iceberg-python-trino/theta-sketches.puffin",
}

// lz4CLIFile has an LZ4-compressed footer written by the lz4 1.10.0
// command-line tool, an encoder independent of pierrec/lz4. It is copied
// from iceberg-go v0.7.0 (puffin/testdata/compressed-footer-lz4-cli.puffin).
const lz4CLIFile = "testdata/compressed-footer-lz4-cli.puffin"

func golden(t testing.TB, name string) []byte {
	t.Helper()
	return readFile(t, filepath.Join(goldenDir, name))
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// expectedFile is one entry of an expected.json.
type expectedFile struct {
	File            string          `json:"file"`
	Size            int64           `json:"size"`
	FooterSizeTotal int64           `json:"footer_size_total"`
	FooterJSON      json.RawMessage `json:"footer_json"`
	Blobs           []struct {
		Codec           *string `json:"codec"`
		DecompressedHex string  `json:"decompressed_hex"`
	} `json:"blobs"`
}

// expected returns what expected.json records about the golden file name.
func expected(t testing.TB, name string) expectedFile {
	t.Helper()
	var files []expectedFile
	if err := json.Unmarshal(golden(t, filepath.Join(filepath.Dir(name), "expected.json")), &files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.File == filepath.Base(name) {
			return f
		}
	}
	t.Fatalf("%s is not in expected.json", name)
	return expectedFile{}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assemble builds a Puffin file around blob bytes and a footer payload.
func assemble(blobs, payload []byte, flags byte) []byte {
	f := append([]byte(nil), magic[:]...)
	f = append(f, blobs...)
	f = append(f, magic[:]...)
	f = append(f, payload...)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(payload)))
	f = append(f, flags, 0, 0, 0)
	return append(f, magic[:]...)
}

// oneBlobFile builds a file with one blob of the given stored bytes,
// compressed with codec unless it is empty.
func oneBlobFile(codec string, stored []byte) []byte {
	codecJSON := ""
	if codec != "" {
		b, _ := json.Marshal(codec)
		codecJSON = `,"compression-codec":` + string(b)
	}
	footer := `{"blobs":[{"type":"t","fields":[1],"snapshot-id":1,"sequence-number":1,"offset":4,"length":` +
		strconv.Itoa(len(stored)) + codecJSON + `}]}`
	return assemble(stored, []byte(footer), 0)
}

func openBytes(data []byte, opts ...ReadOption) (*Reader, error) {
	return Open(bytes.NewReader(data), int64(len(data)), opts...)
}

func mustOpen(t testing.TB, data []byte, opts ...ReadOption) *Reader {
	t.Helper()
	r, err := openBytes(data, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantErr fails unless err is an error whose message contains want.
func wantErr(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

// lz4Frame compresses data into one LZ4 frame that declares its content
// size, as Puffin requires. Its blocks are of at most 64 KiB, as the lz4
// tool writes by default, rather than pierrec/lz4's 4 MiB, whose decoding
// buffer would make tests slow under the race detector.
func lz4Frame(t testing.TB, data []byte, opts ...lz4.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	defaults := []lz4.Option{lz4.SizeOption(uint64(len(data))), lz4.BlockSizeOption(lz4.Block64Kb)}
	if err := w.Apply(append(defaults, opts...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countingReaderAt records the ReadAt calls made on it.
type countingReaderAt struct {
	r     *bytes.Reader
	mu    sync.Mutex
	reads [][2]int64 // offset, length
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	c.reads = append(c.reads, [2]int64{off, int64(len(p))})
	c.mu.Unlock()
	return c.r.ReadAt(p, off)
}
