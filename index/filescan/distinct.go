package filescan

// distinctSet is an exact set of 64-bit value hashes, the way the build
// counts a file's distinct values: open addressing with linear probing,
// indexed by the top bits of the hash, which is uniformly random already,
// so no further hashing is needed. One insert is one probe into a table at
// most half full — cheaper than sorting, and with memory that follows the
// distinct count rather than the row count.
//
// The distinct hashes are also kept densely in insertion order, so that
// handing them to the filter and growing the table read only them, not a
// table that is mostly empty.
type distinctSet struct {
	slots  []uint64 // 0 marks an empty slot; the hash 0 is kept in zero
	values []uint64 // the non-zero hashes held, in insertion order
	zero   bool
	shift  uint // 64 - log2(len(slots))
}

const minDistinctSlots = 1 << 10

// reset empties the set for the next column, keeping its memory unless it
// is far larger than the last column needed: one file with many distinct
// values must not leave every later column clearing and scanning a large
// table.
func (s *distinctSet) reset() {
	if s.slots == nil || len(s.slots) > minDistinctSlots && 8*s.len() < len(s.slots) {
		s.slots, s.shift = make([]uint64, minDistinctSlots), 64-10
	} else {
		clear(s.slots)
	}
	s.values, s.zero = s.values[:0], false
}

// addAll adds every hash of hs. The table is grown first to hold all of
// them, so the loop over them is the probing alone, on locals.
func (s *distinctSet) addAll(hs []uint64) {
	for 2*(len(s.values)+len(hs)) > len(s.slots) {
		s.grow()
	}
	slots, shift, mask := s.slots, s.shift, len(s.slots)-1
	values := s.values
	for _, h := range hs {
		if h == 0 {
			s.zero = true
			continue
		}
		for i := int(h >> shift); ; i = (i + 1) & mask {
			if v := slots[i]; v == h {
				break
			} else if v == 0 {
				slots[i] = h
				values = append(values, h)
				break
			}
		}
	}
	s.values = values
}

// place puts a non-zero hash into its slot and reports whether it was new.
func (s *distinctSet) place(h uint64) bool {
	mask := len(s.slots) - 1
	for i := int(h >> s.shift); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			return true
		case h:
			return false
		}
	}
}

func (s *distinctSet) grow() {
	s.slots = make([]uint64, 2*len(s.slots))
	s.shift--
	for _, h := range s.values {
		s.place(h)
	}
}

// len returns the number of distinct hashes.
func (s *distinctSet) len() int {
	if s.zero {
		return len(s.values) + 1
	}
	return len(s.values)
}

// hashes returns the distinct hashes, in insertion order but for a hash 0,
// which comes last. The slice is the set's own, valid until the next change.
func (s *distinctSet) hashes() []uint64 {
	if s.zero {
		return append(s.values, 0) // s.values keeps its length
	}
	return s.values
}
