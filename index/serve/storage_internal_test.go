package serve

import (
	"database/sql"
	"errors"
	"fmt"
	iofs "io/fs"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/icebloom/icebloom/catalog"
)

// fakeOperation is an AWS SDK operation's error (smithy.OperationError)
// of a service, wrapping the service's answer.
type fakeOperation struct {
	service string
	err     error
}

func (e *fakeOperation) Service() string   { return e.service }
func (e *fakeOperation) Operation() string { return "Op" }
func (e *fakeOperation) Error() string     { return "operation error " + e.service + ": " + e.err.Error() }
func (e *fakeOperation) Unwrap() error     { return e.err }

// fakeAPIError is a service's error answer (smithy.APIError).
type fakeAPIError struct{ code string }

func (e fakeAPIError) ErrorCode() string { return e.code }
func (e fakeAPIError) Error() string     { return "api error " + e.code }

// TestClassifyStorageOnlyStorage: the kinds of storage failures, and
// failures of the catalog itself (its database, a Glue API call, a table
// not found) are not storage failures: they keep their own answers.
func TestClassifyStorageOnlyStorage(t *testing.T) {
	path := func(err error) error { return &iofs.PathError{Op: "read", Path: "s3://b/k", Err: err} }
	for _, c := range []struct {
		name    string
		err     error
		kind    storageKind
		storage bool
	}{
		{"s3 slow down", &fakeOperation{"S3", fakeAPIError{"SlowDown"}}, storageThrottled, true},
		{"s3 access denied", path(&fakeOperation{"S3", fakeAPIError{"AccessDenied"}}), storageDenied, true},
		{"missing file", path(iofs.ErrNotExist), storageMissing, true},
		{"bound", &catalog.TimeoutError{What: "read s3://b/k", After: time.Second, Err: errors.New("deadline")}, storageTimeout, true},
		{"other", path(errors.New("an AWS region is required")), storageOther, true},
		{"glue", fmt.Errorf("load table: %w", &fakeOperation{"Glue", fakeAPIError{"AccessDenied"}}), "", false},
		{"database", fmt.Errorf("load table: %w", sql.ErrConnDone), "", false},
		{"no such table", fmt.Errorf("%w: db.t", icecatalog.ErrNoSuchTable), "", false},
	} {
		kind, storage := classifyStorage(c.err)
		if kind != c.kind || storage != c.storage {
			t.Errorf("%s: classifyStorage(%v) = %q, %v; want %q, %v", c.name, c.err, kind, storage, c.kind, c.storage)
		}
	}
}
