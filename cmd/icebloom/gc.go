package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/icebloom/icebloom/cmd/internal/cli"
	"github.com/icebloom/icebloom/maintenance"
)

// GCCmd is `icebloom gc TABLE`.
type GCCmd struct {
	Table     string `arg:"positional,required" help:"table identifier, ns.table"`
	OlderThan *gcAge `arg:"--older-than" placeholder:"DUR" help:"grace period: delete only files written, and last referenced, longer ago than this; a Go duration or days such as 3d; under 1h (0s: every unreferenced index file) needs --force [default: 3d]"`
	DryRun    bool   `arg:"--dry-run" help:"report what would be deleted, delete nothing"`
	Force     bool   `arg:"--force" help:"allow a grace period under 1h, which may delete a file a run in flight is about to commit (the run then removes its reference and fails)"`
}

// gcAge is the --older-than value: a Go duration, or days such as 3d.
type gcAge struct {
	d    time.Duration
	text string // as given, for errors
}

// grace returns the GC grace period the flag asks for: 0 (flag absent) is
// the default, and an explicit 0s is no grace at all.
func (a *gcAge) grace() time.Duration {
	switch {
	case a == nil:
		return 0
	case a.d == 0:
		return maintenance.NoGrace
	}
	return a.d
}

func (a *gcAge) UnmarshalText(b []byte) error {
	d, err := parseAge(string(b))
	if err != nil {
		return err
	}
	a.d, a.text = d, string(b)
	return nil
}

// parseAge parses a Go duration ("36h", "90m", "1h30m") or a number of days,
// optionally followed by a Go duration ("3d", "1.5d", "2d12h"). Negative
// ages are refused.
func parseAge(s string) (time.Duration, error) {
	bad := func(why string) error {
		return fmt.Errorf("%q is not an age: %s (want a Go duration such as 36h or 90m, or days such as 3d)", s, why)
	}
	text := strings.TrimSpace(s)
	if text == "" {
		return 0, bad("empty")
	}
	if strings.HasPrefix(text, "-") {
		return 0, bad("negative")
	}
	var days time.Duration
	if i := strings.IndexByte(text, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(text[:i], 64)
		if err != nil || i == 0 || strings.ContainsAny(text[:i], "eE+-_xXpP") || math.IsInf(n, 0) || math.IsNaN(n) {
			return 0, bad("bad number of days")
		}
		if n*24*float64(time.Hour) >= math.MaxInt64 {
			return 0, bad("too long")
		}
		days = time.Duration(n * 24 * float64(time.Hour))
		text = text[i+1:]
		if text == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, bad(strings.TrimPrefix(err.Error(), "time: "))
	}
	if d < 0 {
		return 0, bad("negative")
	}
	if d > math.MaxInt64-days {
		return 0, bad("too long")
	}
	return days + d, nil
}

func (c *GCCmd) run(ctx context.Context, e *env) error {
	cat, ident, err := e.tableRef(ctx, c.Table)
	if err != nil {
		return err
	}
	o := maintenance.GCOptions{DryRun: c.DryRun, Force: c.Force}
	o.OlderThan = c.OlderThan.grace()
	sum, err := maintenance.GC(ctx, cat, ident, o)
	if sum == nil {
		return err
	}
	logGCFailures(e.log, "gc", c.Table, sum)
	if e.json {
		if perr := e.printJSON(sum); err == nil {
			err = perr
		}
		return err
	}
	printGCSummary(e, c.Table, sum)
	return err
}

func printGCSummary(e *env, table string, sum *maintenance.GCSummary) {
	verb := "deleted"
	if sum.DryRun {
		verb = "would delete"
	}
	for _, p := range sum.Deleted {
		e.printf("%s %s\n", verb, p)
	}
	for _, p := range sum.Kept {
		e.printf("kept (inside the grace period) %s\n", p)
	}
	for _, f := range sum.Failed {
		e.printf("could not delete %s: %s\n", f.Path, f.Error)
	}
	e.printf("%s: %s, %d referenced, %d kept inside the grace period, %s %d (%s)\n",
		table, plural(sum.Scanned, "index file"), sum.Referenced, len(sum.Kept), verb, len(sum.Deleted), cli.BytesText(sum.BytesDeleted))
}
