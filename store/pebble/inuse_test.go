package pebble

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// holdDirEnv makes the test binary, re-executed as a child, hold a store open until its stdin
// closes: the "another process" of TestStoreOpenInUseByOtherProcess.
const holdDirEnv = "PUSHD_TEST_HOLD_STORE_DIR"

func TestStoreOpenInUseByOtherProcess(t *testing.T) {
	if dir := os.Getenv(holdDirEnv); dir != "" {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		os.Stdout.WriteString("ready\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = s.Close()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreOpenInUseByOtherProcess$")
	cmd.Env = append(os.Environ(), holdDirEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child did not open the store: %q, %v", line, err)
	}
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "data directory "+dir+" is in use by another process") {
		t.Fatalf("Open of a directory another process holds = %v, want an in-use error", err)
	}
	t.Logf("second Open: %v", err)
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the other process exited: %v", err)
	}
	_ = s.Close()
}
