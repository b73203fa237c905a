// Package procmon reads another process's resource use from /proc: the load-test harness
// samples pushd with it while the simulators, which run in their own process, stay out of
// the figures.
package procmon

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
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
	// Reads and Writes are the read and write system calls so far (syscr and syscw of
	// /proc/<pid>/io, a call that found nothing to read included); HaveIO is false when that
	// file cannot be read (another user's process, a kernel without task I/O accounting).
	Reads, Writes int64
	HaveIO        bool
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
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		s.Reads, s.Writes, err = ParseIO(io)
		s.HaveIO = err == nil
	}
	return s, nil
}

// ParseIO returns syscr and syscw of a /proc/<pid>/io file.
func ParseIO(b []byte) (reads, writes int64, err error) {
	reads, writes, ok, err := twoValues(b, "syscr", "syscw", func(val []byte) (int64, bool) {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(val)), 10, 64)
		return n, err == nil && n >= 0
	}, "want a count")
	if err == nil && !ok {
		err = fmt.Errorf("no syscr or syscw line in %q", trunc(b))
	}
	return reads, writes, err
}

// twoValues reads the values of keys a and b from the "key: value" lines of file, each by
// parse (false: the value is malformed, an error saying want); ok is false when a line is
// missing.
func twoValues(file []byte, a, b string, parse func(val []byte) (int64, bool), want string) (va, vb int64, ok bool, err error) {
	var haveA, haveB bool
	for line := range bytes.Lines(file) {
		key, val, found := bytes.Cut(line, []byte(":"))
		if !found || string(key) != a && string(key) != b {
			continue
		}
		n, good := parse(val)
		if !good {
			return 0, 0, false, fmt.Errorf("%s is %q, %s", key, bytes.TrimSpace(val), want)
		}
		if string(key) == a {
			va, haveA = n, true
		} else {
			vb, haveB = n, true
		}
	}
	return va, vb, haveA && haveB, nil
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
	rss, hwm, ok, err := twoValues(b, "VmRSS", "VmHWM", func(val []byte) (int64, bool) {
		f := bytes.Fields(val)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		return n * 1024, err == nil && n >= 0
	}, "want <n> kB")
	if err == nil && !ok {
		err = fmt.Errorf("no VmRSS or VmHWM line (a kernel thread or a zombie?)")
	}
	return rss, hwm, err
}

func trunc(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// Build describes how process pid's executable was built, from its Go build information:
// the Go version and the settings that change what a measurement of it means (cgo, the
// amd64 level, -trimpath, -race, the commit). The load test's figures name the build they
// measured with it: the harness builds pushd with the toolchain's defaults (cgo on where a C
// compiler is found) while deploy/Dockerfile ships CGO_ENABLED=0.
func Build(pid int) (string, error) {
	bi, err := buildinfo.ReadFile(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", fmt.Errorf("cannot read the build of process %d: %w", pid, err)
	}
	return BuildSummary(bi), nil
}

// BuildSummary is Build's text of bi: "go1.26.8 CGO_ENABLED=1 GOAMD64=v1 vcs.revision=…".
func BuildSummary(bi *debug.BuildInfo) string {
	parts := []string{bi.GoVersion}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "CGO_ENABLED", "GOAMD64", "GOARCH", "-race", "-trimpath", "-pgo":
			parts = append(parts, s.Key+"="+s.Value)
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		if modified == "true" {
			rev += "+modified"
		}
		parts = append(parts, "vcs.revision="+rev)
	}
	return strings.Join(parts, " ")
}
