//go:build icebloom_bench

// Command icebloom-bench generates Iceberg tables and measures icebloom's
// index against its targets (docs/benchmarks.md): the build against the
// floor of reading the same columns, the index's size and false-positive
// rate, lookups and scans with and without the index; with --scale, index
// format v2 on tables of many tiny data files; with --s3-floor, reading
// ahead on object storage; with --serve, icebloom serve's scan planning
// (warm, cold, 16 clients at once, its memory) against a client's own, on
// the best case or (--serve-kind random) on tables of random keys with the
// server a process of its own; with --serve-abuse, icebloom serve as a process of its own under hostile
// clients (its RSS, ordinary plans' latency, the answers' statuses). It
// is a command of its own so that the shipped icebloom binary carries
// neither the bench nor the in-process S3 server and test catalog it runs
// on. It builds only with -tags icebloom_bench
// (go run -tags icebloom_bench ./cmd/icebloom-bench): the tag exports the
// switches of a run it measures with (indexer.Knobs) and filescan's reading
// for its floor, which are no public API of those packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alexflint/go-arg"
	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/internal/cli"
)

// Args are the command line: the output format, then the bench's flags.
type Args struct {
	Output string `arg:"--output" default:"text" help:"output format: text or json"`
	BenchCmd
}

func (Args) Description() string {
	return "icebloom-bench generates a table and measures icebloom's index against its targets, each as a ratio measured in the same run.\n"
}

// env is what a bench runs with: its output and the embedded catalog it
// opened, so it is tested without a process of its own.
type env struct {
	stdout, stderr io.Writer
	json           bool
	cat            icecatalog.Catalog // opened by embedded, closed by run
}

// embedded opens the embedded catalog (SQLite and a local warehouse) in
// dir, which run closes when the bench is done.
func (e *env) embedded(ctx context.Context, dir string) (icecatalog.Catalog, error) {
	cat, err := catalog.Open(ctx, catalog.Embedded(dir))
	if err != nil {
		return nil, err
	}
	e.cat = cat
	return cat, nil
}

// printJSON writes v as one indented JSON object.
func (e *env) printJSON(v any) error { return cli.PrintJSON(e.stdout, v) }

func main() {
	if cfg := os.Getenv(hostileWorkerEnv); cfg != "" { // the hostile clients of a bench --serve-abuse
		if err := hostileWorker(cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "icebloom-bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args and runs the bench, returning the exit code: 0 on
// success (whether or not every target was met: the output says), 1 when
// the bench failed, 2 for a bad command line.
func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	var args Args
	p, err := arg.NewParser(arg.Config{Program: "icebloom-bench", Out: stderr, Exit: func(int) {}}, &args)
	if err != nil {
		fmt.Fprintln(stderr, "icebloom-bench:", err)
		return 2
	}
	if err := p.Parse(bareServe(argv)); err != nil {
		if errors.Is(err, arg.ErrHelp) {
			p.WriteHelp(stdout)
			return 0
		}
		p.WriteUsage(stderr)
		fmt.Fprintln(stderr, "icebloom-bench:", err)
		return 2
	}
	output := strings.ToLower(args.Output)
	if err := args.checkValues(); err != nil || (output != "text" && output != "json") {
		if err == nil {
			err = fmt.Errorf("--output %q: want text or json", args.Output)
		}
		p.WriteUsage(stderr)
		for _, line := range strings.Split(err.Error(), "\n") { // one line per bad flag
			fmt.Fprintln(stderr, "icebloom-bench:", line)
		}
		return 2
	}
	e := &env{stdout: stdout, stderr: stderr, json: output == "json"}
	err = args.run(ctx, e)
	if c, ok := e.cat.(icecatalog.Closer); ok {
		c.Close()
	}
	if err != nil {
		fmt.Fprintln(stderr, "icebloom-bench:", err)
		return 1
	}
	return 0
}

// checkValues checks the numeric flags, which go-arg cannot: bad values
// are refused before anything runs, each error naming the flag and the
// value.
func (c *BenchCmd) checkValues() error {
	errs := []error{
		cli.CheckAtLeast("--files", c.Files, 1, "data file"), cli.CheckAtLeast("--rows", c.Rows, 1, "row"),
		cli.CheckAtLeast("--repeat", c.Repeat, 1, "run"), cli.CheckAtLeast("--probes", c.Probes, 1, "probe"),
		cli.CheckAtLeast("--prune-files", c.PruneFiles, 0, "data file"), cli.CheckAtLeast("--s3-files", c.S3Files, 0, "data file"),
		cli.CheckFPP(c.FPP),
	}
	if c.Scale != "" {
		if _, err := parseSizes("--scale", c.Scale); err != nil {
			errs = append(errs, err) // names the flag and the value
		}
	}
	if c.Serve != "" {
		if _, err := parseSizes("--serve", c.Serve); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, cli.CheckAtLeast("--serve-clients", c.ServeClients, 1, "client"),
			cli.CheckAtLeast("--serve-plans", c.ServePlans, 1, "plan"),
			cli.CheckAtLeast("--memory-budget-mib", int(c.MemoryBudgetMiB), 0, "MiB"))
		switch c.ServeKind {
		case serveKindBestCase:
		case serveKindRandom:
			errs = append(errs, c.checkRandomValues()...)
		default:
			errs = append(errs, fmt.Errorf("--serve-kind %q: want %s or %s", c.ServeKind, serveKindBestCase, serveKindRandom))
		}
	}
	if c.ServeAbuse {
		errs = append(errs, c.checkAbuseValues()...)
	}
	return errors.Join(errs...)
}
