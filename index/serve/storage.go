package serve

import (
	"context"
	"errors"
	iofs "io/fs"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/table"
	"gocloud.dev/gcerrors"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/index/serve/planning"
)

// DefaultStorageTimeout bounds each request serve sends to the tables'
// storage, and each table load, when Options.StorageTimeout is 0: an
// object store answers a GET in milliseconds when well, and a store that
// accepted a request and went silent would otherwise hold the caller for
// the plan's whole timeout (or, loading a table in catalog mode, for ever).
const DefaultStorageTimeout = 30 * time.Second

// storageRetryAfter is the Retry-After of a 503 for storage that throttles
// or does not answer: longer than a busy server's 1 s, since the storage
// client already retried (the AWS SDK tries three times).
const storageRetryAfter = "5"

// storageKind is what a failure of the tables' storage was, as the metric
// icebloom_serve_storage_errors_total labels it.
type storageKind string

const (
	storageThrottled   storageKind = "throttled"   // 429, 503 SlowDown and the like
	storageUnavailable storageKind = "unavailable" // refused, reset, no such host, 5xx
	storageTimeout     storageKind = "timeout"     // no answer within --storage-timeout
	storageDenied      storageKind = "denied"      // 401, 403: credentials refused
	storageMissing     storageKind = "missing"     // 404: a file the table names is gone
	storageOther       storageKind = "error"       // anything else (no region, say)
)

// operationError is the AWS SDK's error of one service operation
// (smithy.OperationError), matched by its methods.
type operationError interface {
	Service() string
	Operation() string
}

// apiError is an error answer of a service (smithy.APIError): S3's error
// code, such as SlowDown or AccessDenied.
type apiError interface{ ErrorCode() string }

// httpStatusError is an HTTP error answer of a service
// (smithy-go's transport/http.ResponseError).
type httpStatusError interface{ HTTPStatusCode() int }

// classifyStorage reports whether err is a failure to read the tables'
// storage, and of which kind. A storage failure carries the file it was
// reading (*fs.PathError, as iceberg-go's and icebloom's file IO report
// one), an operation of the AWS SDK's S3 client, or a bound icebloom set
// on storage (*catalog.TimeoutError); the catalog's own failures (its
// database, Glue's API) carry none of them.
func classifyStorage(err error) (storageKind, bool) {
	var pe *iofs.PathError
	var op operationError
	var te *catalog.TimeoutError
	if !errors.As(err, &pe) && !(errors.As(err, &op) && op.Service() == "S3") && !errors.As(err, &te) {
		return "", false
	}
	// The store's own answer first: a throttled store that the bound cut
	// short while the client backed off is throttled, not silent.
	var api apiError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests",
			"TooManyRequestsException", "ServiceUnavailable", "RequestThrottled":
			return storageThrottled, true
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
			"TokenRefreshRequired", "AllAccessDisabled":
			return storageDenied, true
		case "NoSuchKey", "NoSuchBucket", "NotFound":
			return storageMissing, true
		}
	}
	var hs httpStatusError
	if errors.As(err, &hs) {
		switch code := hs.HTTPStatusCode(); {
		case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
			return storageThrottled, true
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return storageDenied, true
		case code == http.StatusNotFound:
			return storageMissing, true
		case code >= 500:
			return storageUnavailable, true
		}
	}
	if te != nil || errors.Is(err, context.DeadlineExceeded) {
		return storageTimeout, true
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return storageDenied, true
	case gcerrors.NotFound:
		return storageMissing, true
	case gcerrors.ResourceExhausted:
		return storageThrottled, true
	}
	var netErr net.Error
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) || errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return storageUnavailable, true
	}
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return storageMissing, true
	case errors.Is(err, iofs.ErrPermission):
		return storageDenied, true
	}
	return storageOther, true
}

// storageAnswer is the status, REST error type and message a client gets
// for a storage failure of kind: throttled, unreachable or silent storage
// is the spec's 503 ServiceUnavailable (with Retry-After), the rest a 500.
// The message names no endpoint, bucket or object key: those are the
// operator's to read in the log.
func storageAnswer(kind storageKind, err error) (status int, typ, msg string) {
	const see = " (the server's log has the details)"
	switch kind {
	case storageThrottled:
		return http.StatusServiceUnavailable, "ServiceUnavailableException", "the table's storage is throttling this server's requests; retry later"
	case storageUnavailable:
		return http.StatusServiceUnavailable, "ServiceUnavailableException", "the table's storage did not answer; retry later"
	case storageTimeout:
		within := ""
		var te *catalog.TimeoutError
		if errors.As(err, &te) {
			within = " within " + te.After.String()
		}
		return http.StatusServiceUnavailable, "ServiceUnavailableException", "the table's storage did not answer" + within + "; retry later"
	case storageDenied:
		return http.StatusInternalServerError, "ServerErrorException", "the table's storage refused this server's credentials" + see
	case storageMissing:
		return http.StatusInternalServerError, "ServerErrorException", "a file of the table is missing from its storage" + see
	}
	return http.StatusInternalServerError, "ServerErrorException", "reading the table's storage failed" + see
}

// storageFailed counts and logs a storage failure of a request and returns
// what the client gets (storageAnswer).
func (s *Server) storageFailed(kind storageKind, err error) (status int, typ, msg string) {
	s.metrics.storageError(kind, "request")
	status, typ, msg = storageAnswer(kind, err)
	level := s.log.Error
	if status == http.StatusServiceUnavailable {
		level = s.log.Warn
	}
	level("storage failed", "kind", string(kind), "status", status, "err", err)
	return status, typ, msg
}

// writeStorageError answers a request that failed on storage.
func (s *Server) writeStorageError(w http.ResponseWriter, kind storageKind, err error) {
	status, typ, msg := s.storageFailed(kind, err)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", storageRetryAfter)
	}
	writeError(w, status, typ, msg)
}

// boundLoad bounds a table load by the storage timeout: the load's error,
// when the bound ended it while the caller's context was still live, is a
// *catalog.TimeoutError.
func (s *Server) boundLoad(ctx context.Context, ident table.Identifier, load func(context.Context) (*planning.Loaded, error)) (*planning.Loaded, error) {
	bounded, cancel := context.WithTimeout(ctx, s.o.StorageTimeout)
	defer cancel()
	loaded, err := load(bounded)
	if err != nil && errors.Is(bounded.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = &catalog.TimeoutError{What: "load table " + strings.Join(ident, "."), After: s.o.StorageTimeout, Err: err}
	}
	return loaded, err
}

// maxProbes is how many tables /readyz reads the storage of.
const maxProbes = 4

// probeTimeout bounds /readyz's reads of storage, below the storage
// timeout: an orchestrator's probe gives up after a few seconds.
const probeTimeout = 3 * time.Second

// storageProbes are the tables whose storage /readyz reads: those served
// last, and, in catalog mode before any was, the first the catalog lists.
type storageProbes struct {
	mu      sync.Mutex    // guards targets
	targets []probeTarget // the most recent first
	// probing is held while probing and guards the last answer, kept
	// readinessTTL; requests noting their tables never wait for it.
	probing sync.Mutex
	at      time.Time
	ok      bool
}

// probeTarget reads a table's storage as serving it does.
type probeTarget struct {
	table string
	probe func(ctx context.Context) error
}

// noteTable makes the table a request loaded (loaded, or failed with err)
// one /readyz probes: in catalog mode any table the catalog has, probed by
// loading it and reading its metadata file, so that a table whose load
// fails on storage keeps /readyz not ready until it loads; in proxy mode a
// table read with serve's own storage configuration (not with what the
// upstream vended to one caller), probed by reading its metadata file.
func (s *Server) noteTable(ident table.Identifier, loaded *planning.Loaded, err error) {
	var probe func(context.Context) error
	switch {
	case s.o.Catalog != nil:
		if kind, isStorage := classifyStorage(err); err != nil && (!isStorage || kind == storageMissing) {
			// No such table, a bad name, the catalog's own failure, a
			// table whose metadata file is gone: nothing of storage's
			// health.
			return
		}
		probe = s.catalogProbe(ident)
	case err == nil && loaded.Access == "" && loaded.Table.MetadataLocation() != "":
		probe = metadataProbe(loaded.Table)
	default:
		return
	}
	name := strings.Join(ident, ".")
	s.probes.mu.Lock()
	defer s.probes.mu.Unlock()
	s.probes.targets = slices.DeleteFunc(s.probes.targets, func(p probeTarget) bool { return p.table == name })
	s.probes.targets = slices.Insert(s.probes.targets, 0, probeTarget{name, probe})
	if len(s.probes.targets) > maxProbes {
		s.probes.targets = s.probes.targets[:maxProbes]
	}
}

// catalogProbe loads a table of the catalog and reads its metadata file.
func (s *Server) catalogProbe(ident table.Identifier) func(context.Context) error {
	return func(ctx context.Context) error {
		loaded, err := s.boundLoad(ctx, ident, func(ctx context.Context) (*planning.Loaded, error) {
			tbl, err := catalog.LoadTable(ctx, s.o.Catalog, ident)
			if err != nil {
				return nil, err
			}
			return &planning.Loaded{Table: tbl}, nil
		})
		if err != nil {
			return err
		}
		return metadataProbe(loaded.Table)(ctx)
	}
}

// metadataProbe reads the size of a table's metadata file with the
// table's file IO: one HEAD on object storage. A file gone since (expired
// metadata) is still an answer of the storage.
func metadataProbe(tbl *table.Table) func(context.Context) error {
	return func(ctx context.Context) error {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return err
		}
		f, err := fsys.Open(tbl.MetadataLocation())
		if err == nil {
			_, err = f.Stat()
			f.Close()
		}
		if errors.Is(err, iofs.ErrNotExist) {
			return nil
		}
		return err
	}
}

// storageReady reports whether the tables' storage answers: each table of
// storageProbes read within probeTimeout without a storage failure other
// than a missing file. The
// answer is kept readinessTTL, so /readyz polled often reads storage at
// most once in that time.
func (s *Server) storageReady(ctx context.Context) bool {
	s.probes.probing.Lock()
	defer s.probes.probing.Unlock()
	if time.Since(s.probes.at) < readinessTTL {
		return s.probes.ok
	}
	s.probes.mu.Lock()
	targets := slices.Clone(s.probes.targets)
	s.probes.mu.Unlock()
	if len(targets) == 0 && s.o.Catalog != nil {
		if ident, ok := s.firstTable(ctx); ok {
			targets = []probeTarget{{strings.Join(ident, "."), s.catalogProbe(ident)}}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, min(probeTimeout, s.o.StorageTimeout))
	defer cancel()
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = t.probe(ctx) })
	}
	wg.Wait()
	ok := true
	for i, err := range errs {
		kind, isStorage := classifyStorage(err)
		if err == nil || !isStorage || kind == storageMissing {
			// The storage answered; a table gone or broken since is no
			// reason to take the server out of service.
			continue
		}
		ok = false
		s.metrics.storageError(kind, "readyz")
		s.log.Warn("readiness: the storage of a table failed", "table", targets[i].table, "kind", string(kind), "err", err)
	}
	s.probes.at, s.probes.ok = time.Now(), ok
	return ok
}

// firstTable is a table of the catalog to probe before any was served:
// the first listed in the first namespaces.
func (s *Server) firstTable(ctx context.Context) (table.Identifier, bool) {
	nss, err := s.o.Catalog.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, false
	}
	for _, ns := range nss[:min(len(nss), 8)] {
		for id, err := range s.o.Catalog.ListTables(ctx, ns) {
			if err != nil {
				break
			}
			return id, true
		}
	}
	return nil, false
}
