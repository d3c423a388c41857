package planning

import (
	"bytes"
	"testing"
)

// TestBoundPrefixes: the bounds a base holds of long strings and binaries
// are no more than heldBoundBytes and never narrower than the whole ones:
// every value between the whole bounds lies between the held ones.
func TestBoundPrefixes(t *testing.T) {
	long := []byte("0123456789abcdefXYZ") // 19 bytes
	for _, c := range []struct {
		name         string
		lo, hi       []byte
		wantLo, want []byte
	}{
		{"short", []byte("a@x.org"), []byte("z@x.org"), []byte("a@x.org"), []byte("z@x.org")},
		{"long", long, long, long[:16], []byte("0123456789abcdeg")},
		{"ff tail", long, append([]byte("0123456789abcd\xff\xff"), 'z'), long[:16], []byte("0123456789abce")},
		{"all ff", long, bytes.Repeat([]byte{0xff}, 20), long[:16], bytes.Repeat([]byte{0xff}, 20)},
	} {
		lo, hi := lowerPrefix(c.lo), upperPrefix(c.hi)
		if !bytes.Equal(lo, c.wantLo) || !bytes.Equal(hi, c.want) {
			t.Errorf("%s: held [%q, %q], want [%q, %q]", c.name, lo, hi, c.wantLo, c.want)
		}
		if bytes.Compare(lo, c.lo) > 0 || bytes.Compare(hi, c.hi) < 0 {
			t.Errorf("%s: held [%q, %q] narrower than [%q, %q]", c.name, lo, hi, c.lo, c.hi)
		}
		if len(c.hi) > heldBoundBytes && c.want[0] != 0xff && len(hi) > heldBoundBytes {
			t.Errorf("%s: held upper bound of %d bytes", c.name, len(hi))
		}
	}
}
