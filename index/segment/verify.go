package segment

import (
	"fmt"
	"io"

	"github.com/icebloom/icebloom/index/sbbf"
	"github.com/icebloom/icebloom/puffin"
)

// CheckFooter checks that a segment's Puffin footer and its directory
// agree: one group blob of the directory's size, field and place for each
// group. The directory is what lookups trust, so a footer that disagrees
// means one of them was altered.
func CheckFooter(pr *puffin.Reader, dir *Directory) error {
	blobs := map[int64]puffin.BlobMetadata{}
	for i := range pr.NumBlobs() {
		b, err := pr.Blob(i)
		if err != nil {
			return err
		}
		if b.Type == GroupBlobType {
			blobs[b.Offset] = b
		}
	}
	if len(blobs) != len(dir.Groups) {
		return fmt.Errorf("the footer lists %d group blobs, the directory %d groups", len(blobs), len(dir.Groups))
	}
	for gi := range dir.Groups {
		g := &dir.Groups[gi]
		b, ok := blobs[g.Offset]
		switch {
		case !ok:
			return fmt.Errorf("group %d at offset %d has no blob in the footer", gi, g.Offset)
		case b.Length != g.Bytes() || len(b.Fields) != 1 || int(b.Fields[0]) != g.FieldID:
			return fmt.Errorf("group %d at offset %d: the footer's blob has %d bytes for fields %v, the directory %d bytes for field %d",
				gi, g.Offset, b.Length, b.Fields, g.Bytes(), g.FieldID)
		}
	}
	return nil
}

// VerifyGroup reads every run of a group of the segment r (at path, for
// errors), checking every chunk against its checksum, and that no member
// holding values has an all-zero filter (which no correct writer makes: a
// value sets 8 bits). Reads are sequential, through a buffer of bufSize.
func VerifyGroup(r io.ReaderAt, path string, g *Group, bufSize int) error {
	src := Source{Path: path, R: r, Group: g}
	rr := newRunReader(&src, bufSize)
	set := make([]bool, len(g.Members))
	for b := range g.Blocks {
		run, err := rr.next(b)
		if err != nil {
			return err
		}
		for m := range g.Members {
			if set[m] {
				continue
			}
			off := blockInRun(m)
			for _, v := range run[off : off+sbbf.BlockBytes] {
				if v != 0 {
					set[m] = true
					break
				}
			}
		}
	}
	for m, mem := range g.Members {
		if !set[m] && mem.NDV > 0 {
			return fmt.Errorf("segment: group of field %d at offset %d of %s: member %d holds %d values and an all-zero filter", g.FieldID, g.Offset, path, m, mem.NDV)
		}
	}
	return nil
}
