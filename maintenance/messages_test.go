package maintenance

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

// TestGCUnlistableStorageSaysWhere: gc on storage that cannot list files
// names its location, not a Go type (before: "its storage
// (maintenance.unlistable) cannot list files").
func TestGCUnlistableStorageSaysWhere(t *testing.T) {
	const dir = "s3://bucket/t/metadata"
	_, err := listIndexFiles(unlistable{}, dir)
	if err == nil || !strings.Contains(err.Error(), "storage at "+dir+" cannot list files") || strings.Contains(err.Error(), "unlistable") {
		t.Fatalf("gc on unlistable storage: %v; want the location named, no Go type", err)
	}
}
