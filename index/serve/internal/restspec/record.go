package restspec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
)

// Exchange is one request a wrapped handler served and its answer.
type Exchange struct {
	// Method and Target (escaped path and query) of the request.
	Method, Target string
	Status         int
	// Request and Response are the bodies.
	Request, Response []byte
}

// Recorder wraps a handler: it checks each answer with its Checker and
// hands the result to Report, and, when CaptureDir is set, writes each
// exchange to a file there.
type Recorder struct {
	// Checker checks the answers; NewRecorder gives a new one.
	Checker *Checker
	// Report gets each exchange of a spec route with the error Check
	// returned (nil when it passed); it runs on the handler's goroutine.
	Report func(Exchange, error)
	// CaptureDir, when not "", receives <seq>-<METHOD>-<path>.json per
	// exchange (see Capture); CaptureEnv names the variable tests take
	// it from.
	CaptureDir string
}

// CaptureEnv is the environment variable naming the directory where serve's
// tests write every exchange (for checkers outside Go, e.g. Java's parsers).
const CaptureEnv = "ICEBLOOM_REST_CAPTURE"

// NewRecorder returns a Recorder with a new Checker, reporting to report
// and capturing to the directory $ICEBLOOM_REST_CAPTURE names, if any.
func NewRecorder(report func(Exchange, error)) *Recorder {
	return &Recorder{Checker: NewChecker(), Report: report, CaptureDir: os.Getenv(CaptureEnv)}
}

// captureSeq numbers the captured exchanges of the process, so that the
// files of several servers and tests sort in the order they were served.
var captureSeq atomic.Int64

// Wrap returns a handler that serves with h and records each exchange.
//
// A plan, fetch-plan or tasks answer of a table whose load-table answer
// the Checker has not seen makes the recorder load the table through h
// first (with the request's Authorization only), so the answer's values
// can be typed; that exchange is checked and captured too, before the
// plan's.
func (rec *Recorder) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		cw := &capturingWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(cw, r)
		ex := Exchange{Method: r.Method, Target: r.URL.RequestURI(), Status: cw.status, Request: reqBody, Response: cw.body.Bytes()}
		if route, ok := RouteOf(ex.Method, ex.Target); ok && route.NeedsTable() && ex.Status == http.StatusOK && rec.Checker.Table(route.Table) == nil {
			rec.loadTable(h, r, route.Table)
		}
		rec.record(ex)
	})
}

// loadTable loads the table at tablePath through h, as a client would,
// and records that exchange.
func (rec *Recorder) loadTable(h http.Handler, orig *http.Request, tablePath string) {
	req := httptest.NewRequestWithContext(orig.Context(), http.MethodGet, tablePath, nil)
	req.Host = orig.Host
	if auth := orig.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	rec.record(Exchange{Method: http.MethodGet, Target: tablePath, Status: w.Code, Response: w.Body.Bytes()})
}

func (rec *Recorder) record(ex Exchange) {
	if rec.CaptureDir != "" {
		if err := Capture(rec.CaptureDir, captureSeq.Add(1), ex); err != nil && rec.Report != nil {
			rec.Report(ex, err)
		}
	}
	if _, ok := RouteOf(ex.Method, ex.Target); !ok {
		return
	}
	err := rec.Checker.Check(ex.Method, ex.Target, ex.Status, ex.Response)
	if rec.Report != nil {
		rec.Report(ex, err)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Capture writes an exchange to dir as <seq>-<METHOD>-<sanitized path>.json:
// {"method", "path" (escaped, without the query), "status", "request",
// "response"}, the bodies as JSON, null when empty or not JSON.
func Capture(dir string, seq int64, ex Exchange) error {
	path, _, _ := strings.Cut(ex.Target, "?")
	name := unsafeName.ReplaceAllString(path, "_")
	if len(name) > 120 {
		name = name[:120]
	}
	doc := struct {
		Method   string          `json:"method"`
		Path     string          `json:"path"`
		Status   int             `json:"status"`
		Request  json.RawMessage `json:"request"`
		Response json.RawMessage `json:"response"`
	}{ex.Method, path, ex.Status, jsonOrNull(ex.Request), jsonOrNull(ex.Response)}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%06d-%s-%s.json", seq, ex.Method, name)), b, 0o644)
}

func jsonOrNull(b []byte) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// capturingWriter keeps the status and a copy of the body it passes on.
type capturingWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *capturingWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *capturingWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Flush and Hijack pass on what the wrapped writer can do;
// Unwrap serves http.ResponseController.
func (w *capturingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *capturingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if hj, ok := w.ResponseWriter.(http.Hijacker); ok {
		return hj.Hijack()
	}
	return nil, nil, fmt.Errorf("restspec: the response writer cannot be hijacked")
}

func (w *capturingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
