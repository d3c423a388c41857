package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/icebloom/icebloom/cmd/internal/cli"
)

// Bad flag values are refused before anything runs, each error naming the
// flag and the value: a value that makes no sense is never replaced by a
// default in silence (--parallel 0 used to mean "number of CPUs", --every
// 0s a round after round without pause).

// checkFlags checks the numeric and duration flags of the command the
// parser chose, which go-arg cannot.
func checkFlags(cmd any) error {
	switch c := cmd.(type) {
	case *BuildCmd:
		return errors.Join(c.indexFlags.checkValues(), checkCompactAbove(c.CompactAbove))
	case *SyncCmd:
		return errors.Join(c.indexFlags.checkValues(), checkCompactAbove(c.CompactAbove), runLeaseError(c.RunLease))
	case *RebuildCmd:
		return c.indexFlags.checkValues()
	case *CompactIndexCmd:
		_, err := splitColumns("--drop-columns", c.DropColumns)
		return errors.Join(err, c.memoryFlag.checkValues())
	case *ExpireCmd:
		return errors.Join(cli.CheckAtLeast("--retain-last", c.RetainLast, 1, "snapshot"), c.memoryFlag.checkValues())
	case *MaintainCmd:
		var errs []error
		if c.Every != nil && c.Every.d <= 0 {
			errs = append(errs, fmt.Errorf("--every %s: want a pause between rounds, such as 15m", c.Every.text))
		}
		if c.Parallel != nil {
			errs = append(errs, cli.CheckAtLeast("--parallel", *c.Parallel, 1, "data file"))
		}
		if c.VerifySample != nil {
			errs = append(errs, cli.CheckAtLeast("--verify-sample", *c.VerifySample, 0, "data file"))
		}
		return errors.Join(append(errs, cli.CheckAtLeast("--retain-last", c.RetainLast, 1, "snapshot"), c.requestsFlag.checkValues(),
			c.memoryFlag.checkValues(), checkCompactAbove(c.CompactAbove))...)
	case *ScanCmd:
		if c.Limit != nil && *c.Limit < 0 {
			return fmt.Errorf("--limit %d: want 0 (every row) or more rows", *c.Limit)
		}
	case *ColumnsCmd:
		if c.FPP != nil {
			return cli.CheckFPP(*c.FPP)
		}
	case *VerifyCmd:
		return cli.CheckAtLeast("--sample", c.Sample, 0, "data file")
	case *QuickstartCmd:
		return errors.Join(cli.CheckAtLeast("--files", c.Files, 1, "data file"), cli.CheckAtLeast("--rows", c.Rows, 1, "row"))
	}
	return nil
}

// checkValues checks the flags of the indexing commands.
func (f indexFlags) checkValues() error {
	_, err := splitColumns("--columns", f.Columns)
	errs := []error{err}
	if f.FPP != nil {
		errs = append(errs, cli.CheckFPP(*f.FPP))
	}
	if f.Parallel != nil {
		errs = append(errs, cli.CheckAtLeast("--parallel", *f.Parallel, 1, "data file"))
	}
	if _, err := f.shard(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, f.memoryFlag.checkValues(), f.requestsFlag.checkValues())...)
}

// maxMemoryMiB bounds --memory-budget-mib so that its bytes fit an int64
// with room to spare (1 PiB).
const maxMemoryMiB = 1 << 30

// checkValues refuses a budget that is not a positive number of MiB.
func (f memoryFlag) checkValues() error {
	switch {
	case f.MemoryMiB == nil:
		return nil
	case *f.MemoryMiB < 1:
		return fmt.Errorf("--memory-budget-mib %d: want a positive number of MiB", *f.MemoryMiB)
	case *f.MemoryMiB > maxMemoryMiB:
		return fmt.Errorf("--memory-budget-mib %d: want at most %d MiB", *f.MemoryMiB, maxMemoryMiB)
	}
	return nil
}

// checkCompactAbove refuses --compact-above 0, which the indexer would
// read as its default (8) rather than as "compact whenever there are
// segments".
func checkCompactAbove(v *int) error {
	if v != nil && *v == 0 {
		return fmt.Errorf("--compact-above 0: want 1 or more segments, or a negative number to never compact")
	}
	return nil
}

// checkMetricsFile checks that --metrics-file can be written — its
// directory exists and takes a new file, and it is no directory itself —
// before the command commits anything, rather than failing after the
// index was committed.
func checkMetricsFile(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--metrics-file %s: is a directory, want a file in it", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--metrics-file %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("--metrics-file %s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("--metrics-file %s: %s is not a directory", path, dir)
	}
	// The file is written as a temporary file renamed over it: make one.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.check")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("--metrics-file %s: directory %s is not writable: %w", path, dir, err)
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}
