// Package segment is the index format version 2 (docs/format.md): a
// segment is one Puffin file holding the filters of many data files for a
// few columns, laid out so that one value is checked against every member
// of a group with one contiguous read, every byte a lookup trusts is
// checksummed, and maintenance merges segments by copying runs.
//
// A group holds the filters of one column that have the same number of
// blocks N. Its bytes are N runs; run b holds block b of every member, in
// member order, cut into chunks of at most ChunkMembers blocks, each chunk
// followed by its CRC-32C. The directory, one compressed blob per segment,
// lists the covered data files and every group with its members.
package segment

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/apache/iceberg-go"

	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// Blob types of a version 2 segment.
const (
	// GroupBlobType is a group's blob: its N runs.
	GroupBlobType puffin.BlobType = "split-block-bloom-filter-group-v2"
	// DirectoryBlobType is the segment's directory, zstd-compressed.
	DirectoryBlobType puffin.BlobType = "split-block-bloom-filter-directory-v2"
)

// Properties of the directory's item in table metadata, which let a reader
// fetch the directory with one read and no footer.
const (
	PropDirectoryOffset = "directory-offset"
	PropDirectoryLength = "directory-length"
)

// PropLinks, on the directory's item in table metadata, counts the segment
// files the directory links (Directory.Links); absent when it links none,
// so gc reads the directories of linking files only.
const PropLinks = "links"

// ChunkMembers is how many members' blocks a chunk of a run holds at most:
// 4 KiB of blocks, then 4 bytes of checksum (0.1% of the index). A lookup
// that needs few members of a large group reads and verifies only their
// chunks.
const ChunkMembers = 128

// ChecksumBytes is the size of the CRC-32C that follows a chunk's data.
const ChecksumBytes = 4

// Group is one group of a segment as its directory lists it.
type Group struct {
	FieldID   int
	ValueType iceberg.PrimitiveType
	FPP       float64 // the false-positive rate the filters were sized for
	Blocks    int     // N: blocks of every member's filter, runs of the group
	Members   []Member
	// Tag is a random number the group's checksums start from, so that a
	// chunk read from the wrong group, run or place never verifies.
	Tag uint64
	// Offset is where the group's first run starts in the Puffin file.
	Offset int64
	// members is the number of members of a group decoded without them
	// (Members nil: CheckStoredDirectory, MatchStoredDirectory).
	members int
}

// NumMembers is the number of members, also of a group decoded without
// them.
func (g *Group) NumMembers() int {
	if g.Members == nil {
		return g.members
	}
	return len(g.Members)
}

// Member is one data file's filter in a group.
type Member struct {
	File int   // index into Directory.Files
	NDV  int64 // distinct values inserted
}

// runBytes is the size of one run of a group of m members.
func runBytes(m int) int64 {
	chunks := (m + ChunkMembers - 1) / ChunkMembers
	return int64(m)*sbbf.BlockBytes + int64(chunks)*ChecksumBytes
}

// blockInRun is where member m's block lies in a run.
func blockInRun(m int) int {
	return m/ChunkMembers*(ChunkMembers*sbbf.BlockBytes+ChecksumBytes) + m%ChunkMembers*sbbf.BlockBytes
}

// Layout is where a group's runs lie in its Puffin file: all that
// locating a member's block needs, without the members. A server keeps it
// for every group of a table's index, and the members (16 bytes each, 32 MB
// for two columns of 1,000,000 files) only while it matches files to them.
type Layout struct {
	Blocks  int // N: blocks of every member's filter, runs of the group
	Members int // how many members the group has
	Tag     uint64
	Offset  int64
}

// Layout returns the group's layout.
func (g *Group) Layout() Layout {
	return Layout{Blocks: g.Blocks, Members: g.NumMembers(), Tag: g.Tag, Offset: g.Offset}
}

// Bytes returns the size of the group's blob: N runs.
func (g *Group) Bytes() int64 { return g.Layout().Bytes() }

// RunOffset returns where run b starts in the Puffin file.
func (g *Group) RunOffset(b int) int64 { return g.Layout().RunOffset(b) }

// ChunkOf returns the chunk of run b holding member m's block.
func (g *Group) ChunkOf(b, m int) Chunk { return g.Layout().ChunkOf(b, m) }

// Bytes returns the size of the group's blob: N runs.
func (l Layout) Bytes() int64 { return int64(l.Blocks) * runBytes(l.Members) }

// RunOffset returns where run b starts in the Puffin file.
func (l Layout) RunOffset(b int) int64 { return l.Offset + int64(b)*runBytes(l.Members) }

// Chunk locates the chunk of run b that holds member m's block: the chunk's
// data starts at Offset (its checksum follows its Length bytes), and the
// block lies at Offset + 32·Index.
type Chunk struct {
	Offset int64
	Length int64 // data bytes, a multiple of 32
	Index  int   // the member's place in the chunk
	// The chunk's position: its group's tag, its run and its place in the
	// run. The stored checksum is CRC-32C over the chunk's data continued
	// from the checksum of the position (chunkSeed), which is computed when
	// the chunk is verified, not when it is located: a lookup locates a
	// chunk for every file it checks but verifies each chunk it reads once.
	tag        uint64
	run, chunk int
}

// ChunkOf returns the chunk of run b holding member m's block.
func (l Layout) ChunkOf(b, m int) Chunk {
	k := m / ChunkMembers
	first := k * ChunkMembers
	n := min(ChunkMembers, l.Members-first)
	off := l.RunOffset(b) + int64(k)*(ChunkMembers*sbbf.BlockBytes+ChecksumBytes)
	return Chunk{Offset: off, Length: int64(n) * sbbf.BlockBytes, Index: m - first, tag: l.Tag, run: b, chunk: k}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// chunkSeed is the CRC-32C of a chunk's position: the group's tag, the run
// and the chunk, 16 bytes little-endian.
func chunkSeed(tag uint64, run, chunk int) uint32 {
	var pos [16]byte
	binary.LittleEndian.PutUint64(pos[:], tag)
	binary.LittleEndian.PutUint32(pos[8:], uint32(run))
	binary.LittleEndian.PutUint32(pos[12:], uint32(chunk))
	return crc32.Update(0, castagnoli, pos[:])
}

// Verify reports whether data, the chunk's Length bytes followed by their
// checksum as stored, is intact.
func (c Chunk) Verify(data []byte) bool {
	if int64(len(data)) != c.Length+ChecksumBytes {
		return false
	}
	return c.sum(data[:c.Length]) == binary.LittleEndian.Uint32(data[c.Length:])
}

// sum returns the checksum of the chunk's data.
func (c Chunk) sum(data []byte) uint32 {
	return crc32.Update(chunkSeed(c.tag, c.run, c.chunk), castagnoli, data)
}

// SizeClass rounds a block count up to the ladder groups are formed on: up
// to 32 blocks exactly, above that the next number of the form m·2^k with
// 16 < m ≤ 32. Filters of similar distinct counts then share a group, for a
// cost of at most 1/16 more bytes per filter (about 3% on average), which
// only lowers their false-positive rate.
func SizeClass(blocks int) int {
	shift := 0
	for (blocks-1)>>shift >= 32 {
		shift++
	}
	return max((blocks+(1<<shift)-1)>>shift<<shift, 1)
}
