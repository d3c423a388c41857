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
// icebloom (interruptChild).
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	if _, stderr, code := icebloom(t, "quickstart", "--files", "2", "--rows", "20"); code != 0 {
		t.Fatal(stderr)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptChild$")
	cmd.Env = append(os.Environ(), "ICEBLOOM_INTERRUPT_CHILD=maintain --every 1h")
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

// TestInterruptChild is icebloom run with the arguments in
// ICEBLOOM_INTERRUPT_CHILD, for TestInterruptExits130; without it, it does
// nothing.
func TestInterruptChild(t *testing.T) {
	args := os.Getenv("ICEBLOOM_INTERRUPT_CHILD")
	if args == "" {
		t.Skip("run by TestInterruptExits130")
	}
	os.Args = append([]string{"icebloom"}, strings.Fields(args)...)
	main()
}
