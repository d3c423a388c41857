package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"unsafe"

	"github.com/icebloom/icebloom/index/filelist"
	"github.com/icebloom/icebloom/index/hashing"
)

// Directory is what a segment holds: the data files it covers and its
// groups. It is read whole, once per segment, and is immutable once read.
type Directory struct {
	// Files are the covered data files, in the order members number them,
	// their locations coded compactly: a directory of 1,000,000 files is
	// kept in memory for every lookup.
	Files  filelist.List
	Groups []Group
	// Links are other segment files this one incorporates by reference
	// (docs/format.md §2.5): the shards of a sharded build, committed one
	// by one without copying each other's filters.
	Links []Link
}

// Link is a segment file that a segment incorporates without copying it:
// the linked file's filters are part of the index as long as the linking
// segment is, exactly as if they were its own. A linked file is a complete
// segment (groups and a directory, which has no links of its own), placed
// so a reader fetches its directory with one read.
type Link struct {
	Path string // the linked Puffin file's location
	// Size and FooterSize are the linked file's size and its Puffin
	// footer's, as a statistics entry would record them.
	Size, FooterSize int64
	// DirectoryOffset and DirectoryLength locate the linked file's stored
	// directory blob.
	DirectoryOffset, DirectoryLength int64
	// Fields are the field ids its filters index.
	Fields []int
	// Run names the sharded run that wrote the linked file, "" for none;
	// Shard is its shard of Shards (0 ≤ Shard < Shards), both 0 outside a
	// sharded run.
	Run           string
	Shard, Shards int
}

// File is a covered data file, as its manifest entry lists it.
type File struct {
	Path string
	Size int64
}

// File returns covered data file i.
func (d *Directory) File(i int) File {
	return File{Path: d.Files.Path(i), Size: d.Files.Size(i)}
}

// Bytes is the memory a decoded directory holds: its files, its groups
// and their members (16 bytes each), its links.
func (d *Directory) Bytes() int64 {
	n := d.Files.Bytes() + int64(cap(d.Groups))*int64(unsafe.Sizeof(Group{}))
	for _, g := range d.Groups {
		n += 16 * int64(cap(g.Members))
	}
	for _, l := range d.Links {
		n += 128 + int64(len(l.Path)+len(l.Run)+8*len(l.Fields))
	}
	return n
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
	b = binary.AppendUvarint(b, uint64(d.Files.Len()))
	var prev []byte
	for i, path := range d.Files.All() {
		shared := commonPrefix(prev, path)
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(path)-shared))
		b = append(b, path[shared:]...)
		b = binary.AppendUvarint(b, uint64(d.Files.Size(i)))
		prev = append(prev[:0], path...)
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
	if len(d.Links) > 0 { // absent when empty: a segment without links is encoded as before links existed
		b = binary.AppendUvarint(b, uint64(len(d.Links)))
		for _, l := range d.Links {
			b = binary.AppendUvarint(b, uint64(len(l.Path)))
			b = append(b, l.Path...)
			for _, v := range []int64{l.Size, l.FooterSize, l.DirectoryOffset, l.DirectoryLength} {
				b = binary.AppendUvarint(b, uint64(v))
			}
			b = binary.AppendUvarint(b, uint64(len(l.Fields)))
			for _, f := range l.Fields {
				b = binary.AppendUvarint(b, uint64(f))
			}
			b = binary.AppendUvarint(b, uint64(len(l.Run)))
			b = append(b, l.Run...)
			b = binary.AppendUvarint(b, uint64(l.Shard))
			b = binary.AppendUvarint(b, uint64(l.Shards))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func commonPrefix(a, b []byte) int {
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
	return decodeDirectory(data, groupsEnd, true, nil)
}

// matcher is what a directory's files and members are handed to as they
// are decoded (MatchStoredDirectory).
type matcher struct {
	find    func(path []byte, size int64) (int, bool)
	fields  []int
	fn      func(dir *Directory, group, member, file int)
	planned []int32    // by directory file: find's file, -1 for none
	hits    [][2]int32 // the group's members found: member, file
}

// decodeDirectory is DecodeDirectory; without keep, it checks the
// directory as fully but keeps no file and no member: its Files are empty
// and its groups' Members nil. With a matcher, it hands it each file and
// each member of the matcher's fields as it decodes them.
func decodeDirectory(data []byte, groupsEnd int64, keep bool, m *matcher) (*Directory, error) {
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
	dir := &Directory{}
	if keep {
		dir.Files.Grow(nFiles)
		// The list's coding takes about what the directory's front coding
		// does (Clip, below, leaves it exactly what it takes).
		dir.Files.GrowBytes(len(d.b))
	}
	if m != nil {
		m.planned = make([]int32, nFiles)
	}
	var prev []byte
	files, prevLen := 0, 0
	for ; files < nFiles; files++ {
		shared, n := d.uvarint(), d.uvarint()
		if shared > uint64(prevLen) {
			d.fail("file %d shares %d bytes of a %d-byte path", files, shared, prevLen)
		}
		suffix := d.bytes(n)
		if d.err != nil {
			break
		}
		prevLen = int(shared) + len(suffix)
		size := d.int64()
		if prevLen == 0 {
			d.fail("file %d has no path", files)
		}
		if keep || m != nil {
			prev = append(prev[:shared], suffix...)
		}
		if keep {
			dir.Files.AppendBytes(prev, size)
		}
		if m != nil && d.err == nil {
			m.planned[files] = -1
			if i, ok := m.find(prev, size); ok {
				m.planned[files] = int32(i)
			}
		}
	}
	dir.Files.Clip()
	nGroups := d.count(20)
	if m != nil { // a group handed over stays where it is
		dir.Groups = make([]Group, 0, nGroups)
	}
	for gi := 0; gi < nGroups && d.err == nil; gi++ {
		g := Group{FieldID: d.intN(math.MaxInt32)} // int(uvarint) would wrap past 2^63
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
		case !(fpp > 0 && fpp < 1):
			d.fail("group %d: fpp %v", gi, fpp)
		case g.Blocks < 1 || nMembers < 1:
			d.fail("group %d: %d blocks, %d members", gi, g.Blocks, nMembers)
		case files == 0:
			// intN(-1) below would take file 0 of none (docs/format.md §2.3).
			d.fail("group %d has members, but the directory lists no files", gi)
		}
		g.members = nMembers
		if keep {
			g.Members = make([]Member, nMembers)
		}
		matched := m != nil && slices.Contains(m.fields, g.FieldID)
		if matched {
			m.hits = m.hits[:0]
		}
		for i := range nMembers {
			mem := Member{File: d.intN(files - 1), NDV: d.int64()}
			if keep {
				g.Members[i] = mem
			}
			if matched && d.err == nil {
				if f := m.planned[mem.File]; f >= 0 {
					m.hits = append(m.hits, [2]int32{int32(i), f})
				}
			}
		}
		if d.err == nil && (g.Offset < 4 || g.Offset > groupsEnd || runBytes(nMembers) > (groupsEnd-g.Offset)/int64(g.Blocks)) {
			d.fail("group %d: %d runs of %d members at offset %d reach past the directory at %d", gi, g.Blocks, nMembers, g.Offset, groupsEnd)
		}
		dir.Groups = append(dir.Groups, g)
		if matched && d.err == nil { // handed over once the group checked out
			for _, h := range m.hits {
				m.fn(dir, gi, int(h[0]), int(h[1]))
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		dir.Links = d.links()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the last link", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("directory: %w", d.err)
	}
	return dir, nil
}

// links decodes the links section and checks each link's bounds.
func (d *decoder) links() []Link {
	n := d.count(9) // a link takes at least 9 bytes
	if d.err == nil && n == 0 {
		d.fail("an empty links section")
	}
	links := make([]Link, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		l := Link{Path: string(d.bytes(d.uvarint()))}
		l.Size, l.FooterSize, l.DirectoryOffset, l.DirectoryLength = d.int64(), d.int64(), d.int64(), d.int64()
		nFields := d.count(1)
		for range nFields {
			l.Fields = append(l.Fields, d.intN(math.MaxInt32))
		}
		l.Run = string(d.bytes(d.uvarint()))
		l.Shard, l.Shards = d.intN(math.MaxInt32), d.intN(math.MaxInt32)
		switch {
		case d.err != nil:
		case l.Path == "":
			d.fail("link %d has no path", i)
		case l.DirectoryOffset < 4 || l.DirectoryLength <= 0 || l.DirectoryLength > MaxDirectoryBytes ||
			l.FooterSize < 0 || l.DirectoryOffset > l.Size-l.FooterSize-l.DirectoryLength:
			d.fail("link %d: a directory of %d bytes at %d does not fit a file of %d bytes with a %d-byte footer",
				i, l.DirectoryLength, l.DirectoryOffset, l.Size, l.FooterSize)
		case l.Shards == 0 && l.Shard != 0, l.Shards > 0 && l.Shard >= l.Shards:
			d.fail("link %d: shard %d of %d", i, l.Shard, l.Shards)
		}
		links = append(links, l)
	}
	return links
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
