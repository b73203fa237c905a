package procmon

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
)

func TestProcmonParseStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	line := []byte("4242 (pushd (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 123456 1000000 2500 18446744073709551615\n")
	got, err := ParseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("CPU %v, want %v (utime 250 + stime 75 ticks)", got, want)
	}
	for _, bad := range []string{"", "4242 pushd S 1", "4242 (pushd) S 1 2 3", "4242 (p) S 1 4242 4242 0 -1 4194560 1234 0 0 0 x 75 0"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) accepted", bad)
		}
	}
}

func TestProcmonParseStatus(t *testing.T) {
	status := []byte("Name:\tpushd\nVmPeak:\t  900 kB\nVmHWM:\t   300000 kB\nVmRSS:\t   262144 kB\nThreads:\t12\n")
	rss, hwm, err := ParseStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	if rss != 262144*1024 || hwm != 300000*1024 {
		t.Fatalf("rss %d hwm %d", rss, hwm)
	}
	for _, bad := range []string{"Name:\tkthreadd\n", "VmRSS:\t12 MB\nVmHWM:\t1 kB\n", "VmRSS:\tx kB\nVmHWM:\t1 kB\n"} {
		if _, _, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("ParseStatus(%q) accepted", bad)
		}
	}
}

func TestProcmonParseIO(t *testing.T) {
	io := []byte("rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
	r, w, err := ParseIO(io)
	if err != nil || r != 10 || w != 3 {
		t.Fatalf("ParseIO = %d, %d, %v; want 10 reads and 3 writes", r, w, err)
	}
	for _, bad := range []string{"rchar: 1\n", "syscr: 1\n", "syscr: x\nsyscw: 1\n", "syscr: 1\nsyscw: -2\n"} {
		if _, _, err := ParseIO([]byte(bad)); err == nil {
			t.Errorf("ParseIO(%q) accepted", bad)
		}
	}
}

// TestProcmonReadIO reads a real child's system calls: a shell writing a line at a time
// counts its writes.
func TestProcmonReadIO(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/self/io")
	}
	cmd := exec.Command("sh", "-c", "while :; do echo x; done")
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	first, err := Read(cmd.Process.Pid)
	if err != nil || !first.HaveIO {
		t.Fatalf("Read = %+v, %v; want the child's I/O counts", first, err)
	}
	waitfor.True(t, 30*time.Second, "the child's writes to be counted", func() bool {
		s, err := Read(cmd.Process.Pid)
		return err == nil && s.HaveIO && s.Writes >= first.Writes+100
	})
}

// TestProcmonReadChild reads a real child process and sees its CPU grow while it spins:
// the figures are the child's, not this process's.
func TestProcmonReadChild(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	first, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if first.RSS <= 0 || first.HWM < first.RSS {
		t.Fatalf("rss %d hwm %d", first.RSS, first.HWM)
	}
	waitfor.True(t, 30*time.Second, "the spinning child's CPU to grow", func() bool {
		s, err := Read(cmd.Process.Pid)
		return err == nil && s.CPU >= first.CPU+20*time.Millisecond
	})
	if _, err := Read(1 << 30); err == nil {
		t.Fatal("read a process that does not exist")
	}
}

// TestProcmonBuild: the build of a running Go process (this test binary) names its Go version
// and its cgo setting; a process that is not a Go program, or does not exist, is an error.
func TestProcmonBuild(t *testing.T) {
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("no /proc")
	}
	got, err := Build(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, runtime.Version()+" ") || !strings.Contains(got, "CGO_ENABLED=") {
		t.Fatalf("Build(self) = %q, want the Go version %s and CGO_ENABLED", got, runtime.Version())
	}
	if _, err := Build(1 << 30); err == nil {
		t.Fatal("read the build of a process that does not exist")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got, err := Build(cmd.Process.Pid); err == nil {
		t.Fatalf("Build(sleep) = %q, want an error: not a Go program", got)
	}
}

func TestProcmonBuildSummary(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"}, {Key: "CGO_ENABLED", Value: "0"}, {Key: "GOARCH", Value: "amd64"},
		{Key: "GOAMD64", Value: "v3"}, {Key: "vcs.revision", Value: "f36c513"}, {Key: "vcs.modified", Value: "true"},
	}}
	const want = "go1.26.8 CGO_ENABLED=0 GOARCH=amd64 GOAMD64=v3 vcs.revision=f36c513+modified"
	if got := BuildSummary(bi); got != want {
		t.Fatalf("BuildSummary = %q, want %q", got, want)
	}
}
