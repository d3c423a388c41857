package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptExits130: Ctrl-C (SIGINT) stops a command, which then says
// "interrupted" and exits 130, as shells report a process SIGINT ended
// (before: exit 1, "context canceled", or 0 for maintain --every). The
// command runs in a process of its own, the test binary run again as
// icebloom (TestRunAsIcebloom).
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "20"); code != 0 {
		t.Fatal(stderr)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunAsIcebloom$")
	cmd.Env = append(os.Environ(), "ICEBLOOM_RUN_ARGS=maintain\n--every\n1h")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
		if strings.Contains(lines.Text(), "maintenance round done") {
			break // the first round is done: maintain waits for the next
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for lines.Scan() {
			said = append(said, lines.Text())
		}
		done <- cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("maintain still running a minute after SIGINT:\n%s", strings.Join(said, "\n"))
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted || !strings.Contains(said[len(said)-1], `"error":"interrupted"`) {
		t.Errorf("after SIGINT: %v, stderr ends %q; want exit 130 and \"interrupted\"", err, said[len(said)-1])
	}
}

// TestRunAsIcebloom is icebloom's main run with the arguments in
// ICEBLOOM_RUN_ARGS, one a line, so that tests can run the test binary as
// icebloom in a process of its own; without them it does nothing.
func TestRunAsIcebloom(t *testing.T) {
	args := os.Getenv("ICEBLOOM_RUN_ARGS")
	if args == "" {
		t.Skip("run by tests as icebloom's main")
	}
	os.Args = append([]string{"icebloom"}, strings.Split(args, "\n")...)
	main()
}
