//go:build icebloom_bench

package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/icebloom/icebloom/cmd/icebloom-bench/internal/procstat"
)

// What the bench's modes that run icebloom serve as a process of its own
// (--serve-abuse, --serve --serve-kind random) share: the binary, the
// process with its log and gctrace, and the sampling of its RSS.

// rssPeriod is how often a server's VmRSS is sampled.
const rssPeriod = 100 * time.Millisecond

// serveBinary is the icebloom binary a server runs: given (the value of
// flag), or one built from the module's ./cmd/icebloom into dir/bin.
func serveBinary(ctx context.Context, given, flag, dir string, progress func(string, ...any)) (string, error) {
	if given != "" {
		return filepath.Abs(given)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building icebloom needs the go command (or give its binary): %w", err)
	}
	gomod, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return "", fmt.Errorf("not within icebloom's module: run from its checkout, or give %s", flag)
	}
	bin := filepath.Join(dir, "bin", "icebloom")
	progress("building %s from %s/cmd/icebloom", bin, root)
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/icebloom")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/icebloom in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// serverProcess is icebloom serve running as a process of its own.
type serverProcess struct {
	cmd     *exec.Cmd
	addr    string
	logPath string
	done    chan struct{}
	waitErr error
	rss     rssSampler
	once    sync.Once
	// started is when the process was started: its gctrace's times are
	// since about then.
	started time.Time
}

// serverConfig is how startServer runs icebloom serve.
type serverConfig struct {
	bin string
	// dir is where it runs: the embedded catalog is dir/warehouse.
	dir string
	// log is the name of its log in dir (its stderr: log records and the
	// gctrace); "" is serve.log.
	log       string
	budgetMiB int64
	// goMemLimit is its GOMEMLIMIT; "" sets none.
	goMemLimit string
	// extra are more flags of serve.
	extra []string
}

// startServer starts `icebloom serve` in catalog mode over the embedded
// catalog in cfg.dir/warehouse, on a loopback port, as cfg says, with
// GODEBUG=gctrace=1, and starts sampling its RSS.
func startServer(ctx context.Context, cfg serverConfig) (*serverProcess, error) {
	bin, dir := cfg.bin, cfg.dir
	logPath := filepath.Join(dir, cmp.Or(cfg.log, "serve.log"))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	cmd := exec.Command(bin, append([]string{"--log-level", "warn", "serve", "--listen", "127.0.0.1:0",
		"--memory-budget-mib", strconv.FormatInt(cfg.budgetMiB, 10)}, cfg.extra...)...)
	cmd.Dir = dir // the embedded catalog is ./warehouse
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ICEBLOOM_") && !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// GODEBUG=gctrace=1: the runtime writes each collection, with the live
	// heap it marked, to the server's stderr (its log), which the report
	// reads (serverProcess.gcs).
	cmd.Env = append(cmd.Env, "HOME="+dir, "GODEBUG=gctrace=1") // HOME: no ~/.iceberg-go.yaml
	if cfg.goMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+cfg.goMemLimit)
	}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	sp := &serverProcess{cmd: cmd, logPath: logPath, done: make(chan struct{}), started: time.Now()}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		sp.waitErr = cmd.Wait()
		logFile.Close()
		close(sp.done)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "serving on http://")
		if !ok {
			sp.stop()
			return nil, fmt.Errorf("icebloom serve said %q, want serving on http://ADDR", line)
		}
		sp.addr = addr
	case <-sp.done:
		return nil, fmt.Errorf("icebloom serve exited at start: %v; its log: %s", sp.waitErr, sp.logTail())
	case <-time.After(2 * time.Minute):
		sp.stop()
		return nil, errors.New("icebloom serve did not say where it listens within 2 minutes")
	case <-ctx.Done():
		sp.stop()
		return nil, ctx.Err()
	}
	go sp.rss.sample(cmd.Process.Pid, sp.done)
	return sp, nil
}

// exited is the server's exit, nil while it runs.
func (sp *serverProcess) exited() error {
	select {
	case <-sp.done:
		return fmt.Errorf("exit: %v", sp.waitErr)
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for the server to finish (SIGKILL after
// 40 s: serve lets plans in flight finish, and none should be).
func (sp *serverProcess) stop() {
	sp.once.Do(func() {
		sp.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-sp.done:
		case <-time.After(40 * time.Second):
			sp.cmd.Process.Kill()
			<-sp.done
		}
	})
}

// gcs are the server's collections, read from its log once it ended.
func (sp *serverProcess) gcs() ([]procstat.GC, error) {
	f, err := os.Open(sp.logPath)
	if err != nil {
		return nil, fmt.Errorf("the server's gctrace: %w", err)
	}
	defer f.Close()
	gcs, err := procstat.GCTrace(f)
	if err != nil {
		return nil, fmt.Errorf("the server's gctrace in %s: %w", sp.logPath, err)
	}
	return gcs, nil
}

// logTail is the end of the server's log.
func (sp *serverProcess) logTail() string {
	b, err := os.ReadFile(sp.logPath)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-2000):])
}

// rssSampler keeps the peak of a process's VmRSS, sampled every
// rssPeriod: over the process's life, and since the window was last
// restarted.
type rssSampler struct{ peak, window atomic.Int64 }

// restart starts a new window and returns the last one's peak.
func (r *rssSampler) restart() int64 { return r.window.Swap(0) }

func (r *rssSampler) sample(pid int, done <-chan struct{}) {
	tick := time.NewTicker(rssPeriod)
	defer tick.Stop()
	for {
		v := procstat.StatusOf(pid, "VmRSS")
		if v > r.peak.Load() {
			r.peak.Store(v)
		}
		if v > r.window.Load() {
			r.window.Store(v) // a restart meanwhile loses at most this sample
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}
