package indexfile

import "testing"

// TestNameIsName: every name Name makes is one IsName (gc's rule) accepts,
// and names of other files, or close misses, are not.
func TestNameIsName(t *testing.T) {
	for _, id := range []int64{0, 1, 8744202431296339371} {
		if n := Name(id); !IsName(n) {
			t.Errorf("IsName(%q) = false for a name Name made", n)
		}
	}
	for _, n := range []string{
		"00001-6c8a7c5e-2a70-4a8a-9bd1-0a3d1f2b4c5d.metadata.json",
		"icebloom-12-6c8a7c5e-2a70-4a8a-9bd1-0a3d1f2b4c5d.puffin.tmp",
		"icebloom--6c8a7c5e-2a70-4a8a-9bd1-0a3d1f2b4c5d.puffin",
		"other-12-6c8a7c5e-2a70-4a8a-9bd1-0a3d1f2b4c5d.puffin",
		"icebloom-12-short.puffin",
	} {
		if IsName(n) {
			t.Errorf("IsName(%q) = true", n)
		}
	}
}
