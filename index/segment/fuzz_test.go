package segment

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecodeDirectory: no directory bytes make the decoder panic or
// allocate beyond what they could describe, and every directory it accepts
// keeps its promises to readers: members name files it has, and groups lie
// before the directory's offset.
func FuzzDecodeDirectory(f *testing.F) {
	_, dir, _ := workedExample()
	f.Add(dir, int64(72))
	f.Add(dir[:len(dir)-4], int64(72))
	f.Add([]byte("IBD2"), int64(1<<20))
	linked := Directory{Links: []Link{{Path: "p", Size: 100, FooterSize: 10, DirectoryOffset: 4, DirectoryLength: 80, Fields: []int{1}, Run: "r", Shard: 1, Shards: 2}}}
	f.Add(linked.Encode(), int64(72))
	f.Add(memberOfNoFile().Encode(), int64(72))
	wrapped := memberOfNoFile()
	wrapped.Files, wrapped.Groups[0].FieldID = listOf(File{"a", 1}), -1 // encoded as 2^64−1
	f.Add(wrapped.Encode(), int64(72))
	f.Fuzz(func(t *testing.T, data []byte, groupsEnd int64) {
		check(t, data, groupsEnd)
		// The same bytes with a valid checksum, to reach past it.
		check(t, binary.LittleEndian.AppendUint32(append([]byte(nil), data...), crc32.Checksum(data, castagnoli)), groupsEnd)
	})
}

func check(t *testing.T, data []byte, groupsEnd int64) {
	d, err := DecodeDirectory(data, groupsEnd)
	// Checking without keeping files and members (CheckStoredDirectory)
	// accepts exactly what decoding does, with the same links.
	checked, cerr := decodeDirectory(data, groupsEnd, false, nil)
	if (err == nil) != (cerr == nil) || err != nil && err.Error() != cerr.Error() {
		t.Fatalf("decoding: %v; checking: %v", err, cerr)
	}
	// Matching (MatchStoredDirectory) accepts it too, and hands over what
	// decoding keeps: every member of the fields asked for, of each file
	// found (here every other one, numbered 100 on).
	type match struct{ group, member, file int }
	var matched []match
	var fields []int
	if d != nil && len(d.Groups) > 0 {
		fields = []int{d.Groups[0].FieldID}
	}
	found := 0
	m := &matcher{
		find: func(path []byte, size int64) (int, bool) {
			found++
			return 100 + found - 1, found%2 == 1
		},
		fields: fields,
		fn: func(dir *Directory, g, m, f int) {
			if len(dir.Groups) <= g || dir.Groups[g].Members != nil {
				t.Fatalf("member %d of group %d handed over with %d groups decoded", m, g, len(dir.Groups))
			}
			matched = append(matched, match{g, m, f})
		},
	}
	mdir, merr := decodeDirectory(data, groupsEnd, false, m)
	if (err == nil) != (merr == nil) || err != nil && err.Error() != merr.Error() {
		t.Fatalf("decoding: %v; matching: %v", err, merr)
	}
	if err != nil {
		return
	}
	var want []match
	for gi, g := range d.Groups {
		for i, mem := range g.Members {
			if slices.Contains(fields, g.FieldID) && mem.File%2 == 0 {
				want = append(want, match{gi, i, 100 + mem.File})
			}
		}
	}
	if found != d.Files.Len() || !slices.Equal(matched, want) || mdir.Files.Len() != 0 || len(mdir.Groups) != len(d.Groups) ||
		!slices.EqualFunc(mdir.Groups, d.Groups, func(a, b Group) bool { return a.Layout() == b.Layout() }) {
		t.Fatalf("matching found %d files of %d and handed over %v, want %v", found, d.Files.Len(), matched, want)
	}
	if !reflect.DeepEqual(checked.Links, d.Links) || checked.Files.Len() != 0 || len(checked.Groups) != len(d.Groups) {
		t.Fatalf("checking kept %d files, %d groups and links %v; decoding %d groups and links %v", checked.Files.Len(), len(checked.Groups), checked.Links, len(d.Groups), d.Links)
	}
	for _, g := range d.Groups {
		if g.FieldID < 0 || g.FieldID > math.MaxInt32 {
			t.Fatalf("accepted a group of field id %d", g.FieldID)
		}
		if g.Offset < 4 || g.Offset+g.Bytes() > groupsEnd || g.Blocks < 1 || len(g.Members) < 1 {
			t.Fatalf("accepted a group of %d runs of %d members at %d, directory at %d", g.Blocks, len(g.Members), g.Offset, groupsEnd)
		}
		for _, m := range g.Members {
			if m.File < 0 || m.File >= d.Files.Len() {
				t.Fatalf("accepted a member of file %d of %d", m.File, d.Files.Len())
			}
		}
	}
	for _, l := range d.Links {
		if l.Path == "" || l.DirectoryOffset < 4 || l.DirectoryLength < 1 || l.DirectoryOffset+l.DirectoryLength > l.Size-l.FooterSize ||
			l.Shards == 0 && l.Shard != 0 || l.Shards > 0 && l.Shard >= l.Shards {
			t.Fatalf("accepted a link %+v", l)
		}
	}
}
