package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"

	"github.com/icebloom/icebloom/index/hashing"
)

// Directory is what a segment holds: the data files it covers and its
// groups. It is read whole, once per segment, and is immutable once read.
type Directory struct {
	Files  []File
	Groups []Group
}

// File is a covered data file, as its manifest entry lists it.
type File struct {
	Path string
	Size int64
}

// directoryMagic starts an encoded directory.
var directoryMagic = [4]byte{'I', 'B', 'D', '2'}

// ErrChecksum reports index bytes that do not match their checksum: the
// segment is corrupt, and the data files it covers stay candidates.
var ErrChecksum = errors.New("checksum mismatch")

// MaxDirectoryBytes bounds a directory, compressed or not, as a reader
// accepts it: about 10 million covered data files.
const MaxDirectoryBytes = 1 << 30

// Encode returns the directory's bytes (docs/format.md §2.3): the magic,
// ChunkMembers, the files front-coded, the groups with their members, and
// the CRC-32C of all that.
func (d *Directory) Encode() []byte {
	b := append([]byte(nil), directoryMagic[:]...)
	b = binary.AppendUvarint(b, ChunkMembers)
	b = binary.AppendUvarint(b, uint64(len(d.Files)))
	prev := ""
	for _, f := range d.Files {
		shared := commonPrefix(prev, f.Path)
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(f.Path)-shared))
		b = append(b, f.Path[shared:]...)
		b = binary.AppendUvarint(b, uint64(f.Size))
		prev = f.Path
	}
	b = binary.AppendUvarint(b, uint64(len(d.Groups)))
	for _, g := range d.Groups {
		b = binary.AppendUvarint(b, uint64(g.FieldID))
		vt := hashing.FormatValueType(g.ValueType)
		b = binary.AppendUvarint(b, uint64(len(vt)))
		b = append(b, vt...)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(g.FPP))
		b = binary.AppendUvarint(b, uint64(g.Blocks))
		b = binary.AppendUvarint(b, uint64(len(g.Members)))
		b = binary.LittleEndian.AppendUint64(b, g.Tag)
		b = binary.AppendUvarint(b, uint64(g.Offset))
		for _, m := range g.Members {
			b = binary.AppendUvarint(b, uint64(m.File))
			b = binary.AppendUvarint(b, uint64(m.NDV))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// DecodeDirectory decodes and checks a directory. groupsEnd is where the
// groups must end, the directory's own offset in the file: no group a
// lookup reads may reach past it.
func DecodeDirectory(data []byte, groupsEnd int64) (*Directory, error) {
	if len(data) < len(directoryMagic)+4 || [4]byte(data) != directoryMagic {
		return nil, errors.New("directory: bad magic")
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, fmt.Errorf("directory: %w", ErrChecksum)
	}
	d := decoder{b: body[len(directoryMagic):]}
	if c := d.uvarint(); d.err == nil && c != ChunkMembers {
		return nil, fmt.Errorf("directory: chunks of %d members, this reader knows %d", c, ChunkMembers)
	}
	nFiles := d.count(2) // a file takes at least 3 bytes
	dir := &Directory{Files: make([]File, 0, nFiles)}
	prev := ""
	for range nFiles {
		shared, n := d.uvarint(), d.uvarint()
		if shared > uint64(len(prev)) {
			d.fail("file %d shares %d bytes of a %d-byte path", len(dir.Files), shared, len(prev))
		}
		suffix := d.bytes(n)
		if d.err != nil {
			break
		}
		var sb strings.Builder
		sb.Grow(int(shared) + len(suffix))
		sb.WriteString(prev[:shared])
		sb.Write(suffix)
		f := File{Path: sb.String(), Size: d.int64()}
		if f.Path == "" {
			d.fail("file %d has no path", len(dir.Files))
		}
		dir.Files = append(dir.Files, f)
		prev = f.Path
	}
	nGroups := d.count(20)
	for gi := 0; gi < nGroups && d.err == nil; gi++ {
		g := Group{FieldID: int(d.uvarint())}
		vt := d.bytes(d.uvarint())
		fpp := math.Float64frombits(d.uint64())
		g.FPP, g.Blocks = fpp, d.intN(math.MaxInt32)
		nMembers := d.count(2)
		g.Tag = d.uint64()
		g.Offset = d.int64()
		if d.err != nil {
			break
		}
		var err error
		if g.ValueType, err = hashing.ParseValueType(string(vt)); err != nil {
			d.fail("group %d: %v", gi, err)
		}
		switch {
		case g.FieldID > math.MaxInt32:
			d.fail("group %d: field id %d", gi, g.FieldID)
		case !(fpp > 0 && fpp < 1):
			d.fail("group %d: fpp %v", gi, fpp)
		case g.Blocks < 1 || nMembers < 1:
			d.fail("group %d: %d blocks, %d members", gi, g.Blocks, nMembers)
		}
		g.Members = make([]Member, nMembers)
		for i := range g.Members {
			g.Members[i] = Member{File: d.intN(len(dir.Files) - 1), NDV: d.int64()}
		}
		if d.err == nil && (g.Offset < 4 || g.Offset > groupsEnd || runBytes(nMembers) > (groupsEnd-g.Offset)/int64(g.Blocks)) {
			d.fail("group %d: %d runs of %d members at offset %d reach past the directory at %d", gi, g.Blocks, nMembers, g.Offset, groupsEnd)
		}
		dir.Groups = append(dir.Groups, g)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the last group", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("directory: %w", d.err)
	}
	return dir, nil
}

// decoder reads the directory's fields; the first error sticks and later
// reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// intN reads a number of at most limit.
func (d *decoder) intN(limit int) int {
	v := d.uvarint()
	if v > uint64(max(limit, 0)) {
		d.fail("number %d is above %d", v, limit)
		return 0
	}
	return int(v)
}

func (d *decoder) int64() int64 { return int64(d.intN(math.MaxInt64)) }

// count reads a count of items of at least minBytes each, refusing counts
// the remaining bytes cannot hold before anything is allocated for them.
func (d *decoder) count(minBytes int) int { return d.intN(len(d.b) / minBytes) }

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("truncated: %d bytes wanted, %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	v := d.bytes(8)
	if v == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}
