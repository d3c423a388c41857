package segment

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// benchFilters are n one-block filters of one column, as tiny data files
// make.
func benchFilters(n int) []FilterInput {
	rng := rand.New(rand.NewPCG(1, 1))
	out := make([]FilterInput, n)
	for i := range out {
		f := sbbf.New(1)
		for range 20 {
			f.Insert(rng.Uint64())
		}
		out[i] = FilterInput{File: File{Path: fmt.Sprintf("s3://bucket/warehouse/db/t/data/%08d-%016x.parquet", i, rng.Uint64()), Size: 1000},
			FieldID: 1, ValueType: iceberg.PrimitiveTypes.Int64, FPP: 0.01, NDV: 20, Bits: f.Bytes()}
	}
	return out
}

func write(b *testing.B, w io.Writer, fill func(*Writer) error) Result {
	pw, err := puffin.NewWriter(w)
	if err != nil {
		b.Fatal(err)
	}
	sw := NewWriter(pw, WriterOptions{})
	if err := fill(sw); err != nil {
		b.Fatal(err)
	}
	res, err := sw.Finish()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pw.Finish(); err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkWriteVsMerge writes 100,000 filters into a segment, and merges
// that segment's groups into a new one: the merge (what compaction does)
// against the writing it replaces. Compare the two ns/op.
func BenchmarkWriteVsMerge(b *testing.B) {
	filters := benchFilters(100_000)
	add := func(w *Writer) error {
		for _, f := range filters {
			if err := w.Add(f); err != nil {
				return err
			}
		}
		return nil
	}
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			write(b, io.Discard, add)
		}
	})
	var src bytes.Buffer
	res := write(b, &src, add)
	var sources []Source
	for gi := range res.Directory.Groups {
		g := &res.Directory.Groups[gi]
		s := Source{Path: "src", R: bytes.NewReader(src.Bytes()), Group: g, Files: &res.Directory.Files}
		for m := range g.Members {
			s.Keep = append(s.Keep, m)
		}
		sources = append(sources, s)
	}
	b.Run("merge", func(b *testing.B) {
		for b.Loop() {
			write(b, io.Discard, func(w *Writer) error { return w.Merge(sources) })
		}
	})
	b.Run("decode-directory", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadDirectory(bytes.NewReader(src.Bytes()), res.DirectoryOffset, res.DirectoryLength); err != nil {
				b.Fatal(err)
			}
		}
	})
}
