package e2e

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
)

// bins are the binaries TestMain built: paths by name ("pushd", "pushsim"), or buildErr.
var (
	binDir   string
	buildErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "pushd-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: cannot create the binary directory:", err)
			os.Exit(1)
		}
		binDir = dir
		buildErr = build(dir)
	}
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build compiles pushd and pushsim into dir, without -race: the processes under test run at
// production speed while the test process itself may run under the race detector.
func build(dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/pushd", "./loadtest/cmd/pushsim")
	cmd.Dir = ".." // the module root: this package is <root>/e2e
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot build pushd and pushsim: %w\n%s", err, out)
	}
	return nil
}

// bin returns the path of a built binary, skipping under -short and failing if the build failed.
func bin(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: builds and runs the real pushd binary; skipped with -short")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

// outBuf collects a process's stdout and stderr. Safe for concurrent use.
type outBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *outBuf) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *outBuf) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// proc is one running child process.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  *outBuf
	done chan struct{} // closed once the process has exited and err is set
	err  error
}

// start runs path with args. When the test ends the process is killed if still running, and
// its output is logged if the test failed.
func start(t *testing.T, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, out: &outBuf{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			out := p.out.String()
			if len(out) > 8000 {
				out = "...\n" + out[len(out)-8000:]
			}
			t.Logf("%s output (%v):\n%s", p.name, p.err, out)
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until the output matches re and returns the first submatch (or the
// match without groups). It fails if the process exits first.
func (p *proc) waitOutput(re *regexp.Regexp, timeout time.Duration) string {
	p.t.Helper()
	var got []string
	waitfor.True(p.t, timeout, fmt.Sprintf("%s to print %s", p.name, re), func() bool {
		got = re.FindStringSubmatch(p.out.String())
		if got == nil && p.exited() {
			p.t.Fatalf("%s exited (%v) before printing %s:\n%s", p.name, p.err, re, p.out.String())
		}
		return got != nil
	})
	if len(got) > 1 {
		return got[1]
	}
	return got[0]
}

// kill sends SIGKILL (if still running) and waits for the exit.
func (p *proc) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// stop sends SIGTERM and returns the exit error (nil: exit status 0); it fails the test if the
// process has not exited within timeout.
func (p *proc) stop(timeout time.Duration) error {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("cannot signal %s: %v", p.name, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.err
	case <-timer.C:
		p.t.Fatalf("%s did not exit within %s of SIGTERM", p.name, timeout)
		return nil
	}
}
