package procmon

import (
	"os"
	"os/exec"
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
