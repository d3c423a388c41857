package catalogtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3 is an S3-protocol object store for tests, as httptest.Server is an
// HTTP server: from NewS3, gofakes3 on an in-memory backend, served over
// real HTTP on loopback with one bucket created; from NewS3Gateway, a bucket
// on a real S3-compatible server behind a proxy on loopback. Every request
// it answers is recorded, with its method, object key, Range header and
// body sizes, so that tests can assert how much a command read.
//
// Like a MinIO server it is reached at an endpoint URL with path-style
// addressing (http://127.0.0.1:port/bucket/key), and it accepts only
// requests signed with its own access key: a request signed with any other
// credentials (say, ones the AWS SDK found in the environment) is refused
// with 403, so a test passing proves the s3.* properties reached the file IO.
type S3 struct {
	// URL is the endpoint, http://127.0.0.1:port.
	URL string
	// Bucket is the bucket created at start.
	Bucket string
	// Region is the region clients sign requests for.
	Region string
	// AccessKeyID and SecretAccessKey are the static credentials the
	// server accepts.
	AccessKeyID, SecretAccessKey string

	store objectStore // what Put, Objects and Backdate reach, beside HTTP
	// checkKey makes the handler refuse requests not signed with
	// AccessKeyID, as a real server would: the fake checks no signatures.
	// In front of a real server, that server refuses them itself.
	checkKey bool
	srv      *httptest.Server
	delay    atomic.Int64 // a time.Duration each request waits; see SetDelay
	fault    atomic.Pointer[faultRule]
	stop     chan struct{} // closed by Close: hung requests end

	mu       sync.Mutex
	done     *sync.Cond // signalled under mu when a request completes
	inFlight int
	requests []S3Request
}

// S3Request is one request the server answered.
type S3Request struct {
	// Method is the HTTP method: GET, HEAD, PUT, POST or DELETE.
	Method string
	// Key is the object key, "" for a bucket request such as a listing.
	Key string
	// Query is the raw query string (list-type=2&prefix=..., uploads, ...).
	Query string
	// Range is the request's Range header, "" for none.
	Range string
	// AccessKeyID is the access key the request was signed with (the
	// Credential of its SigV4 Authorization header), "" for an unsigned
	// request: whose credentials a client read with.
	AccessKeyID string
	// Status is the response status code, 0 for a request held unanswered
	// (FaultHang).
	Status int
	// BytesIn is the size of the request body the server read.
	BytesIn int64
	// BytesOut is the size of the response body the server wrote: all of
	// it, or for a response the client abandoned, what the server wrote
	// before noticing (which depends on socket buffers).
	BytesOut int64
}

// IsRangeGet reports whether r is a GET of part of an object.
func (r S3Request) IsRangeGet() bool {
	return r.Method == http.MethodGet && r.Key != "" && r.Range != ""
}

// String spells r the way failing tests print it.
func (r S3Request) String() string {
	s := r.Method + " " + r.Key
	if r.Query != "" {
		s += "?" + r.Query
	}
	if r.Range != "" {
		s += " Range:" + r.Range
	}
	return fmt.Sprintf("%s -> %d (%d bytes in, %d out)", s, r.Status, r.BytesIn, r.BytesOut)
}

// The credentials and region the server accepts. Fixed, so that tests are
// deterministic; they grant nothing anywhere else.
const (
	s3TestBucket    = "icebloom-test"
	s3TestRegion    = "us-east-1"
	s3TestAccessKey = "icebloom-test-key"
	s3TestSecret    = "icebloom-test-secret"
)

// NewS3 starts an S3 server on loopback for the duration of the test, with
// bucket "icebloom-test" created, and makes the AWS SDK hermetic for the
// test: it sets AWS_EC2_METADATA_DISABLED=true (no instance metadata
// lookups), points the shared config and credentials files at files that
// do not exist, clears AWS_PROFILE and the endpoint variables
// (AWS_S3_ENDPOINT, which iceberg-go reads, and the SDK's
// AWS_ENDPOINT_URL*), and sets static decoy credentials in
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which the server refuses.
// Because it calls t.Setenv, a test using it cannot be parallel.
func NewS3(t testing.TB) *S3 {
	t.Helper()
	hermeticAWS(t)
	s, err := StartS3()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// hermeticAWS makes the AWS SDK hermetic for the test, as NewS3 says.
func hermeticAWS(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-aws-credentials"),
		"AWS_PROFILE":                 "",
		"AWS_S3_ENDPOINT":             "",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_ACCESS_KEY_ID":           "env-decoy-key",
		"AWS_SECRET_ACCESS_KEY":       "env-decoy-secret",
		"AWS_SESSION_TOKEN":           "",
	} {
		t.Setenv(k, v)
	}
}

// StartS3 starts an S3 server on loopback, as NewS3 does, for programs
// outside tests (the bench command): it leaves the environment alone, so
// the caller must reach it with Properties alone, and it runs until Close.
func StartS3() (*S3, error) {
	clock := &offsetClock{}
	backend := s3mem.New(s3mem.WithTimeSource(clock))
	if err := backend.CreateBucket(s3TestBucket); err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", s3TestBucket, err)
	}
	s := &S3{
		Bucket:          s3TestBucket,
		Region:          s3TestRegion,
		AccessKeyID:     s3TestAccessKey,
		SecretAccessKey: s3TestSecret,
		store:           &fakeStore{backend: backend, bucket: s3TestBucket, clock: clock},
		checkKey:        true,
	}
	s.serve(gofakes3.New(backend).Server())
	return s, nil
}

// serve starts the recording HTTP server in front of next and sets URL.
func (s *S3) serve(next http.Handler) {
	s.done = sync.NewCond(&s.mu)
	s.stop = make(chan struct{})
	s.srv = httptest.NewServer(s.handler(next))
	s.URL = s.srv.URL
}

// Close stops the server StartS3 started, ending requests held by
// FaultHang first.
func (s *S3) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.srv.Close()
}

// Fault is what the server does instead of answering a request (SetFault),
// as a failing object store would.
type Fault int

// The faults SetFault injects.
const (
	// NoFault answers as usual.
	NoFault Fault = iota
	// FaultHang accepts the request and does not answer: the request is
	// held until the client gives up or the server closes (it is then
	// recorded with status 0), or until the fault is changed (it is then
	// answered, late).
	FaultHang
	// FaultSlowDown answers 503 SlowDown, S3's answer to a client it
	// throttles.
	FaultSlowDown
	// FaultDenied answers 403 AccessDenied, S3's answer to credentials
	// that may not read the object.
	FaultDenied
)

// faultRule is a fault and the object keys it applies to.
type faultRule struct {
	fault Fault
	on    func(key string) bool
	ended chan struct{} // closed when the rule is replaced
}

// SetFault makes the server answer every request whose object key on
// accepts (on nil: every request, bucket requests included) with fault,
// from now on; SetFault(NoFault, nil) answers as usual again. A closed
// port needs no fault: point the client at an address nothing listens on.
//
// Requests a FaultHang holds are let go when the fault is changed, so that
// a test that ends the fault before closing what waits on them does not
// wait for ever.
func (s *S3) SetFault(fault Fault, on func(key string) bool) {
	var rule *faultRule
	if fault != NoFault {
		rule = &faultRule{fault: fault, on: on, ended: make(chan struct{})}
	}
	if old := s.fault.Swap(rule); old != nil {
		close(old.ended)
	}
}

// injected returns the rule whose fault a request for key gets, nil for
// none.
func (s *S3) injected(key string) *faultRule {
	rule := s.fault.Load()
	if rule == nil || rule.on != nil && !rule.on(key) {
		return nil
	}
	return rule
}

// SetDelay makes the server wait d before answering each request from now
// on, as the round trip to a remote object store would: requests a client
// sends one after another then add up, and concurrent ones overlap. Zero
// answers at once.
func (s *S3) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// PutObject writes an object straight into the backend, bypassing HTTP, as
// Put does, for programs outside tests.
func (s *S3) PutObject(key string, data []byte) error {
	if err := s.store.put(key, data); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Properties are the catalog properties, key=value as catalog.Options and
// --property take them, that reach the server: its endpoint, region and
// credentials. They leave s3.force-virtual-addressing unset: iceberg-go
// addresses buckets path-style whenever an endpoint is given, which is what
// MinIO-like servers need.
func (s *S3) Properties() []string {
	return []string{
		icebergio.S3EndpointURL + "=" + s.URL,
		icebergio.S3Region + "=" + s.Region,
		icebergio.S3AccessKeyID + "=" + s.AccessKeyID,
		icebergio.S3SecretAccessKey + "=" + s.SecretAccessKey,
	}
}

// PropertyFlags are Properties as icebloom's command line takes them:
// --property key=value, repeated.
func (s *S3) PropertyFlags() []string {
	var flags []string
	for _, kv := range s.Properties() {
		flags = append(flags, "--property", kv)
	}
	return flags
}

// Location is the s3:// URI of key in the bucket.
func (s *S3) Location(key string) string { return "s3://" + s.Bucket + "/" + key }

// Key is the object key of an s3:// location in the bucket, and whether it
// is one.
func (s *S3) Key(location string) (string, bool) {
	return strings.CutPrefix(location, "s3://"+s.Bucket+"/")
}

// Backdate makes objects written from now on appear written d ago (their
// Last-Modified time), so that tests exercise grace periods without
// waiting. It does not change objects already written. On the fake it
// holds for every write; on a gateway (NewS3Gateway), for those of Put
// only, whose files it backdates in the directory the gateway serves.
func (s *S3) Backdate(d time.Duration) { s.store.backdate(d) }

// Put writes an object straight into the backend, bypassing the recording
// server: it is not recorded as a request.
func (s *S3) Put(t testing.TB, key string, data []byte) {
	t.Helper()
	if err := s.PutObject(key, data); err != nil {
		t.Fatal(err)
	}
}

// Objects returns the keys of the bucket's objects under prefix with their
// sizes, read straight from the backend (not recorded as requests).
func (s *S3) Objects(t testing.TB, prefix string) map[string]int64 {
	t.Helper()
	objs, err := s.store.objects(prefix)
	if err != nil {
		t.Fatalf("list %s: %v", prefix, err)
	}
	return objs
}

// Requests returns the requests answered since the server started or since
// the last Reset, in the order they completed. It first waits for the
// requests still being answered: a client that closes a response early (as
// iceberg-go does with the whole-object GET of its Open) returns before the
// server has noticed, and that request belongs to what the client just did.
func (s *S3) Requests() []S3Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	return slices.Clone(s.requests)
}

// Reset forgets the requests recorded so far, after waiting for those still
// being answered, as Requests does.
func (s *S3) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	s.requests = nil
}

// settle waits, with s.mu held, until no request is being answered. A
// handler ends once its response is written or the client has gone away,
// so the wait is short and bounded.
func (s *S3) settle() {
	for s.inFlight > 0 {
		s.done.Wait()
	}
}

// handler records each request next's answers, after refusing those that
// are not path-style or (with checkKey) not signed with the server's
// access key.
func (s *S3) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.inFlight++
		s.mu.Unlock()
		body := &countingReader{r: r.Body}
		r.Body = body
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		key := ""
		if p := strings.TrimPrefix(r.URL.Path, "/"); p != "" {
			bucket, k, _ := strings.Cut(p, "/")
			if bucket == s.Bucket {
				key = k
			}
		}
		// Recorded in a deferred call: a reverse proxy in front of a real
		// server (NewS3Gateway) aborts a response whose client went away by
		// panicking with http.ErrAbortHandler, and a request left counted as
		// in flight would make settle wait for ever.
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inFlight--
			s.done.Broadcast()
			s.requests = append(s.requests, S3Request{
				Method:      r.Method,
				Key:         key,
				Query:       r.URL.RawQuery,
				Range:       r.Header.Get("Range"),
				AccessKeyID: signedBy(r),
				Status:      cw.status,
				BytesIn:     body.n.Load(),
				BytesOut:    cw.n,
			})
		}()
		switch {
		case r.Host != strings.TrimPrefix(s.URL, "http://"):
			// Virtual-hosted style would name the bucket in the host; over
			// loopback it would not even resolve, but say so if it came.
			s3Error(cw, http.StatusBadRequest, "InvalidRequest", "virtual-hosted-style request to "+r.Host+": this server is path-style only")
		case s.checkKey && !strings.Contains(r.Header.Get("Authorization"), "Credential="+s.AccessKeyID+"/"):
			s3Error(cw, http.StatusForbidden, "InvalidAccessKeyId", "request not signed with access key "+s.AccessKeyID)
		default:
			if d := time.Duration(s.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			rule := s.injected(key)
			fault := NoFault
			if rule != nil {
				fault = rule.fault
			}
			switch fault {
			case FaultHang:
				select {
				case <-r.Context().Done():
					cw.status = 0
				case <-rule.ended:
					next.ServeHTTP(cw, r)
				case <-s.stop:
					cw.status = 0
				}
			case FaultSlowDown:
				s3Error(cw, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
			case FaultDenied:
				s3Error(cw, http.StatusForbidden, "AccessDenied", "Access Denied")
			default:
				next.ServeHTTP(cw, r)
			}
		}
	})
}

// signedBy is the access key id of a SigV4-signed request
// ("AWS4-HMAC-SHA256 Credential=KEY/date/region/s3/aws4_request, ...").
func signedBy(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(cred, "/")
	return key
}

// s3Error writes an S3 error response.
func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// countingWriter counts the response body bytes written and keeps the
// status code. One request's handler writes from one goroutine, so the
// count needs no synchronization; Requests reads it after the handler
// returned, under S3.mu.
type countingWriter struct {
	http.ResponseWriter
	status  int
	n       int64
	written bool
}

// WriteHeader passes on the first status only: gofakes3 writes an error
// status after a body it failed to finish (the client went away), which
// net/http would log as a superfluous WriteHeader call.
func (w *countingWriter) WriteHeader(code int) {
	if w.written {
		return
	}
	w.status, w.written = code, true
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.written = true
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// countingReader counts the request body bytes read. The HTTP server may
// read the body from another goroutine than the handler's (to drain it), so
// the count is atomic.
type countingReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

// objectStore is what S3 reaches beside its recording server: the fake's
// in-memory backend, or a gateway at its own endpoint.
type objectStore interface {
	// put writes an object, backdated as backdate last said.
	put(key string, data []byte) error
	// objects lists the objects under prefix with their sizes.
	objects(prefix string) (map[string]int64, error)
	// backdate makes objects written from now on appear written d ago.
	backdate(d time.Duration)
}

// fakeStore is the fake's in-memory backend.
type fakeStore struct {
	backend *s3mem.Backend
	bucket  string
	clock   *offsetClock
}

func (f *fakeStore) put(key string, data []byte) error {
	_, err := f.backend.PutObject(f.bucket, key, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil)
	return err
}

func (f *fakeStore) objects(prefix string) (map[string]int64, error) {
	p := gofakes3.NewPrefix(&prefix, nil)
	objs := map[string]int64{}
	page := gofakes3.ListBucketPage{}
	for {
		list, err := f.backend.ListBucket(f.bucket, &p, page)
		if err != nil {
			return nil, err
		}
		for _, c := range list.Contents {
			objs[c.Key] = c.Size
		}
		if !list.IsTruncated {
			return objs, nil
		}
		page.Marker = list.NextMarker
	}
}

func (f *fakeStore) backdate(d time.Duration) { f.clock.offset.Store(int64(d)) }

// offsetClock is the backend's clock: the time now, minus an offset that
// Backdate sets.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time {
	return time.Now().UTC().Add(-time.Duration(c.offset.Load()))
}

func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
