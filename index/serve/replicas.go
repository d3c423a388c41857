package serve

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// Plans shared by replicas (Options.ReplicaSecret).
//
// Without a replica secret a server makes one of its own at start: its
// plan ids and plan tasks are tokens too, which it answers again after its
// plan store (plans.go, a sixteenth of the memory budget) let their plans
// go for room (at 1,000,000 files and a 256 MiB budget, 16 clients' plans
// of 4 pages each did not fit, and their later pages were answered
// NoSuchPlanTaskException, failing the scans), while another replica, or
// the server after a restart, answers them NoSuchPlanIdException. With a
// shared secret, the ids are tokens that say what to plan again, authenticated by an
// HMAC-SHA256 under the secret all replicas share, and encrypted under it
// (replicas.encrypt: plan ids are in URL paths, which proxies log):
//
//   - what was planned: the request's fields that shape a plan (filter,
//     select, case-sensitive, snapshot-id, use-snapshot-schema,
//     stats-fields; min-rows-requested, a hint, is dropped), compacted and
//     deflated when that is shorter; and the table version: a digest of
//     its metadata location and last-updated time, and the snapshot
//     planned;
//   - a plan task, the range of path keys of its page
//     (planning.PageRanges);
//   - an expiry (the plan TTL) and a random nonce naming the plan.
//
// What a token is bound to it does not carry: the MAC covers the REST
// prefix and table of the request's path, the table's uuid as the catalog
// loads it, and the caller's credential (ownerOf: a hash of its
// Authorization), so a token presented for another table, a table dropped
// and made again, or by another caller fails the MAC and is answered 404
// like an unknown id, as is one tampered with or expired.
//
// The replica that made a plan holds it as before, under its tokens, and
// answers from memory. Another replica verifies the token, loads the table
// with the caller's credentials (so the catalog still decides) and plans
// the request again, of the same version: as it is when the table is still
// at that version (its own plan cache and warm base plans make that a
// lookup), else pinned to the snapshot planned (a snapshot the table no
// longer has is answered 404; a table that had no snapshot plans no
// files). A plan task
// is answered with the files of that plan in its key range (TasksIn): each
// plan keeps every file that may match, and the ranges of one plan cover
// every key once, so a scan whose pages come from several replicas reads
// every file that may match once, even where their plans differ (another
// --tasks-per-page, an index one could not read). A plan id polled on
// another replica is planned there as a plan request is (submitted past
// --submit-after) and held there under the same id.
//
// What stays per replica: the caches (plans, base plans, manifests), the
// admission slots and work budget, and cancellation, which is advisory: a
// DELETE cancels the plan where it is held and makes the replica that
// answered it refuse the plan's id and tasks until they expire; other
// replicas still answer them. A request whose token would be too long (a
// plan id over maxPlanIDBytes: it is in a URL path; a plan task over
// maxPlanTaskBytes, in a body, once per page) gets random ids, and only
// the replica that made it answers them, while it holds the plan.

const (
	// tokenPrefix starts a token (random ids are hex).
	tokenPrefix = "s1."
	// tokenFormat is the first byte of a token's binary form.
	tokenFormat = 1
	// maxPlanIDBytes bounds a plan id token: it is a segment of URL paths,
	// which proxies and load balancers bound (some at 4 KiB a request line).
	maxPlanIDBytes = 1024
	// maxPlanTaskBytes bounds a plan task token, sent once per page.
	maxPlanTaskBytes = 16 << 10
	// macBytes is the MAC's length in a token: HMAC-SHA256 cut to 128
	// bits, also the IV of its encryption.
	macBytes = 16
	// MinReplicaSecretBytes is the shortest Options.ReplicaSecret.
	MinReplicaSecretBytes = 32
	// maxCancelled bounds the cancelled plans remembered (replicas.cancel).
	maxCancelled = 1 << 16
)

// Token kinds: a plan id or a plan task.
const (
	kindPlan = 'p'
	kindTask = 't'
)

// Token flags.
const (
	flagSnapshot   = 1 << iota // a snapshot was planned (else the table had none)
	flagCompressed             // the request is deflated
)

// replicas makes and checks tokens under the shared secret, and remembers
// the plans cancelled here.
type replicas struct {
	macKey    []byte       // HMAC-SHA256's, derived from the secret
	block     cipher.Block // AES-256, its key derived from the secret
	now       func() time.Time
	mu        sync.Mutex
	cancelled map[[8]byte]time.Time // a plan's nonce → its token's expiry
}

func newReplicas(secret []byte, now func() time.Time) *replicas {
	derive := func(use string) []byte {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte("icebloom serve plan tokens: " + use))
		return h.Sum(nil)
	}
	block, _ := aes.NewCipher(derive("encryption")) // a 32-byte key: AES-256
	return &replicas{macKey: derive("mac"), block: block, now: now, cancelled: map[[8]byte]time.Time{}}
}

// binding is what a token is bound to without carrying it: the MAC
// covers it.
type binding struct{ prefix, table, owner, uuid string }

// version names the table version a plan was made of.
type version struct {
	digest      [8]byte // of its metadata location and last-updated time
	snapshot    int64
	hasSnapshot bool
}

// versionOf is the version of loaded that req plans.
func versionOf(loaded *planning.Loaded, req rest.PlanTableScanRequest) version {
	v := version{digest: versionDigest(loaded)}
	if req.SnapshotID != nil {
		v.snapshot, v.hasSnapshot = *req.SnapshotID, true
	} else if snap := loaded.Table.CurrentSnapshot(); snap != nil {
		v.snapshot, v.hasSnapshot = snap.SnapshotID, true
	}
	return v
}

func versionDigest(loaded *planning.Loaded) [8]byte {
	tbl := loaded.Table
	sum := sha256.Sum256([]byte(tbl.MetadataLocation() + "\x00" + strconv.FormatInt(tbl.Metadata().LastUpdatedMillis(), 10)))
	return [8]byte(sum[:8])
}

// token is a plan id or plan task as made and read.
type token struct {
	kind    byte
	expires int64 // Unix seconds
	nonce   [8]byte
	version version
	keys    planning.KeyRange // of a plan task
	request []byte            // encoded (encodeRequest)
	deflate bool
}

// sharedIDs makes the ids of one plan (planStore): its plan id, and its
// plan tasks once it is planned.
type sharedIDs struct {
	r    *replicas
	bind binding
	tok  token // of the plan id; its kind, keys and expiry are set per id
	id   string
}

// planID is the plan's id, expiring at expires: the token this replica
// was polled with, else a new one; "" when it would be too long.
func (m *sharedIDs) planID(expires time.Time) string {
	if m.id != "" {
		return m.id
	}
	t := m.tok
	t.kind, t.expires = kindPlan, expires.Unix()
	if id := m.r.seal(t, m.bind); len(id) <= maxPlanIDBytes {
		return id
	}
	return ""
}

// tasks are the pages of res by key range, the first answered inline, and
// the plan task tokens of the others, expiring at expires; res's own pages
// and nil ids when a token would be too long.
func (m *sharedIDs) tasks(res *planning.PlanResult, expires time.Time) ([]rest.ScanTasks, []string) {
	ranges := res.PageRanges()
	pages := make([]rest.ScanTasks, len(ranges))
	ids := make([]string, 0, len(ranges)-1)
	for i, kr := range ranges {
		pages[i] = res.TasksIn(kr)
		if i == 0 {
			continue
		}
		t := m.tok
		t.kind, t.expires, t.keys = kindTask, expires.Unix(), kr
		id := m.r.seal(t, m.bind)
		if len(id) > maxPlanTaskBytes {
			return res.Pages, nil
		}
		ids = append(ids, id)
	}
	return pages, ids
}

// newIDs makes the ids of a new plan of req of loaded for the request r
// to rt; nil for a request that cannot be encoded.
func (s *Server) newIDs(r *http.Request, rt route, loaded *planning.Loaded, req rest.PlanTableScanRequest) *sharedIDs {
	enc, deflated, err := encodeRequest(req)
	if err != nil {
		return nil
	}
	t := token{version: versionOf(loaded, req), request: enc, deflate: deflated}
	rand.Read(t.nonce[:]) // never fails (crypto/rand)
	return &sharedIDs{r: s.replicas, bind: bindingOf(r, rt, loaded), tok: t}
}

func bindingOf(r *http.Request, rt route, loaded *planning.Loaded) binding {
	return binding{prefix: rt.prefix, table: rt.key(), owner: ownerOf(r), uuid: loaded.Table.Metadata().TableUUID().String()}
}

// encodeRequest is the fields of req that shape its plan as compact JSON,
// deflated when that is shorter; an error for one that no token could
// hold.
func encodeRequest(req rest.PlanTableScanRequest) ([]byte, bool, error) {
	req.MinRowsRequested = nil
	if len(req.Filter) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, req.Filter); err != nil {
			return nil, false, err
		}
		req.Filter = b.Bytes()
	}
	raw, err := json.Marshal(req)
	switch {
	case err != nil:
		return nil, false, err
	case len(raw) <= 128: // a lookup of a value or two: deflating would not pay
		return raw, false, nil
	case len(raw) > 16*maxPlanTaskBytes: // no deflating would make it fit
		return nil, false, fmt.Errorf("a plan request of %d bytes", len(raw))
	}
	var z bytes.Buffer
	w := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(w)
	w.Reset(&z)
	w.Write(raw)
	w.Close()
	if z.Len() < len(raw) {
		return z.Bytes(), true, nil
	}
	return raw, false, nil
}

// flateWriters are kept for encodeRequest: a writer holds hundreds of
// kilobytes.
var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestCompression) // the level is valid
	return w
}}

// decodeRequest reads what encodeRequest wrote (a token's, whose MAC was
// checked), within limit bytes.
func decodeRequest(enc []byte, deflated bool, limit int64) (rest.PlanTableScanRequest, error) {
	var req rest.PlanTableScanRequest
	raw := enc
	if deflated {
		var err error
		if raw, err = io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(enc)), limit+1)); err != nil {
			return req, err
		}
		if int64(len(raw)) > limit {
			return req, fmt.Errorf("a plan request over %d bytes", limit)
		}
	}
	err := json.Unmarshal(raw, &req)
	return req, err
}

// seal writes t as a token bound to b: its kind in the clear, then the
// rest encrypted (encrypt).
func (rp *replicas) seal(t token, b binding) string {
	flags := byte(0)
	if t.version.hasSnapshot {
		flags |= flagSnapshot
	}
	if t.deflate {
		flags |= flagCompressed
	}
	p := []byte{flags}
	p = binary.AppendUvarint(p, uint64(t.expires))
	p = append(p, t.nonce[:]...)
	p = append(p, t.version.digest[:]...)
	if t.version.hasSnapshot {
		p = binary.AppendVarint(p, t.version.snapshot)
	}
	if t.kind == kindTask {
		p = binary.BigEndian.AppendUint64(p, t.keys.Lo)
		p = binary.BigEndian.AppendUint64(p, t.keys.Hi)
	}
	p = append(p, t.request...)
	header := []byte{tokenFormat, t.kind}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(append(header, rp.encrypt(p, rp.ad(header, b))...))
}

// ad is what a token's MAC covers beside its payload: its header and what
// it is bound to.
func (rp *replicas) ad(header []byte, b binding) []byte {
	ad := append([]byte("icebloom serve plan token\x00"), header...)
	for _, s := range []string{b.prefix, b.table, b.owner, b.uuid} {
		ad = binary.AppendUvarint(ad, uint64(len(s)))
		ad = append(ad, s...)
	}
	return ad
}

// encrypt is SIV (RFC 5297's construction, with HMAC-SHA256 as its MAC):
// the MAC of ad and p, cut to macBytes, then p encrypted with AES-256-CTR
// from that MAC as IV. A token is then as short as a MAC allows, tells
// nothing of its request to whoever logs URL paths (a filter's values:
// emails, ids), and needs no nonce that could repeat.
func (rp *replicas) encrypt(p, ad []byte) []byte {
	tag := rp.tag(p, ad)
	out := make([]byte, len(tag)+len(p))
	copy(out, tag)
	cipher.NewCTR(rp.block, tag).XORKeyStream(out[len(tag):], p)
	return out
}

// decrypt undoes encrypt, false if the MAC is not this secret's for ad.
func (rp *replicas) decrypt(c, ad []byte) ([]byte, bool) {
	if len(c) < macBytes {
		return nil, false
	}
	tag, p := c[:macBytes], make([]byte, len(c)-macBytes)
	cipher.NewCTR(rp.block, tag).XORKeyStream(p, c[macBytes:])
	return p, hmac.Equal(tag, rp.tag(p, ad))
}

func (rp *replicas) tag(p, ad []byte) []byte {
	h := hmac.New(sha256.New, rp.macKey)
	h.Write(binary.AppendUvarint(nil, uint64(len(ad))))
	h.Write(ad)
	h.Write(p)
	return h.Sum(nil)[:macBytes]
}

// isToken reports whether id is written as a token (it may still not be
// one this server's secret made).
func isToken(id string) bool { return strings.HasPrefix(id, tokenPrefix) }

// open reads id as a token of kind bound to b: false unless its MAC is
// this secret's for b, and it has not expired or been cancelled here.
func (rp *replicas) open(id string, kind byte, b binding) (token, bool) {
	var t token
	if !isToken(id) {
		return t, false
	}
	c, err := base64.RawURLEncoding.DecodeString(id[len(tokenPrefix):])
	if err != nil || len(c) < 2 || c[0] != tokenFormat || c[1] != kind {
		return t, false
	}
	p, ok := rp.decrypt(c[2:], rp.ad(c[:2], b))
	if !ok || len(p) < 1 {
		return t, false
	}
	// What the MAC covers is what seal wrote: read without further checks
	// beyond lengths.
	t.kind, t.version.hasSnapshot, t.deflate = kind, p[0]&flagSnapshot != 0, p[0]&flagCompressed != 0
	p = p[1:]
	exp, n := binary.Uvarint(p)
	if n <= 0 || len(p) < n+16 {
		return t, false
	}
	t.expires, p = int64(exp), p[n:]
	t.nonce, t.version.digest, p = [8]byte(p[:8]), [8]byte(p[8:16]), p[16:]
	if t.version.hasSnapshot {
		snap, n := binary.Varint(p)
		if n <= 0 {
			return t, false
		}
		t.version.snapshot, p = snap, p[n:]
	}
	if kind == kindTask {
		if len(p) < 16 {
			return t, false
		}
		t.keys, p = planning.KeyRange{Lo: binary.BigEndian.Uint64(p), Hi: binary.BigEndian.Uint64(p[8:])}, p[16:]
	}
	t.request = p
	now := rp.now()
	if now.Unix() > t.expires {
		return t, false
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if _, gone := rp.cancelled[t.nonce]; gone {
		return t, false
	}
	return t, true
}

// cancel remembers that plan t was cancelled here, until it expires.
func (rp *replicas) cancel(t token) {
	now := rp.now()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for nonce, exp := range rp.cancelled {
		if now.Unix() > exp.Unix() {
			delete(rp.cancelled, nonce)
		}
	}
	if len(rp.cancelled) >= maxCancelled {
		return // past the bound a cancel is not remembered: it is advisory
	}
	rp.cancelled[t.nonce] = time.Unix(t.expires, 0)
}

// replanned is the request t's plan is made again with of loaded: as it
// was when loaded is the version planned, else pinned to the snapshot
// planned. empty: the table had no snapshot, and the plan is of no file;
// gone: the snapshot is no longer the table's.
func (s *Server) replanned(t token, loaded *planning.Loaded) (req rest.PlanTableScanRequest, empty, gone bool, err error) {
	req, err = decodeRequest(t.request, t.deflate, s.o.MaxRequestBytes)
	if err != nil || versionDigest(loaded) == t.version.digest {
		return req, false, false, err
	}
	switch {
	case !t.version.hasSnapshot:
		return req, true, false, nil
	case loaded.Table.SnapshotByID(t.version.snapshot) == nil:
		return req, false, true, nil
	}
	req.SnapshotID = &t.version.snapshot
	return req, false, false, nil
}

// loadShared loads the table of a poll, plan task or cancel of a token
// with the caller's credentials, in a load slot, as found does (a caller
// the catalog refuses gets its answer whether or not the token is good);
// false when it answered a failure.
func (s *Server) loadShared(w http.ResponseWriter, r *http.Request, rt route) (*planning.Loaded, bool) {
	free, share, refused := s.admitter.admitLoad(r.Context(), s.callerOf(r))
	if refused != nil {
		s.refuse(w, refused)
		return nil, false
	}
	ctx, hold, err := s.planner.HoldWork(planning.WithShare(s.callerContext(r, rt), share), 0)
	if err != nil {
		free()
		s.planError(w, err)
		return nil, false
	}
	loaded, err := s.planner.Load(ctx, rt.ident())
	hold.Release()
	free()
	s.noteTable(rt.ident(), loaded, err)
	if err != nil {
		s.planError(w, err)
		return nil, false
	}
	return loaded, true
}

// openShared loads the table of rt and opens the token id of kind for the
// caller; false when it answered (a failure, or 404 of type typ).
func (s *Server) openShared(w http.ResponseWriter, r *http.Request, rt route, id string, kind byte, typ, what string) (*planning.Loaded, token, bool) {
	loaded, ok := s.loadShared(w, r, rt)
	if !ok {
		return nil, token{}, false
	}
	t, ok := s.replicas.open(id, kind, bindingOf(r, rt, loaded))
	if !ok {
		writeError(w, http.StatusNotFound, typ, fmt.Sprintf("no %s of table %s for this caller (it may have expired)", what, rt.ident()))
		return nil, token{}, false
	}
	return loaded, t, true
}

// openReplanned opens the token id of kind (a plan or plan task, what)
// and the request it was made of, for the snapshot it planned; empty when
// that plans no file. It answers 404 (typ) itself, and false, for a token
// that is not this caller's or whose snapshot the table no longer has.
func (s *Server) openReplanned(w http.ResponseWriter, r *http.Request, rt route, id string, kind byte, typ, what string) (
	loaded *planning.Loaded, t token, req rest.PlanTableScanRequest, empty, ok bool) {
	loaded, t, ok = s.openShared(w, r, rt, id, kind, typ, "such "+what)
	if !ok {
		return nil, t, req, false, false
	}
	req, empty, gone, err := s.replanned(t, loaded)
	switch {
	case err != nil:
		writeError(w, http.StatusNotFound, typ, fmt.Sprintf("no such %s of table %s for this caller", what, rt.ident()))
		return nil, t, req, false, false
	case gone:
		writeError(w, http.StatusNotFound, typ, fmt.Sprintf("the snapshot this %s was planned of is no longer table %s's", what, rt.ident()))
		return nil, t, req, false, false
	}
	return loaded, t, req, empty, true
}

// fetchSharedTasks answers POST .../tasks with a plan task token this
// replica does not hold: the files of the plan made again in its range.
func (s *Server) fetchSharedTasks(w http.ResponseWriter, r *http.Request, rt route, id string) {
	loaded, t, req, empty, ok := s.openReplanned(w, r, rt, id, kindTask, "NoSuchPlanTaskException", "plan task")
	if !ok {
		return
	}
	if empty {
		writeJSON(w, http.StatusOK, map[string]any{"file-scan-tasks": []any{}})
		return
	}
	free, share, refused := s.admitter.admit(r.Context(), s.callerOf(r))
	if refused != nil {
		s.refuse(w, refused)
		return
	}
	defer free()
	ctx := planning.WithShare(catalog.WithRequestTimeout(s.callerContext(r, rt), s.o.StorageTimeout), share)
	ctx, cancel := context.WithTimeout(ctx, s.o.PlanTimeout)
	defer cancel()
	ctx, hold, err := s.planner.HoldWork(ctx, planning.RequestWorkBytes(requestBytes(req)))
	if err != nil {
		s.planError(w, err)
		return
	}
	defer hold.Release()
	start := time.Now()
	res, err := s.planner.PlanTable(ctx, loaded, req)
	if err != nil {
		s.planError(w, err)
		return
	}
	s.log.Debug("plan task of another replica planned again", "table", rt.ident(), "cached", res.Cached, "fast_path", res.FastPath, "duration", time.Since(start))
	page := res.TasksIn(t.keys)
	if len(page.FileScanTasks) == 0 { // Java's parser wants plan-tasks or file-scan-tasks
		writeJSON(w, http.StatusOK, map[string]any{"file-scan-tasks": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, rest.FetchScanTasksResponse{ScanTasks: page})
}

// fetchSharedPlan answers GET .../plan/{id} with a plan id token this
// replica does not hold: the plan is made here, as a plan request is, and
// held here under the same id; past SubmitAfter it is answered submitted
// and polled here like a plan of this replica's.
func (s *Server) fetchSharedPlan(w http.ResponseWriter, r *http.Request, rt route) {
	loaded, t, req, empty, ok := s.openReplanned(w, r, rt, rt.planID, kindPlan, "NoSuchPlanIdException", "plan")
	if !ok {
		return
	}
	owner := ownerOf(r)
	ids := &sharedIDs{r: s.replicas, bind: bindingOf(r, rt, loaded), tok: t, id: rt.planID}
	if empty {
		res := &planning.PlanResult{Pages: []rest.ScanTasks{{}}, TableUUID: ids.bind.uuid, Credentials: loaded.Credentials}
		_, p := s.plans.add(rt.key(), owner, res, ids)
		writeJSON(w, http.StatusOK, rest.CompletedPlanningResult{Status: rest.PlanStatusCompleted, ScanTasks: p.first, StorageCredentials: p.creds})
		return
	}
	free, share, refused := s.admitter.admit(r.Context(), s.callerOf(r))
	if refused != nil {
		s.refuse(w, refused)
		return
	}
	// As in planScan: the plan may outlive the request.
	caller := WithHeader(planning.WithShare(context.WithoutCancel(r.Context()), share), r.Header.Clone(), rt.prefix)
	ctx, cancel := context.WithTimeout(catalog.WithRequestTimeout(caller, s.o.StorageTimeout), s.o.PlanTimeout)
	ctx, hold, err := s.planner.HoldWork(ctx, planning.RequestWorkBytes(requestBytes(req)))
	if err != nil {
		cancel()
		free()
		s.planError(w, err)
		return
	}
	s.planWithin(w, rt, ctx, cancel, func() { hold.Release(); free() }, loaded, req, owner, ids, func(_ string, p *storedPlan) {
		if p == nil { // polled here from now on, under the same id
			writeJSON(w, http.StatusOK, map[string]any{"status": rest.PlanStatusSubmitted})
			return
		}
		writeJSON(w, http.StatusOK, rest.CompletedPlanningResult{Status: rest.PlanStatusCompleted, ScanTasks: p.first, StorageCredentials: p.creds})
	})
}

// cancelShared answers DELETE .../plan/{id} of a plan id token: the plan
// is dropped if it is held here, and its id and tasks refused here from
// then on; other replicas still answer them (cancelling is advisory: it
// lets a server release what it holds for the plan).
func (s *Server) cancelShared(w http.ResponseWriter, r *http.Request, rt route) {
	_, t, ok := s.openShared(w, r, rt, rt.planID, kindPlan, "NoSuchPlanIdException", "such plan")
	if !ok {
		return
	}
	s.replicas.cancel(t)
	s.plans.cancel(rt.key(), ownerOf(r), rt.planID)
	w.WriteHeader(http.StatusNoContent)
}
