// Command intakeload measures pushd's intake (make loadtest-intake): installation upserts and
// accepted pushes per second in a closed loop over many keep-alive connections, the latency of
// pushes sent at a fixed rate (open loop), and pushd's CPU per request from /proc; each next to
// the floor measured in the same run: the same generator against a fasthttp server that
// answers every request 200 at once (this binary with -serve-floor, run as its own process, so
// that its CPU is measured apart). scripts/loadtest-intake.sh starts pushd and runs it.
//
// It prints a table, writes a JSON report with -report, and exits 1 when requests failed,
// 2 when the run could not complete.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/pushd/pushd/loadtest/intake"
	"github.com/pushd/pushd/loadtest/procmon"
)

func main() {
	os.Exit(run())
}

type config struct {
	pushd, ops, adminToken, pidFile, report string
	apps, conns                             int
	upserts, devices, pushes, rateN         int
	rate                                    int
	warmup                                  int
	floor                                   bool
}

func run() int {
	fs := flag.NewFlagSet("intakeload", flag.ContinueOnError)
	var c config
	var serveFloor string
	fs.StringVar(&c.pushd, "pushd", "http://127.0.0.1:8080", "base URL of pushd's REST API")
	fs.StringVar(&c.adminToken, "admin-token", os.Getenv("PUSHD_ADMIN_TOKEN"), "pushd admin token (default $PUSHD_ADMIN_TOKEN)")
	fs.StringVar(&c.ops, "pushd-ops", "", "base URL of pushd's ops port: the push loads also report pushes planned/s, read from fan-out's counters there (\"\": not reported)")
	fs.StringVar(&c.pidFile, "pushd-pid-file", "", "file holding pushd's pid: its CPU per request is read from /proc")
	fs.IntVar(&c.apps, "apps", 32, "apps the requests go to in turn (an app may make at most 9,600 push calls a minute)")
	fs.IntVar(&c.conns, "conns", 256, "keep-alive connections, one request in flight on each")
	fs.IntVar(&c.upserts, "upserts", 60000, "installation upserts of the closed loop (0: none)")
	fs.IntVar(&c.devices, "devices", 0, "distinct installations the upserts go to (0: half the upserts: the first half creates, the second updates)")
	fs.IntVar(&c.pushes, "pushes", 40000, "pushes of the closed loop (0: none)")
	fs.IntVar(&c.rate, "rate", 5000, "pushes per second of the open loop")
	fs.IntVar(&c.rateN, "rate-pushes", 15000, "pushes of the open loop (3 s at the default rate)")
	fs.IntVar(&c.warmup, "warmup", 2000, "upserts and pushes sent before measuring (connections, caches, the limiter's slices)")
	fs.BoolVar(&c.floor, "floor", true, "measure the floor: the same loads against a fasthttp server answering 200 at once, in its own process")
	fs.StringVar(&c.report, "report", "", "write the JSON report to this file")
	fs.StringVar(&serveFloor, "serve-floor", "", "internal: serve the floor on this address, print it, and run until killed")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if serveFloor != "" {
		return runFloor(serveFloor)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := measure(ctx, c)
	if rep != nil {
		rep.writeTable(os.Stdout)
		if c.report != "" {
			if werr := rep.writeJSON(c.report); werr != nil {
				fmt.Fprintln(os.Stderr, "intakeload:", werr)
				return 2
			}
			fmt.Println("report written to", c.report)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "intakeload:", err)
		return 2
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func runFloor(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "intakeload:", err)
		return 2
	}
	fmt.Println("floor:", ln.Addr())
	if err := intake.ServeFloor(ln); err != nil {
		fmt.Fprintln(os.Stderr, "intakeload:", err)
		return 2
	}
	return 0
}

// Figures are one load's: against pushd or against the floor.
type Figures struct {
	Requests  int64   `json:"requests"`
	Failed    int64   `json:"failed"`
	PerSecond float64 `json:"perSecond"`
	P50ms     float64 `json:"p50ms"`
	P99ms     float64 `json:"p99ms"`
	// The server process's user+system CPU per request (0: not measured): while the load ran,
	// and from the load's start until the process was quiet again (fan-out's planning of the
	// accepted pushes, Pebble's flushes and compactions included).
	CPULoadUs float64 `json:"cpuMicrosPerRequestDuringLoad"`
	CPUus     float64 `json:"cpuMicrosPerRequest"`
	// PlannedPerSecond (push loads, with -pushd-ops) is the accepted pushes over the time from
	// the load's start until fan-out had planned every one of them: what the loop sustains,
	// where PerSecond counts the answers alone and a planner that lags behind the API does its
	// work after them.
	PlannedPerSecond float64 `json:"plannedPerSecond,omitempty"`
	FirstFailure     string  `json:"firstFailure,omitempty"`
	// SlowWindows are the open loop's windows (intake.WindowSpan of due time) in which more
	// than 1% of the requests took over intake.SlowLatency, in order: the p99's tail, with
	// wall-clock times to line up with pushd's log (its store's flushes and compactions).
	SlowWindows []SlowWindow `json:"slowWindows,omitempty"`
}

// SlowWindow is one window of an open loop whose requests were slow.
type SlowWindow struct {
	Start    time.Time `json:"start"`
	Requests int       `json:"requests"`
	Slow     int       `json:"slow"`
	MaxMs    float64   `json:"maxMs"`
}

// slowWindows are the windows of ws in which over 1% of the requests were slow.
func slowWindows(ws []intake.Window) []SlowWindow {
	var out []SlowWindow
	for _, w := range ws {
		if w.Slow*100 > w.Requests {
			out = append(out, SlowWindow{Start: w.Start, Requests: w.Requests, Slow: w.Slow, MaxMs: ms(w.Max)})
		}
	}
	return out
}

// Row is one scenario: pushd's figures, the floor's, and their ratios.
type Row struct {
	Name  string   `json:"name"`
	Rate  int      `json:"rate,omitempty"` // open loop: requests per second sent
	Pushd Figures  `json:"pushd"`
	Floor *Figures `json:"floor,omitempty"`
	// RateRatio is pushd's requests per second over the floor's; CPURatio pushd's CPU per
	// request while the load ran over the floor's (× the floor's cost).
	RateRatio float64 `json:"rateRatio,omitempty"`
	CPURatio  float64 `json:"cpuRatio,omitempty"`
}

// Report is the run's.
type Report struct {
	StartedAt time.Time `json:"startedAt"`
	Conns     int       `json:"conns"`
	Apps      int       `json:"apps"`
	Rows      []Row     `json:"rows"`
	OK        bool      `json:"ok"`
}

func measure(ctx context.Context, c config) (*Report, error) {
	u, err := url.Parse(c.pushd)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("invalid -pushd %q", c.pushd)
	}
	if c.devices <= 0 {
		c.devices = max(1, c.upserts/2)
	}
	var b [3]byte // 6 hex digits: req_ids are the run id and a request number (16 at most)
	_, _ = rand.Read(b[:])
	runID := hex.EncodeToString(b[:])
	apps, err := createApps(ctx, c.pushd, c.adminToken, runID, c.apps)
	if err != nil {
		return nil, err
	}
	pid := 0
	if c.pidFile != "" {
		raw, err := os.ReadFile(c.pidFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read pushd's pid: %w", err)
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(raw))); err != nil {
			return nil, fmt.Errorf("cannot read pushd's pid from %s: %w", c.pidFile, err)
		}
	}
	var floorAddr string
	floorPID := 0
	if c.floor {
		cmd, addr, err := startFloor(ctx)
		if err != nil {
			return nil, err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		floorAddr, floorPID = addr, cmd.Process.Pid
	}
	ok := func(code int) bool { return code == 200 || code == 201 }
	type shape struct {
		name  string
		reqs  func(host string) intake.RequestFunc
		n     int
		rate  int
		first int64
		push  bool
	}
	shapes := []shape{
		{name: "upserts (closed loop)", n: c.upserts, reqs: func(h string) intake.RequestFunc {
			return intake.UpsertRequests(apps, h, runID, int64(c.devices))
		}},
		{name: "pushes (closed loop)", n: c.pushes, push: true, reqs: func(h string) intake.RequestFunc { return intake.PushRequests(apps, h, runID) }},
		{name: fmt.Sprintf("pushes at %d/s (open loop)", c.rate), n: c.rateN, rate: c.rate, first: int64(c.pushes + c.warmup), push: true,
			reqs: func(h string) intake.RequestFunc { return intake.PushRequests(apps, h, runID) }},
	}
	rep := &Report{StartedAt: time.Now().UTC(), Conns: c.conns, Apps: c.apps, OK: true}
	// Warm-up: the first upserts' devices are created again by the measured loop's first pass
	// over them (an update then), and the warm-up pushes have req_ids the loops do not use.
	if c.warmup > 0 {
		w := intake.Load{Addr: u.Host, Conns: min(c.conns, c.warmup), OK: ok, Request: intake.PushRequests(apps, u.Host, runID+"w")}
		res, err := w.Run(ctx, 0, c.warmup)
		if err != nil {
			return rep, fmt.Errorf("cannot warm up: %w", err)
		}
		if res.Failed > 0 {
			return rep, fmt.Errorf("cannot warm up: %d of %d pushes failed, first: %s", res.Failed, res.Requests, res.FirstError)
		}
	}
	for _, s := range shapes {
		if s.n <= 0 {
			continue
		}
		row := Row{Name: s.name, Rate: s.rate}
		l := intake.Load{Addr: u.Host, Conns: c.conns, OK: ok, Request: s.reqs(u.Host), Rate: s.rate}
		ops := "" // pushd's ops URL, for the push loads' planned/s
		if s.push {
			ops = c.ops
		}
		f, err := runOne(ctx, &l, s.first, s.n, pid, ops)
		if err != nil {
			return rep, fmt.Errorf("cannot run %s against pushd: %w", s.name, err)
		}
		row.Pushd = f
		if f.Failed > 0 {
			rep.OK = false
		}
		if floorAddr != "" {
			fl := intake.Load{Addr: floorAddr, Conns: c.conns, OK: ok, Request: s.reqs(floorAddr), Rate: s.rate}
			ff, err := runOne(ctx, &fl, s.first, s.n, floorPID, "")
			if err != nil {
				return rep, fmt.Errorf("cannot run %s against the floor: %w", s.name, err)
			}
			row.Floor = &ff
			row.RateRatio = ratio(f.PerSecond, ff.PerSecond)
			row.CPURatio = ratio(f.CPULoadUs, ff.CPUus)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// settle waits until process pid is quiet, using under a tenth of a core over half a second,
// or three minutes have passed: fan-out plans the pushes of a closed loop after their answers, and
// that backlog would otherwise count in the next load's CPU per request.
func settle(ctx context.Context, pid int) error {
	const window = 500 * time.Millisecond
	prev, err := procmon.Read(pid)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		select {
		case <-time.After(window): // sampling a rate, not waiting for an event
		case <-ctx.Done():
			return ctx.Err()
		}
		cur, err := procmon.Read(pid)
		if err != nil {
			return err
		}
		if used := cur.CPU - prev.CPU; used < window/10 {
			return nil
		}
		prev = cur
	}
	return nil
}

// plannedPoll is how often the wait for fan-out's planning reads pushd's metrics: the
// figure's resolution, at about a metrics page of pushd's CPU per poll.
const plannedPoll = 10 * time.Millisecond

// runOne runs l, once process pid (0: none) is quiet, and reads the CPU it used from then
// until it is quiet again: the work the requests caused after their answers (fan-out
// planning the pushes, Pebble flushing and compacting) counts in their CPU per request. With
// ops (pushd's ops URL), it also times the load's start until fan-out has planned every
// accepted push.
func runOne(ctx context.Context, l *intake.Load, first int64, n, pid int, ops string) (Figures, error) {
	var before procmon.Sample
	var err error
	if pid > 0 {
		if err := settle(ctx, pid); err != nil {
			return Figures{}, err
		}
		if before, err = procmon.Read(pid); err != nil {
			return Figures{}, err
		}
	}
	var handled0 int64
	if ops != "" {
		if handled0, err = intake.HandledJobs(ctx, http.DefaultClient, ops); err != nil {
			return Figures{}, err
		}
	}
	start := time.Now()
	res, err := l.Run(ctx, first, n)
	if err != nil {
		return Figures{}, err
	}
	f := Figures{
		Requests:     res.Requests,
		Failed:       res.Failed,
		PerSecond:    res.PerSecond(),
		P50ms:        ms(res.Percentile(50)),
		P99ms:        ms(res.Percentile(99)),
		FirstFailure: res.FirstError,
		SlowWindows:  slowWindows(res.Windows),
	}
	if pid > 0 {
		loaded, err := procmon.Read(pid)
		if err != nil {
			return Figures{}, err
		}
		f.CPULoadUs = float64((loaded.CPU - before.CPU).Microseconds()) / float64(res.Requests)
	}
	if accepted := res.Requests - res.Failed; ops != "" && accepted > 0 {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		at, err := intake.WaitHandled(wctx, http.DefaultClient, ops, handled0+accepted, plannedPoll)
		cancel()
		if err != nil {
			return Figures{}, fmt.Errorf("cannot time fan-out's planning of %d accepted pushes: %w", accepted, err)
		}
		f.PlannedPerSecond = float64(accepted) / at.Sub(start).Seconds()
	}
	if pid > 0 {
		if err := settle(ctx, pid); err != nil {
			return Figures{}, err
		}
		after, err := procmon.Read(pid)
		if err != nil {
			return Figures{}, err
		}
		f.CPUus = float64((after.CPU - before.CPU).Microseconds()) / float64(res.Requests)
	}
	return f, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// startFloor runs this binary with -serve-floor on a loopback port and returns it and the
// address it printed.
func startFloor(ctx context.Context) (*exec.Cmd, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("cannot find this binary to start the floor: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "-serve-floor", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", fmt.Errorf("cannot start the floor: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("cannot start the floor: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, "", fmt.Errorf("the floor did not print its address: %w", err)
	}
	return cmd, strings.TrimSpace(strings.TrimPrefix(line, "floor:")), nil
}

// createApps makes n apps through the admin API, each allowed the most push calls a minute.
func createApps(ctx context.Context, base, token, runID string, n int) ([]intake.App, error) {
	apps := make([]intake.App, n)
	for i := range apps {
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("intake-%s-%d", runID, i), "settings": map[string]any{
			"callsPerMinute": 9600,           // push.MaxCallsPerMinute
			"dailyVolume":    int64(1) << 40, // never the limit of a load test
		}})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/admin/apps", bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("cannot create app %d: %w", i, err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("cannot create app %d: %w", i, err)
		}
		raw, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil || res.StatusCode/100 != 2 {
			return nil, fmt.Errorf("cannot create app %d: status %d: %s %v", i, res.StatusCode, raw, err)
		}
		if err := json.Unmarshal(raw, &apps[i]); err != nil || apps[i].ID == "" {
			return nil, fmt.Errorf("cannot create app %d: answer %s: %v", i, raw, err)
		}
	}
	return apps, nil
}

func (r *Report) writeTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\trequests\tfailed\treq/s\tp50 ms\tp99 ms\tCPU µs/req in load\tto quiet\tplanned/s\tfloor req/s\tfloor p50\tfloor p99\tfloor CPU µs/req\trate ratio\tCPU ratio\t\n")
	for _, row := range r.Rows {
		p := row.Pushd
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t", row.Name, p.Requests, p.Failed, p.PerSecond, p.P50ms, p.P99ms, p.CPULoadUs, p.CPUus)
		if p.PlannedPerSecond > 0 {
			fmt.Fprintf(tw, "%.0f\t", p.PlannedPerSecond)
		} else {
			fmt.Fprintf(tw, "-\t")
		}
		if f := row.Floor; f != nil {
			fmt.Fprintf(tw, "%.0f\t%.2f\t%.2f\t%.1f\t%.2f\t×%.1f\t\n", f.PerSecond, f.P50ms, f.P99ms, f.CPUus, row.RateRatio, row.CPURatio)
		} else {
			fmt.Fprintf(tw, "-\t-\t-\t-\t-\t-\t\n")
		}
	}
	_ = tw.Flush()
	for _, row := range r.Rows {
		if ws := row.Pushd.SlowWindows; len(ws) > 0 {
			fmt.Fprintf(w, "%s: %d windows of %v with over 1%% of the requests over %v (line them up with pushd's log):", row.Name, len(ws), intake.WindowSpan, intake.SlowLatency)
			for i, sw := range ws {
				if i == 8 {
					fmt.Fprintf(w, " …")
					break
				}
				fmt.Fprintf(w, " %s %d/%d max %.1f ms;", sw.Start.Format("15:04:05.000"), sw.Slow, sw.Requests, sw.MaxMs)
			}
			fmt.Fprintln(w)
		}
		if row.Pushd.FirstFailure != "" {
			fmt.Fprintf(w, "%s: %d failed, first: %s\n", row.Name, row.Pushd.Failed, row.Pushd.FirstFailure)
		}
	}
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}
