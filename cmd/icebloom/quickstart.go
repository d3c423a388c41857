package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/icebloom/internal/quickstart"
	"github.com/icebloom/icebloom/cmd/icebloom/internal/rowformat"
	"github.com/icebloom/icebloom/index/indexer"
)

// QuickstartCmd is `icebloom quickstart`: the end-to-end demo on an
// embedded catalog (package quickstart does the work; this file its flags
// and output).
type QuickstartCmd struct {
	Dir   string `arg:"--dir" default:"warehouse" help:"directory of the demo's embedded catalog and warehouse"`
	Files int    `arg:"--files" default:"64" help:"data files to write"`
	Rows  int    `arg:"--rows" default:"10000" help:"rows per data file"`
}

// QuickstartOutput is the JSON output of quickstart.
type QuickstartOutput struct {
	Catalog string            `json:"catalog"`
	Table   string            `json:"table"`
	Build   *indexer.Summary  `json:"build"`
	Present quickstart.Lookup `json:"present"`
	Absent  quickstart.Lookup `json:"absent"`
}

func (c *QuickstartCmd) run(ctx context.Context, e *env) error {
	if c.Files < 1 || c.Rows < 1 {
		return fmt.Errorf("--files and --rows must be positive")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return err
	}
	given := e.options // the catalog flags, which a lookup of the demo table must not need
	e.options = catalog.Embedded(dir)
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	if !e.json {
		e.printf("writing %s of %s to demo.events in %s\n", plural(c.Files, "data file"), plural(c.Rows, "row"), dir)
	}
	needle, absent, err := quickstart.Create(ctx, cat, c.Files, c.Rows)
	if err != nil {
		return err
	}
	sum, err := indexer.Build(ctx, cat, quickstart.Table, indexer.Options{})
	if err != nil {
		return err
	}
	if !e.json {
		printBuildSummary(e, quickstart.TableName, sum)
	}
	out := QuickstartOutput{Catalog: filepath.Join(dir, "catalog.db"), Table: quickstart.TableName, Build: sum}
	if out.Present, err = quickstart.Look(ctx, cat, fmt.Sprintf("user_id = %d", needle)); err != nil {
		return err
	}
	if out.Absent, err = quickstart.Look(ctx, cat, fmt.Sprintf("user_id = %d", absent)); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(out)
	}
	for _, l := range []quickstart.Lookup{out.Present, out.Absent} {
		e.printf("\nlookup %s\n", l.Where)
		e.printf("  data files: %d in the table, %d after min/max statistics, %d after the index\n",
			l.FilesTotal, l.FilesAfterStats, l.Candidates)
		for _, line := range explain(l) {
			e.printf("  %s\n", line)
		}
		e.printf("  scan: %s in %.1f ms with the index, %.1f ms without (%.0fx)\n",
			plural(l.Rows, "row"), l.ScanMillis, l.NoIndexMillis, l.NoIndexMillis/max(l.ScanMillis, 0.001))
	}
	e.printf("\ntry it yourself:\n  %s\n", quickstart.TryCommand(c.Dir, given, out.Catalog, dir, out.Present.Where))
	serve, plan := quickstart.ServeCommands(c.Dir, given, out.Catalog, dir, needle)
	e.printf("\nsee the server prune for an engine: run the server, then plan through it from another shell;\n"+
		"the server logs each plan's data files in the table, after statistics and after the index:\n  %s\n  %s\n", serve, plan)
	return nil
}

// explain says what the files left after the index are — those that hold
// the value, and false positives against the number the FPP leads one to
// expect — and, when no file holds the value, why any remain:
//
//	of those, 1 holds the value and 2 are false positives (expected ≈ 1.99 at fpp 0.01 over the 199 indexed files without it)
func explain(l quickstart.Lookup) []string {
	holds := "none holds"
	if l.Holding > 0 {
		holds = plural(l.Holding, "holds", "hold")
	}
	fps := "none is a false positive"
	if l.FalsePositives > 0 {
		fps = plural(l.FalsePositives, "is a false positive", "are false positives")
	}
	expected := fmt.Sprintf("(expected ≈ %.2f at fpp %s over the %s without it)", l.ExpectedFalsePositives,
		rowformat.FloatText(l.FPP, 64), plural(l.FilesAfterStats-l.Holding-l.Unindexed, "indexed file"))
	var lines []string
	if l.Candidates == 0 {
		lines = append(lines, "no file holds the value, and no false positive remains "+expected)
	} else {
		lines = append(lines, fmt.Sprintf("of those, %s the value and %s %s", holds, fps, expected))
	}
	if l.Holding == 0 && l.FalsePositives > 0 {
		lines = append(lines, `files remain for a value no file holds because a bloom filter answers "maybe" for a value it lacks with probability fpp`)
	}
	if l.Unindexed > 0 {
		lines = append(lines, fmt.Sprintf("%s no filter covers, which the index keeps", plural(l.Unindexed, "other file")))
	}
	return lines
}
