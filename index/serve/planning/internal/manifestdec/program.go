package manifestdec

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// role is what the program does with a field of a manifest entry.
type role uint8

const (
	rSkip role = iota
	rStatus
	rDataFile
	rContent
	rPath
	rFormat
	rPartition
	rRecords
	rSize
	rKey
	rSplits
	rSortOrder
	rFirstRowID
	rValueCounts
	rNullCounts
	rNaNCounts
	rLower
	rUpper
)

// slot is one field of a record the program reads, in the writer's order.
type slot struct {
	role role
	typ  *node // the field's type, for skipping
	// value is the type of the value of an optional field (a union with
	// null), branch its index in the union; branch is -1 when the field
	// is not a union.
	value  *node
	branch int64
	// keyFirst says a statistics map's records hold the key before the
	// value.
	keyFirst bool
}

// program is a compiled writer schema: the slots of the entry record and
// of its data_file record, and how to convert each partition field.
type program struct {
	entry, dataFile []slot
	part            []partField
	partRecord      *node
	statIDs         []int32
	minSize         int
}

// known is what a field the program reads must be: its Iceberg field id
// and role.
type known struct {
	id   int
	role role
}

var entryFields = map[string]known{"status": {0, rStatus}, "data_file": {2, rDataFile}}

var dataFileFields = map[string]known{
	"content": {134, rContent}, "file_path": {100, rPath}, "file_format": {101, rFormat}, "partition": {102, rPartition},
	"record_count": {103, rRecords}, "file_size_in_bytes": {104, rSize}, "key_metadata": {131, rKey},
	"split_offsets": {132, rSplits}, "sort_order_id": {140, rSortOrder}, "first_row_id": {142, rFirstRowID},
	"value_counts": {109, rValueCounts}, "null_value_counts": {110, rNullCounts}, "nan_value_counts": {137, rNaNCounts},
	"lower_bounds": {125, rLower}, "upper_bounds": {128, rUpper},
}

// compile makes the program of a manifest's writer schema root.
func compile(root *node, days map[int]bool, statsFields []int) (*program, error) {
	if root.kind != kRecord {
		return nil, unsupported("entry schema is not a record")
	}
	p := &program{minSize: root.minSize}
	for _, id := range statsFields {
		p.statIDs = append(p.statIDs, int32(id))
	}
	var err error
	if p.entry, err = slots(root, entryFields); err != nil {
		return nil, err
	}
	var df *node
	for _, s := range p.entry {
		switch s.role {
		case rStatus:
			if !plain(s.typ, kInt) {
				return nil, unsupported("status is not an int")
			}
		case rDataFile:
			if s.typ.kind != kRecord {
				return nil, unsupported("data_file is not a record")
			}
			df = s.typ
		}
	}
	if df == nil || !has(p.entry, rStatus) {
		return nil, unsupported("no status or data_file")
	}
	if p.dataFile, err = slots(df, dataFileFields); err != nil {
		return nil, err
	}
	for _, r := range []role{rPath, rFormat, rPartition, rRecords, rSize} {
		if !has(p.dataFile, r) {
			return nil, unsupported("data_file without a field of role %d", r)
		}
	}
	for i := range p.dataFile {
		s := &p.dataFile[i]
		ok := true
		switch s.role {
		case rContent:
			ok = plain(s.typ, kInt)
		case rPath, rFormat:
			ok = plain(s.typ, kString)
		case rRecords, rSize:
			ok = plain(s.typ, kLong)
		case rPartition:
			if s.typ.kind != kRecord {
				ok = false
				break
			}
			p.partRecord = s.typ
			if p.part, err = partFields(s.typ, days); err != nil {
				return nil, err
			}
		case rKey:
			ok = optional(s, func(n *node) bool { return plain(n, kBytes) })
		case rSplits:
			ok = optional(s, func(n *node) bool { return n.kind == kArray && n.logical == "" && plain(n.items, kLong) })
		case rSortOrder:
			ok = optional(s, func(n *node) bool { return plain(n, kInt) })
		case rFirstRowID:
			ok = optional(s, func(n *node) bool { return plain(n, kLong) })
		case rValueCounts, rNullCounts, rNaNCounts:
			ok = optional(s, func(n *node) bool { return statsMap(n, kLong) }) && keyOrder(s)
		case rLower, rUpper:
			ok = optional(s, func(n *node) bool { return statsMap(n, kBytes) }) && keyOrder(s)
		}
		if !ok {
			return nil, unsupported("data_file field of role %d has an unexpected type", s.role)
		}
	}
	return p, nil
}

// slots are the fields of record n, with the roles of those named in
// known; a field named there with another field id than the
// specification's is not one the program reads.
func slots(n *node, known map[string]known) ([]slot, error) {
	out := make([]slot, len(n.fields))
	for i, f := range n.fields {
		out[i] = slot{typ: f.typ, branch: -1}
		if k, ok := known[f.name]; ok {
			if f.hasID && f.id != k.id {
				return nil, unsupported("field %s has field-id %d, not %d", f.name, f.id, k.id)
			}
			out[i].role = k.role
		}
	}
	return out, nil
}

func has(slots []slot, r role) bool {
	for _, s := range slots {
		if s.role == r {
			return true
		}
	}
	return false
}

// plain reports whether n is of kind k without a logical type.
func plain(n *node, k kind) bool { return n.kind == k && n.logical == "" }

// optional sets s's value and branch for a field of a type that want
// accepts, or a union of it and null.
func optional(s *slot, want func(*node) bool) bool {
	n := s.typ
	if want(n) {
		s.value = n
		return true
	}
	if n.kind != kUnion || len(n.branches) != 2 {
		return false
	}
	for i, b := range n.branches {
		if want(b) && n.branches[1-i].kind == kNull {
			s.value, s.branch = b, int64(i)
			return true
		}
	}
	return false
}

// statsMap reports whether n is an Iceberg map of int to v: an array of
// records of a key and a value.
func statsMap(n *node, v kind) bool {
	if n.kind != kArray || (n.logical != "" && n.logical != "map") {
		return false
	}
	rec := n.items
	if rec.kind != kRecord || len(rec.fields) != 2 {
		return false
	}
	var key, value bool
	for _, f := range rec.fields {
		switch f.name {
		case "key":
			key = plain(f.typ, kInt)
		case "value":
			value = plain(f.typ, v)
		}
	}
	return key && value
}

func keyOrder(s *slot) bool {
	s.keyFirst = s.value.items.fields[0].name == "key"
	return true
}

// conv is how a partition field's Avro value becomes the Go value
// iceberg-go's DataFile.Partition gives for it.
type conv uint8

const (
	cNull conv = iota
	cBool
	cInt32
	cDays     // int, plain, of a day transform: iceberg.Date
	cDate     // int with logical type date: iceberg.Date by way of time.Time
	cTimeMs   // int time-millis: iceberg.Time in microseconds
	cInt64    // long
	cTimeUs   // long time-micros: iceberg.Time
	cTsMs     // long timestamp-millis: iceberg.Timestamp in microseconds
	cTsUs     // long timestamp-micros: iceberg.Timestamp
	cTsNs     // long timestamp-nanos: iceberg.TimestampNano
	cFloat    // float32
	cDouble   // float64
	cString   // string
	cBytes    // []byte
	cFixed    // []byte
	cUUID     // uuid.UUID
	cDecimal  // iceberg.DecimalLiteral, from fixed or bytes
	cOptional // marker: not a conv
)

// partField is one field of the partition record.
type partField struct {
	id     int
	hasID  bool
	typ    *node // the field's type
	value  *node // the value's type: typ, or its non-null branch
	branch int64 // value's index in typ when typ is a union, else -1
	conv   conv
}

// partFields compiles the fields of the partition record rec, whose
// fields of days are day transforms.
func partFields(rec *node, days map[int]bool) ([]partField, error) {
	var out []partField
	for _, f := range rec.fields {
		pf := partField{id: f.id, hasID: f.hasID, typ: f.typ, value: f.typ, branch: -1}
		// iceberg-go takes a field's logical type from its type, or the
		// last branch of its union, and day transforms' as date.
		last := f.typ
		if f.typ.kind == kUnion {
			if len(f.typ.branches) != 2 {
				return nil, unsupported("partition field %s: union of %d", f.name, len(f.typ.branches))
			}
			last = f.typ.branches[1]
			for i, b := range f.typ.branches {
				if b.kind != kNull {
					pf.value, pf.branch = b, int64(i)
				}
			}
			if pf.branch < 0 {
				pf.value, pf.branch = f.typ.branches[0], 0 // both null
			} else if f.typ.branches[1-pf.branch].kind != kNull {
				return nil, unsupported("partition field %s: union without null", f.name)
			}
		}
		logical := last.logical
		if last.kind == kNull {
			logical = ""
		}
		if f.hasID && days[f.id] {
			logical = "date"
		}
		v := pf.value
		c, ok := partConv(v, logical)
		if !ok {
			return nil, unsupported("partition field %s: Avro %d with logical type %q (iceberg-go's %q)", f.name, v.kind, v.logical, logical)
		}
		pf.conv = c
		out = append(out, pf)
	}
	return out, nil
}

// partConv is the conversion of a partition value of Avro type v whose
// logical type iceberg-go takes as logical; ok is false for the pairs the
// decoder does not convert as iceberg-go does.
func partConv(v *node, logical string) (conv, bool) {
	if v.logical != "" && v.logical != logical {
		return 0, false // twmb/avro gives a value iceberg-go does not convert
	}
	switch v.kind {
	case kNull:
		return cNull, logical == ""
	case kBoolean:
		return cBool, logical == ""
	case kInt:
		switch {
		case logical == "":
			return cInt32, true
		case logical == "date" && v.logical == "":
			return cDays, true
		case logical == "date":
			return cDate, true
		case logical == "time-millis":
			return cTimeMs, true
		}
	case kLong:
		switch logical {
		case "":
			return cInt64, true
		case "time-micros":
			return cTimeUs, true
		case "timestamp-millis":
			return cTsMs, true
		case "timestamp-micros":
			return cTsUs, true
		case "timestamp-nanos":
			return cTsNs, true
		}
	case kFloat:
		return cFloat, logical == ""
	case kDouble:
		return cDouble, logical == ""
	case kString:
		return cString, logical == ""
	case kBytes:
		switch logical {
		case "":
			return cBytes, true
		case "decimal":
			return cDecimal, true
		}
	case kFixed:
		switch {
		case logical == "":
			return cFixed, true
		case logical == "uuid" && v.size == 16:
			return cUUID, true
		case logical == "decimal" && v.size >= 1 && v.size <= 16:
			return cDecimal, true
		}
	}
	return 0, false
}

// entry decodes one manifest entry into blk, when it is live.
func (d *Decoder) entry(blk *Block) error {
	r := &d.r
	p := d.m.prog
	var status int32
	var e Entry
	nstats := len(p.statIDs)
	statsStart := len(blk.Stats)
	for range nstats {
		blk.Stats = append(blk.Stats, ColumnStats{})
	}
	stats := blk.Stats[statsStart:]
	var pathStart = len(d.paths)
	for _, s := range p.entry {
		switch s.role {
		case rStatus:
			r.field = "status"
			status = r.int()
		case rDataFile:
			if err := d.dataFile(&e, stats); err != nil {
				return err
			}
		default:
			r.field = "entry"
			r.skip(s.typ, 0)
		}
	}
	if r.err != nil {
		return r.err
	}
	switch iceberg.ManifestEntryStatus(status) {
	case iceberg.EntryStatusADDED, iceberg.EntryStatusEXISTING:
	case iceberg.EntryStatusDELETED:
		blk.Stats = blk.Stats[:statsStart]
		d.paths = d.paths[:pathStart]
		return nil
	default:
		return unsupported("entry status %d", status) // iceberg-go reports it
	}
	e.Status = iceberg.ManifestEntryStatus(status)
	blk.Entries = append(blk.Entries, e)
	d.pathEnds = append(d.pathEnds, len(d.paths))
	return nil
}

// dataFile decodes an entry's data_file record into e and stats.
func (d *Decoder) dataFile(e *Entry, stats []ColumnStats) error {
	r := &d.r
	p := d.m.prog
	for i := range p.dataFile {
		s := &p.dataFile[i]
		if r.err != nil {
			return r.err
		}
		switch s.role {
		case rContent:
			r.field = "content"
			if c := r.int(); c != 0 && r.err == nil {
				return unsupported("content %d in a data manifest", c) // iceberg-go reports it
			}
		case rPath:
			r.field = "file_path"
			d.paths = append(d.paths, r.bytes()...)
		case rFormat:
			r.field = "file_format"
			f := r.bytes()
			if string(f) != string(d.format) {
				d.format = iceberg.FileFormat(f)
			}
			e.Format = d.format
		case rPartition:
			r.field = "partition"
			if err := d.partition(e); err != nil {
				return err
			}
		case rRecords:
			r.field = "record_count"
			e.Records = r.long()
		case rSize:
			r.field = "file_size_in_bytes"
			e.Size = r.long()
		case rKey:
			r.field = "key_metadata"
			if d.present(s) {
				k := r.bytes()
				e.KeyMetadata = append(make([]byte, 0, len(k)), k...)
			}
		case rSplits:
			r.field = "split_offsets"
			if d.present(s) {
				e.SplitOffsets = d.splitOffsets(s.value)
			}
		case rSortOrder:
			r.field = "sort_order_id"
			if d.present(s) {
				id := r.int()
				ptr, ok := d.sortOrder[id]
				if !ok {
					v := int(id)
					ptr = &v
					d.sortOrder[id] = ptr
				}
				e.SortOrderID = ptr
			}
		case rFirstRowID:
			r.field = "first_row_id"
			if d.present(s) {
				e.FirstRowID, e.HasFirstRowID = r.long(), true
			}
		case rValueCounts, rNullCounts, rNaNCounts, rLower, rUpper:
			r.field = statsName[s.role]
			if d.present(s) {
				d.statsMap(s, stats)
			}
		default:
			r.field = "data_file"
			r.skip(s.typ, 0)
		}
	}
	return r.err
}

var statsName = map[role]string{rValueCounts: "value_counts", rNullCounts: "null_value_counts", rNaNCounts: "nan_value_counts",
	rLower: "lower_bounds", rUpper: "upper_bounds"}

// present reads the branch of an optional field and reports whether its
// value follows (not null).
func (d *Decoder) present(s *slot) bool {
	if s.branch < 0 {
		return true
	}
	r := &d.r
	b := r.long()
	if r.err != nil {
		return false
	}
	if b != 0 && b != 1 {
		r.fail(fmt.Sprintf("union branch %d of 2", b))
		return false
	}
	return b == s.branch
}

// splitOffsets reads an array of longs, shared with earlier files of the
// same offsets.
func (d *Decoder) splitOffsets(n *node) []int64 {
	r := &d.r
	start := r.p
	d.scratch = d.scratch[:0]
	for {
		count := r.itemCount(n)
		if count < 0 {
			break
		}
		for range count {
			d.scratch = append(d.scratch, r.long())
		}
	}
	if r.err != nil {
		return nil
	}
	raw := r.b[start:r.p]
	if s, ok := d.splits[string(raw)]; ok {
		return s
	}
	s := append(make([]int64, 0, len(d.scratch)), d.scratch...)
	if len(d.splits) >= maxShared {
		clear(d.splits)
	}
	d.splits[string(raw)] = s
	return s
}

// statsMap reads one of a file's statistics maps, keeping the values of
// the program's columns (the last of a key given twice, as a Go map
// made from the list keeps).
func (d *Decoder) statsMap(s *slot, stats []ColumnStats) {
	r := &d.r
	ids := d.m.prog.statIDs
	isBytes := s.role == rLower || s.role == rUpper
	for {
		count := r.itemCount(s.value)
		if count < 0 {
			return
		}
		for range count {
			var key int32
			var long int64
			var raw []byte
			for k := range 2 {
				if (k == 0) == s.keyFirst {
					key = r.int()
				} else if isBytes {
					raw = r.bytes()
				} else {
					long = r.long()
				}
			}
			if r.err != nil {
				return
			}
			for j, id := range ids {
				if id != key {
					continue
				}
				st := &stats[j]
				switch s.role {
				case rValueCounts:
					st.Values, st.HasValues = long, true
				case rNullCounts:
					st.Nulls, st.HasNulls = long, true
				case rNaNCounts:
					st.NaNs, st.HasNaNs = long, true
				case rLower:
					st.Lower = raw
				case rUpper:
					st.Upper = raw
				}
			}
		}
	}
}

// partition reads an entry's partition record: the map of an earlier file
// of the same partition bytes, or a new one.
func (d *Decoder) partition(e *Entry) error {
	r := &d.r
	p := d.m.prog
	if len(p.part) == 0 {
		r.skip(p.partRecord, 0) // no fields: iceberg-go's partition is nil
		return r.err
	}
	start := r.p
	r.skip(p.partRecord, 0)
	if r.err != nil {
		return r.err
	}
	raw := r.b[start:r.p]
	if m, ok := d.parts[string(raw)]; ok {
		e.Partition = m
		return nil
	}
	m, err := partitionValues(p.part, raw)
	if err != nil {
		return err
	}
	if len(d.parts) >= maxShared {
		clear(d.parts)
	}
	d.parts[string(raw)] = m
	e.Partition = m
	return nil
}

// partitionValues decodes a partition record's bytes into the map
// iceberg-go's DataFile.Partition gives: by field id, fields without one
// left out, null values as nil.
func partitionValues(fields []partField, raw []byte) (map[int]any, error) {
	r := &reader{b: raw}
	m := make(map[int]any, len(fields))
	for _, f := range fields {
		r.field = "partition"
		if f.branch >= 0 {
			b := r.long()
			if r.err != nil {
				return nil, r.err
			}
			if b < 0 || b > 1 {
				return nil, fmt.Errorf("partition: union branch %d of 2", b)
			}
			if b != f.branch {
				if f.hasID {
					m[f.id] = nil
				}
				continue
			}
		}
		v, err := partValue(r, f)
		if err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, r.err
		}
		if f.hasID {
			m[f.id] = v
		}
	}
	return m, nil
}

// partValue reads one partition value and converts it as twmb/avro and
// iceberg-go do; a value they would refuse (or convert differently than
// here) is ErrUnsupported.
func partValue(r *reader, f partField) (any, error) {
	switch f.conv {
	case cNull:
		return nil, nil
	case cBool:
		return r.boolean(), nil
	case cInt32:
		return r.int(), nil
	case cDays:
		return iceberg.Date(r.int()), nil
	case cDate:
		days := r.int()
		t := time.Unix(int64(days)*86400, 0).UTC()
		return iceberg.Date(t.Truncate(24*time.Hour).Unix() / int64((time.Hour * 24).Seconds())), nil
	case cTimeMs:
		ms := r.int()
		return iceberg.Time((time.Duration(ms) * time.Millisecond).Microseconds()), nil
	case cInt64:
		return r.long(), nil
	case cTimeUs:
		us := r.long()
		if us > math.MaxInt64/int64(time.Microsecond) || us < math.MinInt64/int64(time.Microsecond) {
			return nil, unsupported("time-micros %d", us) // twmb/avro refuses it
		}
		return iceberg.Time((time.Duration(us) * time.Microsecond).Microseconds()), nil
	case cTsMs:
		return iceberg.Timestamp(time.UnixMilli(r.long()).UTC().UnixMicro()), nil
	case cTsUs:
		return iceberg.Timestamp(time.UnixMicro(r.long()).UTC().UnixMicro()), nil
	case cTsNs:
		ns := r.long()
		return iceberg.TimestampNano(time.Unix(ns/1e9, ns%1e9).UTC().UnixNano()), nil
	case cFloat:
		b := r.fixed(4)
		if b == nil {
			return nil, r.err
		}
		return math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24), nil
	case cDouble:
		b := r.fixed(8)
		if b == nil {
			return nil, r.err
		}
		var u uint64
		for i := 7; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		return math.Float64frombits(u), nil
	case cString:
		return string(r.bytes()), nil
	case cBytes:
		b := r.bytes()
		return append(make([]byte, 0, len(b)), b...), nil
	case cFixed:
		b := r.fixed(f.value.size)
		return append(make([]byte, 0, len(b)), b...), nil
	case cUUID:
		b := r.fixed(16)
		if b == nil {
			return nil, r.err
		}
		return uuid.UUID(b), nil
	case cDecimal:
		var b []byte
		if f.value.kind == kFixed {
			b = r.fixed(f.value.size)
		} else {
			b = r.bytes()
		}
		if r.err != nil {
			return nil, r.err
		}
		if len(b) == 0 || len(b) > 16 {
			return nil, unsupported("decimal of %d bytes", len(b))
		}
		return iceberg.DecimalLiteral{Scale: f.value.scale, Val: decimal128.FromBigInt(twosComplement(b))}, nil
	}
	return nil, unsupported("partition conversion %d", f.conv)
}

// twosComplement is the integer of big-endian two's complement bytes b.
func twosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}
