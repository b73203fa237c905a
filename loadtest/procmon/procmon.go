// Package procmon reads another process's resource use from /proc: the load-test harness
// samples pushd with it while the simulators, which run in their own process, stay out of
// the figures.
package procmon

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. Linux reports it
// as 100 on every architecture Go supports (sysconf(_SC_CLK_TCK) is a constant there).
const clockTicks = 100

// Sample is one reading of a process.
type Sample struct {
	At  time.Time
	CPU time.Duration // user + system CPU time since the process started
	RSS int64         // resident set size, bytes (VmRSS)
	HWM int64         // peak resident set size, bytes (VmHWM)
}

// Read samples process pid.
func Read(pid int) (Sample, error) {
	s := Sample{At: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("cannot read the CPU time of process %d: %w", pid, err)
	}
	if s.CPU, err = ParseStat(stat); err != nil {
		return s, fmt.Errorf("cannot read the CPU time of process %d: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("cannot read the memory of process %d: %w", pid, err)
	}
	if s.RSS, s.HWM, err = ParseStatus(status); err != nil {
		return s, fmt.Errorf("cannot read the memory of process %d: %w", pid, err)
	}
	return s, nil
}

// ParseStat returns utime + stime of a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so the fields are counted
// from the last ')'.
func ParseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", trunc(b))
	}
	// After ")": field 3 (state) onwards; utime and stime are fields 14 and 15.
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13: %q", len(f), trunc(b))
	}
	utime, err := strconv.ParseUint(string(f[11]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime %q is not a number", f[11])
	}
	stime, err := strconv.ParseUint(string(f[12]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime %q is not a number", f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// ParseStatus returns VmRSS and VmHWM of a /proc/<pid>/status file, in bytes.
func ParseStatus(b []byte) (rss, hwm int64, err error) {
	var haveRSS, haveHWM bool
	for line := range bytes.Lines(b) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst, haveRSS = &rss, true
		case "VmHWM":
			dst, haveHWM = &hwm, true
		default:
			continue
		}
		f := bytes.Fields(val)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, 0, fmt.Errorf("%s is %q, want <n> kB", key, bytes.TrimSpace(val))
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("%s is %q, want <n> kB", key, bytes.TrimSpace(val))
		}
		*dst = n * 1024
	}
	if !haveRSS || !haveHWM {
		return 0, 0, fmt.Errorf("no VmRSS or VmHWM line (a kernel thread or a zombie?)")
	}
	return rss, hwm, nil
}

func trunc(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
