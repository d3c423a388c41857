package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/index/verify"
)

// VerifyCmd is `icebloom verify TABLE`: the index's checksums, coverage and
// a sample of filters re-derived from the data.
type VerifyCmd struct {
	Table  string `arg:"positional,required" help:"table identifier, ns.table"`
	Sample int    `arg:"--sample" help:"data files to re-read, checking that their filters hold every value [default: 0]"`
	Seed   uint64 `arg:"--seed" help:"seed choosing the sample [default: random, printed]"`
}

func (c *VerifyCmd) run(ctx context.Context, e *env) error {
	cat, ident, err := e.tableRef(ctx, c.Table)
	if err != nil {
		return err
	}
	rep, err := verify.Table(ctx, cat, ident, verify.Options{Sample: c.Sample, Seed: c.Seed})
	if err != nil {
		return err
	}
	if len(rep.Segments) == 0 && rep.OK() {
		// Nothing verified is no pass.
		return errors.New(noIndex(c.Table) + "; nothing to verify (exit 1, where inspect and compact-index exit 0: they have nothing to do, a check has nothing to vouch for)")
	}
	e.log.Info("index verified", "command", "verify", "table", c.Table, "segments", len(rep.Segments),
		"sampled", len(rep.Sampled), "problems", len(rep.Problems), "seed", rep.Seed)
	if e.json {
		if err := e.printJSON(rep); err != nil {
			return err
		}
	} else {
		printVerify(e, c.Table, rep)
	}
	if !rep.OK() {
		return fmt.Errorf("%s: the index has %d problems; the files they concern are kept by every lookup, the next `icebloom maintain %s` repairs them (and `icebloom rebuild %s` writes a new index)",
			c.Table, len(rep.Problems), c.Table, c.Table)
	}
	return nil
}

func printVerify(e *env, table string, rep *verify.Report) {
	e.printf("%s: snapshot %d, %s\n", table, rep.SnapshotID, plural(len(rep.Segments), "index file"))
	for _, s := range rep.Segments {
		state := "ok"
		if len(s.Problems) > 0 {
			state = plural(len(s.Problems), "problem")
		}
		e.printf("  %s (format v%d, %s, %s, %s checksummed): %s\n",
			s.Path, s.Format, plural(s.Groups, "group"), plural(s.Filters, "filter"), cli.BytesText(s.BytesVerified), state)
	}
	for _, c := range rep.Columns {
		e.printf("column %s (field %d): %s covered, %d not covered\n", c.Name, c.FieldID, plural(c.Covered, "live file"), c.Uncovered)
		for _, f := range c.UncoveredFiles {
			e.printf("  not covered: %s\n", f)
		}
	}
	var values int64
	for _, s := range rep.Sampled {
		values += s.Values
	}
	e.printf("%s re-read (seed %d): %s checked against their filters\n", plural(len(rep.Sampled), "data file"), rep.Seed, plural(values, "distinct value"))
	for _, p := range rep.Problems {
		e.printf("problem: %s\n", p)
	}
	if rep.OK() {
		e.printf("no problem found\n")
	}
}
