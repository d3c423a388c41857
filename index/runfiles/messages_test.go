package runfiles

import (
	"errors"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// unlistable is storage that can open and remove files but not list them.
type unlistable struct{}

func (unlistable) Open(string) (icebergio.File, error) { return nil, errors.New("no file") }
func (unlistable) Remove(string) error                 { return errors.New("no file") }

// TestWalkUnlistableStorageSaysWhere: storage that cannot list files is
// named by its location, not by a Go type (before: "the table's storage
// (runfiles.unlistable) cannot list files").
func TestWalkUnlistableStorageSaysWhere(t *testing.T) {
	const root = "s3://bucket/t/metadata/" + Dir
	_, err := Walk(unlistable{}, root, "")
	if err == nil || !strings.Contains(err.Error(), "storage at "+root+" cannot list files") || strings.Contains(err.Error(), "unlistable") {
		t.Fatalf("Walk on unlistable storage: %v; want the location named, no Go type", err)
	}
}
