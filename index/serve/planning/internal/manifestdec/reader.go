package manifestdec

import (
	"errors"
	"fmt"
)

// reader reads Avro's binary encoding from b. Its error is sticky: the
// first failure is kept, and every later read returns zero values without
// reading, so that a decoder checks once per entry instead of per value.
type reader struct {
	b     []byte
	p     int
	err   error
	field string // the field being read, for errors
}

// errShort is a value that runs past the end of its block.
var errShort = errors.New("value runs past the end of its block")

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("field %s: %s", r.field, what)
	}
	r.p = len(r.b)
}

func (r *reader) failErr(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("field %s: %w", r.field, err)
	}
	r.p = len(r.b)
}

// long reads a zig-zag varint of at most 10 bytes.
func (r *reader) long() int64 {
	if r.p < len(r.b) && r.b[r.p] < 0x80 { // most are one byte
		c := r.b[r.p]
		r.p++
		return int64(c>>1) ^ -int64(c&1)
	}
	var u uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if r.p >= len(r.b) {
			r.failErr(errShort)
			return 0
		}
		c := r.b[r.p]
		r.p++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if shift == 63 && c > 1 {
				break
			}
			return int64(u>>1) ^ -int64(u&1)
		}
	}
	r.fail("varint longer than 10 bytes")
	return 0
}

// int reads an Avro int: a long within int32.
func (r *reader) int() int32 {
	v := r.long()
	if v != int64(int32(v)) {
		r.fail(fmt.Sprintf("int %d out of range", v))
		return 0
	}
	return int32(v)
}

// bytes reads a length and that many bytes, which alias the block.
func (r *reader) bytes() []byte {
	n := r.long()
	if r.err != nil {
		return nil
	}
	if n < 0 || n > int64(len(r.b)-r.p) {
		r.fail(fmt.Sprintf("length %d with %d bytes left", n, len(r.b)-r.p))
		return nil
	}
	b := r.b[r.p : r.p+int(n) : r.p+int(n)]
	r.p += int(n)
	return b
}

// fixed reads n bytes, which alias the block.
func (r *reader) fixed(n int) []byte {
	if n > len(r.b)-r.p {
		r.failErr(errShort)
		return nil
	}
	b := r.b[r.p : r.p+n : r.p+n]
	r.p += n
	return b
}

// skipVarints skips n varints.
func (r *reader) skipVarints(n int) {
	for range n {
		for {
			if r.p >= len(r.b) {
				r.failErr(errShort)
				return
			}
			c := r.b[r.p]
			r.p++
			if c < 0x80 {
				break
			}
		}
	}
}

func (r *reader) advance(n int) {
	if n > len(r.b)-r.p {
		r.failErr(errShort)
		return
	}
	r.p += n
}

// boolean reads a byte 0 or 1.
func (r *reader) boolean() bool {
	b := r.fixed(1)
	if b == nil {
		return false
	}
	if b[0] > 1 {
		r.fail(fmt.Sprintf("boolean byte %d", b[0]))
		return false
	}
	return b[0] == 1
}
