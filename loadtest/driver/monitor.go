package driver

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/pushd/pushd/loadtest/procmon"
	"github.com/pushd/pushd/loadtest/sim"
)

// The monitor samples, every SampleEvery while the run lasts, pushd's process (CPU and
// memory from /proc, by the pid in PushdPIDFile: the simulators run in pushsim's own process,
// so none of their work is counted) and every simulator's accepted count. The report's
// per-scenario CPU, RSS and delivery-time figures and the HTML report's plots come from it.

// TimelinePoint is one sample. T is seconds since the run started.
type TimelinePoint struct {
	T          float64 `json:"t"`
	CPUSeconds float64 `json:"cpuSeconds,omitempty"` // pushd user+system CPU since its start (0: not sampled)
	RSS        int64   `json:"rss,omitempty"`        // pushd VmRSS, bytes
	HWM        int64   `json:"hwm,omitempty"`        // pushd VmHWM (peak RSS), bytes
	PID        int     `json:"pid,omitempty"`
	// Accepted is each simulator's accepted count (by its name in --sim-stats), cumulative.
	Accepted map[string]int64 `json:"accepted,omitempty"`
}

// Call is one timed request: when it started (seconds since the run started) and how long
// pushd took to answer it.
type Call struct {
	T       float64 `json:"t"`
	Seconds float64 `json:"seconds"`
}

type monitor struct {
	start   time.Time
	pidFile string
	every   time.Duration
	// accepted reads every simulator's accepted count (nil: none sampled).
	accepted func(context.Context) (map[string]int64, error)

	mu       sync.Mutex
	points   []TimelinePoint
	upserts  []Call
	pushes   []Call
	procErr  string // the last reason pushd could not be sampled
	build    string // how the pushd sampled last was built (procmon.Build), read once per pid
	buildPID int
	cancel   context.CancelFunc
	sampling sync.WaitGroup
}

func newMonitor(start time.Time, pidFile string, every time.Duration, accepted func(context.Context) (map[string]int64, error)) *monitor {
	return &monitor{start: start, pidFile: pidFile, every: every, accepted: accepted}
}

// run samples until stop.
func (m *monitor) run(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(ctx)
	m.sampling.Add(1)
	go func() {
		defer m.sampling.Done()
		t := time.NewTicker(m.every)
		defer t.Stop()
		for {
			m.sample(ctx)
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// stop ends the sampling and takes one last sample.
func (m *monitor) stop(ctx context.Context) {
	if m.cancel != nil {
		m.cancel()
		m.sampling.Wait()
	}
	m.sample(ctx)
}

// proc samples pushd now; ok is false when its pid or /proc cannot be read.
func (m *monitor) proc() (procmon.Sample, int, bool) {
	if m.pidFile == "" {
		return procmon.Sample{}, 0, false
	}
	pid, err := readPID(m.pidFile)
	if err == nil {
		var s procmon.Sample
		if s, err = procmon.Read(pid); err == nil {
			m.readBuild(pid)
			return s, pid, true
		}
	}
	m.mu.Lock()
	m.procErr = err.Error()
	m.mu.Unlock()
	return procmon.Sample{}, 0, false
}

// readBuild records how process pid was built, once per pid (a restarted pushd is read again).
func (m *monitor) readBuild(pid int) {
	m.mu.Lock()
	seen := m.buildPID == pid
	m.mu.Unlock()
	if seen {
		return
	}
	b, err := procmon.Build(pid)
	if err != nil {
		b = "unknown (" + err.Error() + ")"
	}
	m.mu.Lock()
	m.build, m.buildPID = b, pid
	m.mu.Unlock()
}

// buildOf is what readBuild recorded ("" before pushd was sampled).
func (m *monitor) buildOf() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.build
}

func (m *monitor) sample(ctx context.Context) {
	p := TimelinePoint{}
	if s, pid, ok := m.proc(); ok {
		p.CPUSeconds, p.RSS, p.HWM, p.PID = s.CPU.Seconds(), s.RSS, s.HWM, pid
	}
	if m.accepted != nil && ctx.Err() == nil {
		// A simulator that cannot be read now is read at the next tick; the gap shows in the plot.
		p.Accepted, _ = m.accepted(ctx)
	}
	p.T = time.Since(m.start).Seconds()
	m.mu.Lock()
	m.points = append(m.points, p)
	m.mu.Unlock()
}

// timed records one request of kind upsert or push that started at t0 and ended now.
func (m *monitor) timed(push bool, t0 time.Time) {
	c := Call{T: t0.Sub(m.start).Seconds(), Seconds: time.Since(t0).Seconds()}
	m.mu.Lock()
	if push {
		m.pushes = append(m.pushes, c)
	} else {
		m.upserts = append(m.upserts, c)
	}
	m.mu.Unlock()
}

// snapshot returns copies of what was sampled so far.
func (m *monitor) snapshot() (points []TimelinePoint, upserts, pushes []Call, procErr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.points), slices.Clone(m.upserts), slices.Clone(m.pushes), m.procErr
}

// LatencyWindow is the latency percentiles of the requests started in [T, T+window).
type LatencyWindow struct {
	T   float64 `json:"t"`
	N   int     `json:"n"`
	P50 float64 `json:"p50"` // seconds
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Windows groups calls by start time into windows of width seconds and gives each window's
// percentiles (nearest rank). Windows without calls are left out.
func Windows(calls []Call, width float64) []LatencyWindow {
	if len(calls) == 0 || width <= 0 {
		return nil
	}
	byWin := map[int][]float64{}
	for _, c := range calls {
		k := int(c.T / width)
		byWin[k] = append(byWin[k], c.Seconds)
	}
	keys := slices.Sorted(maps.Keys(byWin))
	out := make([]LatencyWindow, 0, len(keys))
	for _, k := range keys {
		v := byWin[k]
		slices.Sort(v)
		out = append(out, LatencyWindow{T: float64(k) * width, N: len(v), P50: Percentile(v, 50), P90: Percentile(v, 90), P99: Percentile(v, 99)})
	}
	return out
}

// Percentile is the nearest-rank p-th percentile of sorted (0 when empty).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// acceptedNow reads every simulator's accepted count, by name (the URL when unnamed).
func (r *run) acceptedNow(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(r.cfg.Sims))
	for _, s := range r.cfg.Sims {
		n, err := acceptedCount(ctx, r.sims, s)
		if err != nil {
			return nil, err
		}
		name := s.Name
		if name == "" {
			name = s.URL
		}
		out[name] += n
	}
	return out, nil
}

func sumAccepted(stats []sim.Stats) int64 {
	var n int64
	for _, st := range stats {
		n += st.Accepted
	}
	return n
}

// scenarioFigures sets a scenario's per-delivery CPU, its peak sampled RSS and the times
// from the first accepted push call to the simulators' first and last acceptance (within
// one sample interval), from the timeline. base and final are the simulators' accepted
// totals before and after the scenario.
func (r *run) scenarioFigures(sr *ScenarioReport, acceptAt time.Time, base, final int64) {
	if sr.CPUSeconds > 0 && sr.Sent > 0 {
		sr.CPUMicrosPerDelivery = sr.CPUSeconds * 1e6 / float64(sr.Sent)
	}
	if sr.Reads > 0 && sr.Sent > 0 {
		sr.ReadsPerDelivery = float64(sr.Reads) / float64(sr.Sent)
		sr.WritesPerDelivery = float64(sr.Writes) / float64(sr.Sent)
	}
	points, _, _, _ := r.mon.snapshot()
	sr.RSSPeak = max(sr.RSSStart, sr.RSSEnd)
	acceptT := acceptAt.Sub(r.rep.StartedAt).Seconds()
	first, last := -1.0, -1.0
	for _, p := range points {
		if p.T < sr.StartT {
			continue
		}
		if p.T <= sr.EndT && p.RSS > sr.RSSPeak && sr.RSSStart > 0 {
			sr.RSSPeak = p.RSS
		}
		if p.Accepted == nil || acceptAt.IsZero() || final <= base {
			continue
		}
		var n int64
		for _, v := range p.Accepted {
			n += v
		}
		if first < 0 && n > base {
			first = p.T
		}
		if last < 0 && n >= final {
			last = p.T
			break
		}
	}
	if first >= 0 {
		sr.FirstDeliverySeconds = max(first-acceptT, 0)
	}
	if last >= 0 {
		sr.LastDeliverySeconds = max(last-acceptT, 0)
	}
}

// collect stops the monitor and puts what it sampled into the report.
func (r *run) collect() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.mon.stop(ctx)
	points, upserts, pushes, procErr := r.mon.snapshot()
	rep := r.rep
	rep.SampleEvery = r.cfg.SampleEvery.Seconds()
	rep.Timeline, rep.PushCalls = points, pushes
	rep.UpsertLatencyWindow, rep.PushLatencyWindow = latencyWindow(upserts), latencyWindow(pushes)
	rep.UpsertLatency = Windows(upserts, rep.UpsertLatencyWindow)
	rep.PushLatency = Windows(pushes, rep.PushLatencyWindow)
	pu := &ProcessUse{}
	lastPID := 0
	for _, p := range points {
		if p.PID == 0 {
			continue
		}
		if lastPID == 0 {
			pu.RSSStart = p.RSS
		} else if p.PID != lastPID {
			pu.Restarts++
		}
		lastPID = p.PID
		pu.Samples++
		pu.RSSEnd, pu.PeakRSS = p.RSS, max(pu.PeakRSS, p.HWM)
		pu.CPUSeconds = p.CPUSeconds // of the process running at the end
	}
	if pu.Samples == 0 {
		pu.Error = "pushd was not sampled: " + cmp.Or(procErr, "no -pushd-pid-file")
	}
	pu.Build = r.mon.buildOf()
	rep.Pushd = pu
}

// latencyWindow is the width of the latency windows of calls, seconds: about 40 windows
// over their span, between 0.1 s and 10 s.
func latencyWindow(calls []Call) float64 {
	if len(calls) == 0 {
		return 1
	}
	lo, hi := calls[0].T, calls[0].T
	for _, c := range calls {
		lo, hi = min(lo, c.T), max(hi, c.T)
	}
	return min(max((hi-lo)/40, 0.1), 10)
}
