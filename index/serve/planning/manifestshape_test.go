package planning

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/avro/ocf"

	"github.com/icebloom/icebloom/index/serve/planning/internal/manifestdec"
)

// Manifests of other shapes than iceberg-go's writer makes: other codecs,
// many blocks, other Avro types for the same bytes, and what the decoder
// leaves to iceberg-go.

// reencode writes manifest data again with twmb/avro's writer (iceberg-go's
// Avro library): codec and blocks of count objects; same schema and
// metadata.
func reencode(t *testing.T, data []byte, codec ocf.Codec, count int) []byte {
	t.Helper()
	rd, err := ocf.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string][]byte{}
	for k, v := range rd.Metadata() {
		if !strings.HasPrefix(k, "avro.") {
			meta[k] = v
		}
	}
	var out bytes.Buffer
	w, err := ocf.NewWriter(&out, rd.Schema(), ocf.WithCodec(codec), ocf.WithBlockCount(count), ocf.WithMetadata(meta))
	if err != nil {
		t.Fatal(err)
	}
	for {
		var v any
		if err := rd.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if err := w.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// rewriteHeader returns manifest data with its header's metadata changed by
// edit; the blocks are kept as they are, so edit may change the schema
// only in ways that keep its binary encoding.
func rewriteHeader(t *testing.T, data []byte, edit func(meta map[string][]byte)) []byte {
	t.Helper()
	p := 4
	varint := func() int64 {
		v, n := binary.Varint(data[p:]) // Avro's zig-zag longs
		if n <= 0 {
			t.Fatal("bad varint in header")
		}
		p += n
		return v
	}
	meta := map[string][]byte{}
	for {
		count := varint()
		if count == 0 {
			break
		}
		if count < 0 {
			count = -count
			varint()
		}
		for range count {
			k := int(varint())
			key := string(data[p : p+k])
			p += k
			n := int(varint())
			meta[key] = data[p : p+n]
			p += n
		}
	}
	edit(meta)
	out := append([]byte(nil), data[:4]...)
	out = binary.AppendVarint(out, int64(len(meta)))
	for k, v := range meta {
		out = binary.AppendVarint(out, int64(len(k)))
		out = append(out, k...)
		out = binary.AppendVarint(out, int64(len(v)))
		out = append(out, v...)
	}
	out = binary.AppendVarint(out, 0)
	return append(out, data[p:]...) // sync marker and blocks
}

// TestManifestSetCodecsAndBlocks makes sets both ways of manifests of every
// codec Avro writers use, of one block and of many.
func TestManifestSetCodecsAndBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	spec := transformSpec()
	fsys := memIO{}
	m := writeManifest(t, fsys, "mem://m.avro", 2, spec, allTypes, 7, typedEntries(t, rng, 300, 2, spec, 7), 0)
	orig := fsys["mem://m.avro"]
	codecs := map[string]ocf.Codec{"null": nil, "deflate": ocf.DeflateCodec(6), "snappy": ocf.SnappyCodec(),
		"zstandard": ocf.MustZstdCodec(nil, nil)}
	for name, codec := range codecs {
		for _, count := range []int{1, 7, 1000} {
			t.Run(fmt.Sprintf("%s/%d", name, count), func(t *testing.T) {
				data := reencode(t, orig, codec, count)
				if got := string(metaOf(t, data)["avro.codec"]); got != name && !(name == "null" && got == "") {
					t.Fatalf("codec %q, want %s", got, name)
				}
				fsys["mem://m.avro"] = data
				setsBothWays(t, fsys, m, allTypes, allTypeIDs)
			})
		}
	}
}

// metaOf is manifest data's header metadata.
func metaOf(t *testing.T, data []byte) map[string][]byte {
	var meta map[string][]byte
	rewriteHeader(t, data, func(m map[string][]byte) { meta = m })
	return meta
}

// TestManifestSetSchemaShapes makes sets both ways of manifests whose
// schema says other things of the same bytes: partition values of other
// logical types, no partition spec, no field ids.
func TestManifestSetSchemaShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	spec := identitySpec()
	fsys := memIO{}
	m := writeManifest(t, fsys, "mem://m.avro", 2, spec, allTypes, 7, typedEntries(t, rng, 300, 2, spec, 7), 0)
	orig := fsys["mem://m.avro"]
	for name, edit := range map[string]func(schema string, meta map[string][]byte) string{
		// timestamp-micros longs read as milliseconds and nanoseconds
		"timestamp-millis": func(s string, _ map[string][]byte) string {
			return strings.Replace(s, `"timestamp-micros"`, `"timestamp-millis"`, 1)
		},
		"timestamp-nanos": func(s string, _ map[string][]byte) string {
			return strings.Replace(s, `"timestamp-micros"`, `"timestamp-nanos"`, 1)
		},
		// a date without its logical type: an int; as a day transform's, a date
		"plain date": func(s string, _ map[string][]byte) string {
			return strings.Replace(s, `{"logicalType":"date","type":"int"}`, `"int"`, 1)
		},
		"plain date of a day transform": func(s string, meta map[string][]byte) string {
			meta["partition-spec"] = bytes.Replace(meta["partition-spec"], []byte(`"name":"dt_p","transform":"identity"`), []byte(`"name":"dt_p","transform":"day"`), 1)
			return strings.Replace(s, `{"logicalType":"date","type":"int"}`, `"int"`, 1)
		},
		// a uuid without its logical type: a fixed, bytes
		"uuid as fixed": func(s string, _ map[string][]byte) string {
			return strings.Replace(s, `"logicalType":"uuid",`, ``, 1)
		},
		"no partition spec": func(s string, meta map[string][]byte) string {
			delete(meta, "partition-spec")
			return s
		},
		"no field ids": func(s string, _ map[string][]byte) string {
			for _, id := range []string{"0", "2", "100", "101", "103", "104", "109", "125", "128", "131", "132", "140"} {
				s = strings.Replace(s, `"field-id":`+id+`,`, ``, 1)
			}
			return s
		},
		"a partition field without its id": func(s string, _ map[string][]byte) string {
			return strings.Replace(s, `"field-id":1003,`, ``, 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var before string
			fsys["mem://m.avro"] = rewriteHeader(t, orig, func(meta map[string][]byte) {
				before = string(meta["avro.schema"])
				meta["avro.schema"] = []byte(edit(before, meta))
				if string(meta["avro.schema"]) == before && meta["partition-spec"] != nil {
					t.Fatalf("the edit changed nothing in %s", before)
				}
			})
			setsBothWays(t, fsys, m, allTypes, allTypeIDs)
		})
	}
}

// TestManifestSetFallsBack checks that what the decoder does not read is
// decoded by iceberg-go, giving the same set, and counted.
func TestManifestSetFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	spec := identitySpec()
	fsys := memIO{}
	m := writeManifest(t, fsys, "mem://m.avro", 2, spec, allTypes, 7, typedEntries(t, rng, 200, 2, spec, 7), 0)
	orig := fsys["mem://m.avro"]
	for name, edit := range map[string]func(string) string{
		// a field id other than the specification's: not the field it seems
		"file_path's id": func(s string) string { return strings.Replace(s, `"field-id":100,`, `"field-id":1100,`, 1) },
		// a logical type on a type it is not for
		"date of a long": func(s string) string {
			return strings.Replace(s, `"name":"l_p","type":["null","long"]`, `"name":"l_p","type":["null",{"type":"long","logicalType":"date"}]`, 1)
		},
		// a logical type iceberg-go does not convert: twmb/avro's time.Time
		"local timestamp": func(s string) string {
			return strings.Replace(s, `"logicalType":"timestamp-micros"`, `"logicalType":"local-timestamp-micros"`, 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			fsys["mem://m.avro"] = rewriteHeader(t, orig, func(meta map[string][]byte) {
				before := string(meta["avro.schema"])
				meta["avro.schema"] = []byte(edit(before))
				if string(meta["avro.schema"]) == before {
					t.Fatalf("the edit changed nothing in %s", before)
				}
			})
			_, err := decodeManifestSet(context.Background(), fsys, m, allTypes, allTypeIDs)
			if !errors.Is(err, manifestdec.ErrUnsupported) {
				t.Fatalf("icebloom's decoder: %v, want ErrUnsupported", err)
			}
			before := manifestFallbacks.Load()
			got, err := manifestSet(context.Background(), fsys, m, allTypes, allTypeIDs)
			if err != nil {
				t.Fatal(err)
			}
			if n := manifestFallbacks.Load() - before; n != 1 {
				t.Fatalf("%d fallbacks, want 1", n)
			}
			want, err := manifestSetIceberg(context.Background(), fsys, m, allTypes, allTypeIDs)
			if err != nil {
				t.Fatal(err)
			}
			requireSameSet(t, got, want)
		})
	}
}
