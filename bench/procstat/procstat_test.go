//go:build unix

package procstat

import (
	"os"
	"runtime"
	"testing"
)

// TestSyscallsCountReadsAndWrites: a read and a write of a file are counted as this
// process's.
func TestSyscallsCountReadsAndWrites(t *testing.T) {
	r0, w0, ok := Syscalls()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("cannot read /proc/self/io on Linux")
		}
		t.Skip("no /proc/self/io")
	}
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 10 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	r1, w1, ok := Syscalls()
	if !ok || w1-w0 < 10 || r1-r0 < 1 {
		t.Errorf("after 10 writes and a read: %d writes and %d reads counted (ok %v)", w1-w0, r1-r0, ok)
	}
}
