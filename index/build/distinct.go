package build

// distinctSet is an exact set of 64-bit value hashes, the way the build
// counts a file's distinct values: open addressing with linear probing,
// indexed by the top bits of the hash, which is uniformly random already,
// so no further hashing is needed. One insert is one probe into a table at
// most half full — cheaper than sorting, and with memory that follows the
// distinct count rather than the row count.
type distinctSet struct {
	slots []uint64 // 0 marks an empty slot; the hash 0 is kept in zero
	n     int      // non-zero hashes held
	zero  bool
	shift uint // 64 - log2(len(slots))
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
	s.n, s.zero = 0, false
}

// addAll adds every hash of hs.
func (s *distinctSet) addAll(hs []uint64) {
	for _, h := range hs {
		if h == 0 {
			s.zero = true
			continue
		}
		if 2*(s.n+1) > len(s.slots) {
			s.grow()
		}
		s.insert(h)
	}
}

// insert adds a non-zero hash to a set with room for it.
func (s *distinctSet) insert(h uint64) {
	mask := len(s.slots) - 1
	for i := int(h >> s.shift); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			s.n++
			return
		case h:
			return
		}
	}
}

func (s *distinctSet) grow() {
	old := s.slots
	s.slots = make([]uint64, 2*len(old))
	s.shift--
	s.n = 0
	for _, h := range old {
		if h != 0 {
			s.insert(h)
		}
	}
}

// len returns the number of distinct hashes.
func (s *distinctSet) len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// appendTo appends the distinct hashes to dst, in no particular order.
func (s *distinctSet) appendTo(dst []uint64) []uint64 {
	for _, h := range s.slots {
		if h != 0 {
			dst = append(dst, h)
		}
	}
	if s.zero {
		dst = append(dst, 0)
	}
	return dst
}
