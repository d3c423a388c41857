// Command icebloom builds, queries and maintains file-level bloom indexes of
// Apache Iceberg tables. Its global flags and config file are those of
// iceberg-go's iceberg command; with no catalog configured it uses an
// embedded SQLite catalog in ./warehouse.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/alexflint/go-arg"
	icecatalog "github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/io/gocloud" // s3://, gs://, azure and mem:// storage
	"github.com/apache/iceberg-go/table"

	"github.com/icebloom/icebloom/catalog"
	"github.com/icebloom/icebloom/cmd/internal/metricsfile"
)

// Args are the command line: global flags, then one command.
type Args struct {
	catalog.Options
	Output      string   `arg:"--output" default:"text" help:"output format: text or json"`
	LogLevel    logLevel `arg:"--log-level" default:"info" placeholder:"LEVEL" help:"log records to stderr from this level: debug, info, warn or error; text on a terminal, JSON lines otherwise"`
	MetricsFile string   `arg:"--metrics-file" placeholder:"PATH" help:"after build, sync, rebuild, compact-index and each maintain round, write Prometheus text metrics here (atomically, for node_exporter's textfile collector)"`
	Version     bool     `arg:"--version" help:"print icebloom's version and VCS revision, and exit"`

	Build        *BuildCmd        `arg:"subcommand:build" help:"index a snapshot of a table and commit the index"`
	Sync         *SyncCmd         `arg:"subcommand:sync" help:"index the live data files the index does not cover yet (after appends and compactions)"`
	CompactIndex *CompactIndexCmd `arg:"subcommand:compact-index" help:"merge the index's segments into one, dropping entries no retained snapshot needs"`
	Rebuild      *RebuildCmd      `arg:"subcommand:rebuild" help:"rebuild the whole index as one fresh segment"`
	Expire       *ExpireCmd       `arg:"subcommand:expire" help:"expire snapshots, folding their index segments into the current one first"`
	Maintain     *MaintainCmd     `arg:"subcommand:maintain" help:"sync, compact, expire and gc many tables, once or on a schedule"`
	Lookup       *LookupCmd       `arg:"subcommand:lookup" help:"list the data files that may hold rows matching a filter"`
	Scan         *ScanCmd         `arg:"subcommand:scan" help:"read the rows matching a filter, opening only candidate files"`
	Inspect      *InspectCmd      `arg:"subcommand:inspect" help:"show a table's index: statistics files, coverage, sizes"`
	Verify       *VerifyCmd       `arg:"subcommand:verify" help:"check every checksum of the index, its coverage, and a sample of filters against the data"`
	GC           *GCCmd           `arg:"subcommand:gc" help:"delete index files no table metadata references, after a grace period"`
	Quickstart   *QuickstartCmd   `arg:"subcommand:quickstart" help:"create a demo table in an embedded catalog, index it and query it"`
	Serve        *ServeCmd        `arg:"subcommand:serve" help:"serve an Iceberg REST catalog that plans scans with the index (proxy or read-only)"`
	VersionCmd   *VersionCmd      `arg:"subcommand:version" help:"print icebloom's version: module version and the VCS revision it was built from"`
	Completion   *CompletionCmd   `arg:"subcommand:completion" help:"print a bash or zsh script that completes icebloom's commands and flags"`
	List         *ListCmd         `arg:"subcommand:list" help:"list the tables of the catalog, or of a namespace, with their index: columns, coverage, segments, last sync"`
	Columns      *ColumnsCmd      `arg:"subcommand:columns" help:"show the columns a table's index holds and its properties enable; enable or disable columns in one commit"`
}

func (Args) Description() string {
	return "icebloom gives Apache Iceberg tables file-level bloom indexes, so point lookups open only the data files that may match.\n"
}

// env is what a command runs with: its output, logger, metrics and the way
// to reach the catalog, so commands are tested without a process of their
// own.
type env struct {
	stdin          io.Reader // where --where-file - reads
	stdout, stderr io.Writer
	// stdoutTTY: stdout is a terminal, where scan aligns its rows and
	// says how many there were.
	stdoutTTY bool
	json      bool
	options   catalog.Options
	cat       icecatalog.Catalog // opened on first use, closed by run
	// log takes the diagnostics; results go to stdout.
	log *slog.Logger
	// status is stderr when it is a terminal (progress bars are drawn on
	// it, log records written through it), else nil.
	status *statusLine
	// metrics collects what --metrics-file is to hold; nil without it.
	metrics *metricsfile.File
	now     func() time.Time
}

// catalog opens the catalog the options select, once per run.
func (e *env) catalog(ctx context.Context) (icecatalog.Catalog, error) {
	if e.cat == nil {
		cat, err := catalog.Open(ctx, e.options, catalog.WithLogger(e.log))
		if err != nil {
			return nil, err
		}
		e.cat = cat
	}
	return e.cat, nil
}

// tableRef parses the table name ns.table and opens the catalog.
func (e *env) tableRef(ctx context.Context, name string) (icecatalog.Catalog, table.Identifier, error) {
	ident, err := catalog.ParseIdentifier(name)
	if err != nil {
		return nil, nil, err
	}
	cat, err := e.catalog(ctx)
	return cat, ident, err
}

// table loads the table named ns.table.
func (e *env) table(ctx context.Context, name string) (*table.Table, error) {
	cat, ident, err := e.tableRef(ctx, name)
	if err != nil {
		return nil, err
	}
	tbl, err := catalog.LoadTable(ctx, cat, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", name, err)
	}
	return tbl, nil
}

// close releases the catalog (a SQL catalog holds a database handle).
func (e *env) close() {
	if c, ok := e.cat.(icecatalog.Closer); ok {
		c.Close()
	}
}

func main() {
	ctx, stop := signalContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalError is the cause of a context that a signal cancelled.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "stopped by " + e.sig.String() }

// signalContext is signal.NotifyContext for SIGINT and SIGTERM that
// records which signal came, as the context's cause (signalError): Ctrl-C
// exits 130 after the command stops. A second signal ends the process at
// once, as the default handling does.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			cancel(&signalError{sig})
			signal.Stop(sigs)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// exitInterrupted is the exit code after Ctrl-C: 128 + SIGINT, as shells
// report a process the signal ended.
const exitInterrupted = 130

// run parses args and runs the command, returning the exit code: 0 on
// success, 1 when the command failed, 2 for a bad command line, 130 after
// Ctrl-C (ctx cancelled by signalContext on SIGINT).
func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	width, tty := terminal(stderr)
	return runOn(ctx, argv, stdout, stderr, tty, width, time.Now)
}

// runOn is run with what it finds about its stderr given — whether it is a
// terminal, and how wide — and a clock, so tests can pretend.
func runOn(ctx context.Context, argv []string, stdout, stderr io.Writer, tty bool, width int, now func() time.Time) int {
	return runFrom(ctx, argv, os.Stdin, stdout, stderr, tty, width, now)
}

// runFrom is runOn with its standard input given too.
func runFrom(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, width int, now func() time.Time) int {
	var args Args
	p, err := arg.NewParser(arg.Config{Program: "icebloom", Out: stderr, Exit: func(int) {}}, &args)
	if err != nil {
		fmt.Fprintln(stderr, "icebloom:", err)
		return 2
	}
	// usage reports a bad command line, exit code 2: with the usage and
	// an "icebloom: …" line per problem on a terminal, else as JSON
	// records like every other message (the usage in a field).
	usage := func(withUsage bool, problems ...string) int {
		var text bytes.Buffer
		if withUsage {
			p.WriteUsageForSubcommand(&text, p.SubcommandNames()...)
		}
		if tty {
			stderr.Write(text.Bytes())
			for _, problem := range problems {
				// A problem's further lines (a filter and a caret under
				// it) are shown as they are.
				first, more, _ := strings.Cut(problem, "\n")
				fmt.Fprintln(stderr, "icebloom:", first)
				if more != "" {
					fmt.Fprintln(stderr, more)
				}
			}
			return 2
		}
		log := newLogger(stderr, slog.LevelInfo, false)
		command, _ := commandOf(p)
		for _, line := range problems {
			attrs := []any{"command", command, "error", line}
			if withUsage {
				attrs = append(attrs, "usage", strings.TrimSpace(text.String()))
			}
			log.Error("bad command line", attrs...)
		}
		return 2
	}
	if len(argv) > 0 && argv[0] == "help" {
		// icebloom help CMD is icebloom CMD --help.
		if len(argv) > 1 && subcommandHelp(argv[1]) == "" {
			return usage(false, fmt.Sprintf("help %s: no such command (icebloom help lists them)", argv[1]))
		}
		argv = append(slices.Clone(argv[1:]), "--help")
	}
	if err := p.Parse(argv); err != nil {
		if errors.Is(err, arg.ErrHelp) {
			writeHelp(stdout, p)
			return 0
		}
		return usage(true, parseProblem(err))
	}
	args.Options = preferSecretFlags(args.Options, secretFlags(argv))
	// Flags that depend on each other, and values the parser takes but no
	// command can use.
	if c, ok := p.Subcommand().(interface{ validate() error }); ok {
		if err := c.validate(); err != nil {
			return usage(true, err.Error())
		}
	}
	if err := checkFlags(p.Subcommand()); err != nil {
		return usage(true, strings.Split(err.Error(), "\n")...) // one line per bad flag
	}
	output := strings.ToLower(args.Output)
	if output != "text" && output != "json" {
		return usage(false, fmt.Sprintf("--output %q: want text or json", args.Output))
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, stdoutTTY: stdoutTerminal(stdout), json: output == "json", options: args.Options, now: now}
	// Every command works on existing tables; the ones that make a catalog
	// of their own (quickstart, bench) open it with catalog.Embedded.
	e.options.MustExist = true
	logOut := stderr
	if tty {
		e.status = &statusLine{w: stderr, width: width}
		logOut = e.status
	}
	e.log = newLogger(logOut, args.LogLevel.Level, tty)
	defer e.close()

	var cmd interface {
		run(ctx context.Context, e *env) error
	}
	switch {
	case args.Version || args.VersionCmd != nil:
		cmd = &VersionCmd{}
	case args.Build != nil:
		cmd = args.Build
	case args.Sync != nil:
		cmd = args.Sync
	case args.CompactIndex != nil:
		cmd = args.CompactIndex
	case args.Rebuild != nil:
		cmd = args.Rebuild
	case args.Expire != nil:
		cmd = args.Expire
	case args.Maintain != nil:
		cmd = args.Maintain
	case args.Lookup != nil:
		cmd = args.Lookup
	case args.Scan != nil:
		cmd = args.Scan
	case args.Inspect != nil:
		cmd = args.Inspect
	case args.Verify != nil:
		cmd = args.Verify
	case args.GC != nil:
		cmd = args.GC
	case args.Quickstart != nil:
		cmd = args.Quickstart
	case args.Serve != nil:
		cmd = args.Serve
	case args.Completion != nil:
		cmd = args.Completion
	case args.Columns != nil:
		cmd = args.Columns
	case args.List != nil:
		cmd = args.List
	default:
		if tty {
			p.WriteHelp(stderr)
		}
		return usage(false, "a command is required (icebloom help COMMAND says what each does)")
	}
	command, table := commandOf(p)
	if args.MetricsFile != "" && metricsCommands[command] {
		if err := checkMetricsFile(args.MetricsFile); err != nil {
			return usage(false, err.Error())
		}
		var err error
		if e.metrics, err = metricsfile.Open(args.MetricsFile); err != nil {
			e.log.Warn("previous metrics file ignored", "file", args.MetricsFile, "error", err)
		}
	}
	start := now()
	err = runSafely(ctx, cmd, e)
	if e.metrics != nil {
		// Also after a failure: the file then says so.
		if werr := e.metrics.Write(); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	var bad *usageError
	if errors.As(err, &bad) {
		return usage(false, bad.msg)
	}
	if sig := (*signalError)(nil); errors.As(context.Cause(ctx), &sig) && sig.sig == os.Interrupt {
		// Whatever the command made of its cancelled context.
		reportFailure(e, tty, command, table, now().Sub(start), errors.New("interrupted"))
		return exitInterrupted
	}
	if err != nil {
		reportFailure(e, tty, command, table, now().Sub(start), err)
		return 1
	}
	return 0
}

// flagValueError matches go-arg's error for a flag value its type does
// not parse: the flag, strconv's function, the value and strconv's reason.
var flagValueError = regexp.MustCompile(`^error processing (--[\w-]+): strconv\.Parse(Int|Uint|Float|Bool): parsing "(.*)": (invalid syntax|value out of range)$`)

// parseProblem words an error of the command line parser for a person:
// a value that does not parse names the flag and what it wants, not
// strconv ("--fpp "abc": not a number", not "error processing --fpp:
// strconv.ParseFloat: parsing "abc": invalid syntax").
func parseProblem(err error) string {
	msg := err.Error()
	m := flagValueError.FindStringSubmatch(msg)
	if m == nil {
		return strings.TrimPrefix(msg, "error processing ")
	}
	flag, kind, value, reason := m[1], m[2], m[3], m[4]
	want := map[string]string{"Int": "a whole number", "Uint": "a whole number of 0 or more", "Float": "a number", "Bool": "true or false"}[kind]
	if reason == "value out of range" {
		return fmt.Sprintf("%s %q: out of range, want %s that fits in 64 bits", flag, value, want)
	}
	return fmt.Sprintf("%s %q: not %s", flag, value, want)
}

// usageError is a bad command line found once the command runs, such as
// a --where that does not parse: reported as the parser's own problems
// are, with exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// secretFlags returns the catalog options argv gives by flag alone,
// without the ICEBLOOM_CATALOG_* variables: what tells a flag from its
// variable when both fill the same field. argv parsed with them already.
func secretFlags(argv []string) catalog.Options {
	var flagsOnly Args
	p, err := arg.NewParser(arg.Config{Program: "icebloom", Out: io.Discard, Exit: func(int) {}, IgnoreEnv: true}, &flagsOnly)
	if err != nil {
		return catalog.Options{}
	}
	_ = p.Parse(argv) // its errors were reported by the parse with the environment
	return flagsOnly.Options
}

// preferSecretFlags lets a REST credential or token given by flag, as a
// value or as a file, win over the variables of the same secret in either
// form: ICEBLOOM_CATALOG_TOKEN with --token-file, or
// ICEBLOOM_CATALOG_CREDENTIAL_FILE with --credential, reached catalog.Open
// as a value and a file both given, which it refuses. Both forms as flags,
// or both as variables, are still refused there.
func preferSecretFlags(o, flags catalog.Options) catalog.Options {
	if flags.Credential != "" || flags.CredentialFile != "" {
		o.Credential, o.CredentialFile = flags.Credential, flags.CredentialFile
	}
	if flags.Token != "" || flags.TokenFile != "" {
		o.Token, o.TokenFile = flags.Token, flags.TokenFile
	}
	return o
}

// metricsCommands are the commands that write --metrics-file.
var metricsCommands = map[string]bool{"build": true, "sync": true, "rebuild": true, "compact-index": true, "maintain": true}

// commandOf returns the name of the command the parser chose and the table
// it names, if any (the positional Table every single-table command has).
func commandOf(p *arg.Parser) (command, table string) {
	if names := p.SubcommandNames(); len(names) > 0 {
		command = names[0]
	}
	if v := reflect.ValueOf(p.Subcommand()); v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("Table"); f.IsValid() && f.Kind() == reflect.String {
			table = f.String()
		}
	}
	return command, table
}

// stdoutTerminal reports whether stdout is a terminal; tests pretend.
var stdoutTerminal = func(w io.Writer) bool {
	_, ok := terminal(w)
	return ok
}

// runSafely runs cmd, returning a panic on its goroutine as an error (with
// its stack at debug level), so that no input ends icebloom with a Go stack
// trace and exit code 2.
func runSafely(ctx context.Context, cmd interface {
	run(ctx context.Context, e *env) error
}, e *env) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Debug("panic", "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return cmd.run(ctx, e)
}
