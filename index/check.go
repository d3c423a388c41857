package index

import (
	"fmt"
	"slices"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/index/segment"
	"github.com/icebloom/icebloom/puffin"
)

// SegmentCheck is what CheckSegment found in one statistics file holding
// index filters (or a segment file one links).
type SegmentCheck struct {
	Format int // 1 or 2; 0 when unreadable
	// Dir is the directory as the footer places it (format 2), nil when
	// it could not be read.
	Dir           *segment.Directory
	Groups        int
	Filters       int
	BytesVerified int64 // filter bytes read and checked against their checksums
	// BrokenGroups are the offsets of the groups whose runs fail their
	// checksums (or hold an all-zero filter of a member with values): the
	// filters no reader may trust, whose data files must be indexed again.
	BrokenGroups []int64
	// Problems names every problem found, each naming the file.
	Problems []string
}

// Damaged reports whether the check found a problem: the file must be
// rewritten from what reads clean, and its broken groups' data files
// indexed again.
func (c *SegmentCheck) Damaged() bool { return len(c.Problems) > 0 }

// CheckSegment reads a statistics file holding index filters whole, as a
// stream, and checks every byte a reader relies on (docs/format.md §2.2,
// §2.3, §7): the Puffin footer at the sizes sf records, the directory at
// the place the footer gives and the one table metadata gives, that footer
// and directory agree, and every chunk of every group against its checksum
// (format 2); every filter's bytes (format 1, which has no checksums). It
// changes nothing. A repair rewrites a damaged file from its directory as
// table metadata places it (what Load reads), leaving out BrokenGroups.
func CheckSegment(fs icebergio.IO, sf table.StatisticsFile) SegmentCheck {
	c := SegmentCheck{}
	problem := func(format string, args ...any) {
		c.Problems = append(c.Problems, fmt.Sprintf("index file %s: ", sf.StatisticsPath)+fmt.Sprintf(format, args...))
	}
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		problem("%v", err)
		return c
	}
	defer f.Close()
	pr, err := puffin.Open(f, sf.FileSizeInBytes, puffin.WithFooterSize(sf.FileFooterSizeInBytes))
	if err != nil {
		problem("%v", err)
		// The footer is gone (a file cut short, sizes that lie): the groups
		// are checked from the directory table metadata places, so that a
		// repair knows which of them read clean.
		if dir, ok, derr := segment.ReadPlacedDirectory(f, sf); ok && derr == nil {
			c.Format = 2
			c.checkGroups(f, sf.StatisticsPath, dir, problem)
		}
		return c
	}
	off, length, isV2 := segment.FindDirectory(pr)
	if !isV2 {
		c.Format = 1
		seg := Segment{File: sf}
		for i := range pr.NumBlobs() {
			if b, _ := pr.Blob(i); IsEntry(b) {
				e, err := DecodeEntry(b)
				if err != nil {
					problem("%v", err)
					continue
				}
				seg.Entries = append(seg.Entries, e)
			}
		}
		for flt := range seg.Filters() {
			c.Filters++
			bits, err := ReadFilter(f, flt)
			if err != nil {
				problem("%v", err)
			} else if flt.NDV > 0 && !slices.ContainsFunc(bits, func(b byte) bool { return b != 0 }) {
				problem("the filter of %s, field %d, holds %d values and is all zero", flt.DataFile, flt.FieldID, flt.NDV)
			}
		}
		return c
	}
	c.Format = 2
	if mOff, mLen, ok := segment.DirectoryPlace(sf); ok && (mOff != off || mLen != length) {
		problem("table metadata places the directory at %d (%d bytes), the footer at %d (%d bytes)", mOff, mLen, off, length)
	}
	dir, err := segment.ReadDirectory(f, off, length)
	if err != nil {
		problem("%v", err)
		return c
	}
	if err := segment.CheckFooter(pr, dir); err != nil {
		problem("%v", err)
	}
	c.checkGroups(f, sf.StatisticsPath, dir, problem)
	return c
}

// checkGroups verifies every group of dir against its checksums.
func (c *SegmentCheck) checkGroups(f icebergio.File, path string, dir *segment.Directory, problem func(string, ...any)) {
	c.Dir, c.Groups = dir, len(dir.Groups)
	for gi := range dir.Groups {
		g := &dir.Groups[gi]
		c.Filters += len(g.Members)
		if err := segment.VerifyGroup(f, path, g, 1<<20); err != nil {
			problem("%v", err)
			c.BrokenGroups = append(c.BrokenGroups, g.Offset)
			continue
		}
		c.BytesVerified += g.Bytes()
	}
}
