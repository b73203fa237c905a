package driver

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

func TestDriverPercentileAndWindows(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {1, 1}} {
		if got := Percentile(sorted, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
	calls := []Call{{T: 0.1, Seconds: 0.004}, {T: 0.5, Seconds: 0.002}, {T: 0.9, Seconds: 0.010}, {T: 2.2, Seconds: 0.050}}
	ws := Windows(calls, 1)
	if len(ws) != 2 {
		t.Fatalf("windows %+v, want 2 (the empty second is left out)", ws)
	}
	if w := ws[0]; w.T != 0 || w.N != 3 || w.P50 != 0.004 || w.P90 != 0.010 || w.P99 != 0.010 {
		t.Errorf("first window %+v", w)
	}
	if w := ws[1]; w.T != 2 || w.N != 1 || w.P50 != 0.050 {
		t.Errorf("second window %+v", w)
	}
	if got := latencyWindow(calls); math.Abs(got-0.1) > 1e-9 {
		t.Errorf("latency window of a 2.1 s span: %v, want the 0.1 s floor", got)
	}
}

// TestDriverFloorRatios: pushd's figures over the floor's, and the scenario compared.
func TestDriverFloorRatios(t *testing.T) {
	if Ratio(84, 10.5) != 8 || Ratio(0, 9.7) != 0 || Ratio(84, 0) != 0 {
		t.Fatal("Ratio")
	}
	scs := []ScenarioReport{
		{Name: "channel", Sent: 5000, CPUMicrosPerDelivery: 72, DeliveriesPerSecond: 5000},
		{Name: "where", Sent: 6000, CPUMicrosPerDelivery: 80, DeliveriesPerSecond: 6000},
		{Name: ScenarioKill, Sent: 20000}, // its CPU spans two processes: not measured
		{Name: ScenarioMixed, Sent: 30000, CPUMicrosPerDelivery: 200},
	}
	c := compared(scs)
	if c == nil || c.Name != "where" {
		t.Fatalf("compared %+v, want where (most deliveries of the main app with CPU measured)", c)
	}
	f := &Floor{PushdCPUMicrosPerDelivery: c.CPUMicrosPerDelivery, PushdDeliveriesPerSecond: c.DeliveriesPerSecond, Runs: []FloorRun{
		{Tool: "h2load", CPUMicrosPerRequest: 10, RequestsPerSecond: 20000},
		{Tool: "go-http2", CPUMicrosPerRequest: 40, RequestsPerSecond: 12000},
		{Tool: "skipped", Skipped: "not installed"},
	}}
	f.setRatios()
	if r := f.Runs[0]; r.CPURatio != 8 || r.RateRatio != 0.3 {
		t.Errorf("h2load ratios %v, %v; want 8 and 0.3", r.CPURatio, r.RateRatio)
	}
	if r := f.Runs[1]; r.CPURatio != 2 || r.RateRatio != 0.5 {
		t.Errorf("go ratios %v, %v; want 2 and 0.5", r.CPURatio, r.RateRatio)
	}
	if r := f.Runs[2]; r.CPURatio != 0 || r.RateRatio != 0 {
		t.Errorf("a skipped floor has ratios %v, %v", r.CPURatio, r.RateRatio)
	}

	// h2load's mix: the two gateways' runs weighed by the scenario's deliveries, once each,
	// and only for a scenario that reached both and runs that were both measured.
	runs := func() []FloorRun {
		return []FloorRun{
			{Tool: "h2load", Gateway: floorAPNs, Requests: 3000, OK: 3000, Seconds: 0.15, CPUSeconds: 0.03}, // 20,000/s, 10 µs
			{Tool: "h2load", Gateway: floorFCM, Requests: 1000, OK: 1000, Seconds: 0.1, CPUSeconds: 0.006},  // 10,000/s, 6 µs
		}
	}
	f = &Floor{PushdCPUMicrosPerDelivery: 18, PushdDeliveriesPerSecond: 6000, FCMShare: 0.25, Runs: runs()}
	f.setFigures()
	f.setFigures() // again: the mix is replaced, not added twice
	if len(f.Runs) != 3 || f.Runs[2].Tool != floorMixed {
		t.Fatalf("runs after setFigures: %+v, want the two and one mix", f.Runs)
	}
	m := f.Runs[2]
	if math.Abs(m.CPUMicrosPerRequest-9) > 1e-9 || math.Abs(m.RequestsPerSecond-16000) > 1e-6 || math.Abs(m.CPURatio-2) > 1e-9 {
		t.Errorf("mix %.3f µs, %.1f/s, ratio %.3f; want 9 µs (0.75×10 + 0.25×6), 16,000/s, 2", m.CPUMicrosPerRequest, m.RequestsPerSecond, m.CPURatio)
	}
	if r := f.Runs[1]; r.RequestsPerSecond != 10000 || r.CPUMicrosPerRequest != 6 || r.CPURatio != 3 {
		t.Errorf("fcm run %+v, want 10,000/s, 6 µs, ratio 3", r)
	}
	for _, share := range []float64{0, 1} {
		f = &Floor{PushdCPUMicrosPerDelivery: 18, FCMShare: share, Runs: runs()}
		f.setFigures()
		if len(f.Runs) != 2 {
			t.Errorf("FCM share %v: %d runs, want no mix for a push to one gateway", share, len(f.Runs))
		}
	}
	f = &Floor{PushdCPUMicrosPerDelivery: 18, FCMShare: 0.5, Runs: runs()}
	f.Runs[1].OK = 10 // under nine tenths answered: not a floor
	f.setFigures()
	if len(f.Runs) != 2 || f.Runs[1].Skipped == "" {
		t.Errorf("runs %+v: want the short fcm run skipped and no mix", f.Runs)
	}
}

func TestDriverParseH2load(t *testing.T) {
	out := []byte(`starting benchmark...
spawning thread #0: 2 total client(s). 3000 total requests
TLS Protocol: TLSv1.3
Application protocol: h2
progress: 10% done

finished in 168.37ms, 17818.00 req/s, 1.23MB/s
requests: 3000 total, 3000 started, 3000 done, 2990 succeeded, 10 failed, 0 errored, 0 timeout
status codes: 2990 2xx, 0 3xx, 10 4xx, 0 5xx
`)
	ok, secs, err := ParseH2load(out)
	if err != nil || ok != 2990 || math.Abs(secs-0.16837) > 1e-9 {
		t.Fatalf("ParseH2load: %d, %v, %v", ok, secs, err)
	}
	ok, secs, err = ParseH2load(bytes.Replace(out, []byte("168.37ms"), []byte("2.5s"), 1))
	if err != nil || ok != 2990 || secs != 2.5 {
		t.Fatalf("ParseH2load in seconds: %d, %v, %v", ok, secs, err)
	}
	if _, _, err := ParseH2load([]byte("h2load: unknown option\n")); err == nil {
		t.Fatal("ParseH2load accepted output without a summary")
	}
}

// measuredReport is a report with everything the HTML report plots.
func measuredReport() *Report {
	r := sampleReport()
	r.Scenarios[0].ByChannel = map[string]push.Tally{"apns": {Targets: 13, Sent: 13}, "fcm": {Targets: 12, Sent: 12}}
	r.Scenarios[1].ByChannel = map[string]push.Tally{"apns": {Targets: 10, Sent: 8, InvalidTokens: 2}, "fcm": {Targets: 10, Sent: 8, InvalidTokens: 2}}
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		s.StartT, s.EndT = float64(2+2*i), float64(3+2*i)
		s.CPUSeconds, s.CPUMicrosPerDelivery = 0.01, 400
		s.RSSStart, s.RSSEnd, s.RSSPeak = 50<<20, 60<<20, 61<<20
		s.FirstDeliverySeconds, s.LastDeliverySeconds = 0.1, 0.8
	}
	r.SampleEvery = 0.1
	for i := range 60 {
		tt := float64(i) * 0.1
		n := int64(max(0, i-20)) * 3
		r.Timeline = append(r.Timeline, TimelinePoint{T: tt, CPUSeconds: tt / 2, RSS: int64(40+i) << 20, HWM: int64(40+i) << 20, PID: 7,
			Accepted: map[string]int64{"apns": n, "fcm": n / 2}})
	}
	r.PushCalls = []Call{{T: 2, Seconds: 0.004}, {T: 4, Seconds: 0.006}}
	r.PushLatencyWindow, r.UpsertLatencyWindow = 0.1, 0.1
	r.PushLatency = Windows(r.PushCalls, 0.1)
	r.UpsertLatency = Windows([]Call{{T: 0.2, Seconds: 0.01}, {T: 0.3, Seconds: 0.02}, {T: 1.1, Seconds: 0.03}}, 0.1)
	r.Pushd = &ProcessUse{Samples: 60, CPUSeconds: 3, RSSStart: 40 << 20, RSSEnd: 99 << 20, PeakRSS: 99 << 20}
	r.Floor = &Floor{Scenario: "channel", StartT: 5.5, PushdCPUMicrosPerDelivery: 400, PushdDeliveriesPerSecond: 50, FCMShare: 0.5, Connections: 2, Streams: 100,
		Runs: []FloorRun{{Tool: "h2load", Gateway: "apns", OK: 2000, Requests: 2000, Seconds: 0.1, CPUSeconds: 0.02},
			{Tool: "go-http2", Gateway: "apns", Skipped: "no -floor-go binary"},
			{Tool: "h2load", Gateway: "fcm", OK: 2000, Requests: 2000, Seconds: 0.125, CPUSeconds: 0.016}}}
	r.Floor.setFigures()
	r.Finish()
	return r
}

// TestDriverReportHTML: the HTML report holds every plot as inline SVG, the tables, the
// verdict and the JSON, and refers to nothing outside the file.
func TestDriverReportHTML(t *testing.T) {
	r := measuredReport()
	path := filepath.Join(t.TempDir(), "r.html")
	if err := r.WriteHTMLFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	figs, err := r.Figures()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		if f.Empty != "" || !strings.HasPrefix(string(f.SVG), "<svg") {
			t.Errorf("figure %q is not drawn: %q", f.Title, f.Empty)
		}
	}
	if n := strings.Count(out, "<svg"); n != len(figs) || n < 8 {
		t.Errorf("%d inline SVGs for %d figures, want one each and at least 8", n, len(figs))
	}
	for _, want := range []string{
		"Deliveries per second, per channel", "Push accept latency", "Accept → first and → last delivery",
		"pushd CPU", "pushd memory", "Per-channel counts", "CPU per delivery: pushd and the floor",
		`<span class="verdict ok">OK</span>`, "h2load apns", "40.00×", "no -floor-go binary", "h2load fcm", "h2load mix", "44.44×", "50% of its APNs and FCM deliveries went to FCM",
		">apns<", ">fcm<", // legend and table entries
		"&#34;upsertsPerSecond&#34;: 60", // the JSON report, escaped into the page
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	// Self-contained: no script, stylesheet, image, font or frame from anywhere else.
	external := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|@import|(src|href)\s*=|url\(\s*['"]?(https?:)?//`)
	if m := external.FindAllString(out, 5); m != nil {
		t.Errorf("HTML report refers to external assets: %q", m)
	}
	r.Scenarios[1].Verification = VerdictFail
	r.Finish()
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `<span class="verdict fail">FAIL</span>`) {
		t.Error("a failed run's HTML report does not say FAIL")
	}
}

// TestDriverReportHTMLWithoutSamples: a run that sampled nothing still gets a report that
// says why each plot is missing.
func TestDriverReportHTMLWithoutSamples(t *testing.T) {
	r := sampleReport()
	r.Pushd = &ProcessUse{Error: "pushd was not sampled: no -pushd-pid-file"}
	r.Finish()
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Nothing to plot: no simulator counted a delivery", "Nothing to plot: pushd was not sampled: no -pushd-pid-file", "No floor was measured"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}

// TestDriverReportTableResources: the table gives pushd's CPU and memory per scenario and
// the floor with its ratios.
func TestDriverReportTableResources(t *testing.T) {
	var b strings.Builder
	if err := measuredReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"pushd process (/proc, every 0.10s, 60 samples): 3.0s CPU, RSS 40 MB at start, 99 MB at end (growth +59 MB), peak 99 MB",
		"cpu-µs/delivery",
		"compared with scenario channel (50% of its APNs and FCM deliveries to FCM): pushd 400.0 µs CPU/delivery, 50 deliveries/s",
		"h2load apns    2000 requests in 0.10s = 20000/s, 10.0 µs CPU/request: pushd CPU/delivery = 40.00x the floor, pushd rate = 0.00x the floor",
		"go-http2 apns  no -floor-go binary",
		"h2load fcm     2000 requests in 0.12s = 16000/s, 8.0 µs CPU/request: pushd CPU/delivery = 50.00x the floor",
		"h2load mix     the scenario's mix of the two h2load runs = 17778/s, 9.0 µs CPU/request: pushd CPU/delivery = 44.44x the floor",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
