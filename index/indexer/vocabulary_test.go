package indexer_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/icebloom/icebloom/index/indexer"
	"github.com/icebloom/icebloom/index/segment"
)

// warnings parses the JSON records logged into b and returns the warnings
// with the message msg, failing on any record that says statistics_file.
func warnings(t *testing.T, b *bytes.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		if _, ok := r["statistics_file"]; ok {
			t.Errorf("a record says statistics_file, not statistics_path: %s", line)
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestWarningsSayStatisticsPath: the warnings the indexer logs about an
// index file name it statistics_path, as the JSON outputs, the CLI's
// records and Iceberg's statistics-path do (before, statistics_file).
func TestWarningsSayStatisticsPath(t *testing.T) {
	// A compaction leaving a broken group out.
	fx := newCorruptionFixture(t)
	tg := fx.target(t, 1)
	tg.editFile(t, func(b []byte) []byte {
		b[tg.group.RunOffset(tg.run)+3] ^= 0x20
		return b
	})
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	if _, err := indexer.Compact(ctx, fx.cat, fx.ident, indexer.CompactOptions{Logger: log}); err != nil {
		t.Fatal(err)
	}
	w := warnings(t, &logged, "index group left out of the compaction: its files will be indexed again")
	if len(w) != 1 || w[0]["statistics_path"] != tg.sf.StatisticsPath {
		t.Errorf("compaction's warnings %v; want one naming statistics_path %s", w, tg.sf.StatisticsPath)
	}

	// A sync replacing the current snapshot's broken index file.
	cat, tbl, _ := eventsTable(t, 2, 100, nil)
	opts := indexer.Options{Columns: []string{"id"}}
	if _, err := indexer.Build(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	tbl, _ = cat.LoadTable(ctx, tbl.Identifier())
	sf := statisticsFiles(tbl)[0]
	off, _, _ := segment.DirectoryPlace(sf)
	local := strings.TrimPrefix(sf.StatisticsPath, "file://")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	b[off+10] ^= 0xff
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logged.Reset()
	opts.Logger = log
	if _, err := indexer.Sync(ctx, cat, tbl.Identifier(), opts); err != nil {
		t.Fatal(err)
	}
	w = warnings(t, &logged, "index file cannot be read: replaced without its filters")
	if len(w) != 1 || w[0]["statistics_path"] != sf.StatisticsPath {
		t.Errorf("sync's warnings %v; want one naming statistics_path %s", w, sf.StatisticsPath)
	}
}
