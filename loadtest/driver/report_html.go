package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"maps"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pushd/pushd/push"
)

// The HTML report is one self-contained file: the plots are SVG drawn by gonum/plot and
// inlined, the styles inline, no script, no external asset; the JSON report is inlined too.

// plotWidth and plotHeight are every plot's size.
const (
	plotWidth  = 7.5 * vg.Inch
	plotHeight = 3 * vg.Inch
)

// rateWindow is the width, in seconds, over which the rate plots (deliveries, CPU) average:
// about 80 windows over the run, none shorter than the sampling interval.
func (r *Report) rateWindow() float64 {
	span := 0.0
	if n := len(r.Timeline); n > 0 {
		span = r.Timeline[n-1].T - r.Timeline[0].T
	}
	return max(r.SampleEvery, span/80)
}

// Figure is one plot of the HTML report.
type Figure struct {
	Title string
	Note  string
	SVG   template.HTML // inline <svg>; empty with Empty set
	Empty string        // why there is nothing to plot
}

// Figures draws the report's plots, in the order the HTML shows them.
func (r *Report) Figures() ([]Figure, error) {
	builders := []func() (Figure, error){
		r.deliveriesFigure, r.pushLatencyFigure, r.deliveryTimesFigure, r.cpuFigure, r.rssFigure,
		r.channelsFigure, r.floorFigure, r.upsertLatencyFigure,
	}
	var out []Figure
	for _, b := range builders {
		f, err := b()
		if err != nil {
			return nil, fmt.Errorf("cannot draw %q: %w", f.Title, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// sans sets f to Liberation Sans: gonum/plot's default face is Liberation Serif, and the
// report's text is sans serif (set per plot: plot.DefaultFont is the library's global).
func sans(f *font.Font) { f.Typeface, f.Variant = "Liberation", "Sans" }

func newPlot(x, y string) *plot.Plot {
	p := plot.New()
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		sans(f)
	}
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(18), -vg.Points(4)
	p.Add(plotter.NewGrid())
	return p
}

// headroom raises the y axis so that the legend (entries lines, top left) sits above the data.
func headroom(p *plot.Plot, entries int) {
	p.Y.Min = min(p.Y.Min, 0)
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	// A legend line is about 11 points of the plot's ~190 points of data height.
	share := min(float64(entries)*11/190, 0.6)
	p.Y.Max = p.Y.Max / (1 - share)
}

// nominal sets n bar positions with half a bar slot of margin on each side.
func nominal(p *plot.Plot, names []string) {
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
}

// scenarioMarks draws each scenario's start, and the floor's, as a dotted vertical line
// labelled with its name.
func (r *Report) scenarioMarks(p *plot.Plot, seeding bool) error {
	top := p.Y.Max
	var pts plotter.XYs
	var labels []string
	type mark struct {
		t    float64
		name string
	}
	var marks []mark
	if seeding && len(r.UpsertLatency) > 0 {
		marks = append(marks, mark{r.UpsertLatency[0].T, "seeding"})
	}
	for _, s := range r.Scenarios {
		marks = append(marks, mark{s.StartT, s.Name})
	}
	if r.Floor != nil && r.Floor.StartT > 0 {
		marks = append(marks, mark{r.Floor.StartT, "floor (h2load, go-http2)"})
	}
	for _, s := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: s.t, Y: p.Y.Min}, {X: s.t, Y: top}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes, l.Width = color.Gray{Y: 150}, []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(0.7)
		p.Add(l)
		pts = append(pts, plotter.XY{X: s.t, Y: top})
		labels = append(labels, s.name)
	}
	if len(pts) == 0 {
		return nil
	}
	ls, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return err
	}
	for i := range ls.TextStyle {
		sans(&ls.TextStyle[i].Font)
		ls.TextStyle[i].Font.Size = vg.Points(8)
		ls.TextStyle[i].Rotation = -1.5707963267948966 // read downwards from the top
		ls.TextStyle[i].XAlign, ls.TextStyle[i].YAlign = 0.1, 0
		ls.TextStyle[i].Color = color.Gray{Y: 90}
	}
	p.Add(ls)
	return nil
}

// inline renders p as an <svg> element.
func inline(p *plot.Plot) (template.HTML, error) {
	wt, err := p.WriterTo(plotWidth, plotHeight, "svg")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", err
	}
	svg := b.Bytes()
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:] // without the XML prolog and comment: the element goes inline
	}
	return template.HTML(svg), nil // gonum's own output: numbers and our labels, escaped by svgo
}

func figure(title, note string, p *plot.Plot) (Figure, error) {
	f := Figure{Title: title, Note: note}
	var err error
	f.SVG, err = inline(p)
	return f, err
}

// channelRates is each simulator's deliveries per second over windows of rateWindow seconds.
func (r *Report) channelRates() map[string]plotter.XYs {
	out := map[string]plotter.XYs{}
	win := r.rateWindow()
	var prev *TimelinePoint
	for i := range r.Timeline {
		p := &r.Timeline[i]
		if p.Accepted == nil {
			continue
		}
		if prev == nil {
			prev = p
			continue
		}
		dt := p.T - prev.T
		if dt < win*0.999 {
			continue
		}
		for name, n := range p.Accepted {
			out[name] = append(out[name], plotter.XY{X: (p.T + prev.T) / 2, Y: float64(n-prev.Accepted[name]) / dt})
		}
		prev = p
	}
	for name, xys := range out {
		if !slices.ContainsFunc(xys, func(p plotter.XY) bool { return p.Y > 0 }) {
			delete(out, name)
		}
	}
	return out
}

func (r *Report) deliveriesFigure() (Figure, error) {
	const title = "Deliveries per second, per channel"
	rates := r.channelRates()
	if len(rates) == 0 {
		return Figure{Title: title, Empty: "no simulator counted a delivery"}, nil
	}
	p := newPlot("seconds since the start of the run", "deliveries/s")
	var args []any
	for _, name := range slices.Sorted(maps.Keys(rates)) {
		args = append(args, name, rates[name])
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return Figure{Title: title}, err
	}
	headroom(p, len(rates))
	if err := r.scenarioMarks(p, false); err != nil {
		return Figure{Title: title}, err
	}
	if len(r.Scenarios) > 0 {
		// Nothing is delivered while seeding: the plot starts just before the first push.
		p.X.Min = max(p.X.Min, r.Scenarios[0].StartT-r.rateWindow()*5)
	}
	return figure(title, fmt.Sprintf("accepted answers of each simulator, averaged over %.2fs; dotted lines: each scenario's first push call, and the floor's requests (to the APNs simulator); the own channel is not a simulator and is left out", r.rateWindow()), p)
}

func latencyLines(p *plot.Plot, ws []LatencyWindow, width float64) error {
	var p50, p90, p99 plotter.XYs
	for _, w := range ws {
		x := w.T + width/2
		p50 = append(p50, plotter.XY{X: x, Y: w.P50 * 1e3})
		p90 = append(p90, plotter.XY{X: x, Y: w.P90 * 1e3})
		p99 = append(p99, plotter.XY{X: x, Y: w.P99 * 1e3})
	}
	if err := plotutil.AddLinePoints(p, "p50", p50, "p90", p90, "p99", p99); err != nil {
		return err
	}
	headroom(p, 3)
	return nil
}

func (r *Report) pushLatencyFigure() (Figure, error) {
	const title = "Push accept latency (POST /1.1/push and /1.1/push/devices)"
	if len(r.PushLatency) == 0 {
		return Figure{Title: title, Empty: "no push call was made"}, nil
	}
	p := newPlot("seconds since the start of the run", "milliseconds")
	if err := latencyLines(p, r.PushLatency, r.PushLatencyWindow); err != nil {
		return Figure{Title: title}, err
	}
	return figure(title, fmt.Sprintf("%d push calls; percentiles of the calls started in each %.2fs, from the driver's side (retries included)", len(r.PushCalls), r.PushLatencyWindow), p)
}

func (r *Report) upsertLatencyFigure() (Figure, error) {
	const title = "Installation upsert latency while seeding (POST /1.1/installations)"
	if len(r.UpsertLatency) == 0 {
		return Figure{Title: title, Empty: "no installation was created"}, nil
	}
	p := newPlot("seconds since the start of the run", "milliseconds")
	if err := latencyLines(p, r.UpsertLatency, r.UpsertLatencyWindow); err != nil {
		return Figure{Title: title}, err
	}
	return figure(title, fmt.Sprintf("%d upserts, %d in flight; percentiles of the upserts started in each %.2fs", r.Upserts, r.Concurrency, r.UpsertLatencyWindow), p)
}

func (r *Report) deliveryTimesFigure() (Figure, error) {
	const title = "Accept → first and → last delivery, per scenario"
	var names []string
	var first, last plotter.Values
	for _, s := range r.Scenarios {
		if s.LastDeliverySeconds == 0 && s.FirstDeliverySeconds == 0 {
			continue
		}
		names = append(names, s.Name)
		first = append(first, s.FirstDeliverySeconds)
		last = append(last, s.LastDeliverySeconds)
	}
	if len(names) == 0 {
		return Figure{Title: title, Empty: "no scenario delivered to a simulator"}, nil
	}
	p := newPlot("", "seconds")
	w := vg.Points(18)
	b1, err := plotter.NewBarChart(first, w)
	if err != nil {
		return Figure{Title: title}, err
	}
	b2, err := plotter.NewBarChart(last, w)
	if err != nil {
		return Figure{Title: title}, err
	}
	b1.Color, b1.Offset = plotutil.Color(0), -w/2
	b2.Color, b2.Offset = plotutil.Color(1), w/2
	b1.LineStyle.Width, b2.LineStyle.Width = 0, 0
	p.Add(b1, b2)
	p.Legend.Add("accept → first delivery", b1)
	p.Legend.Add("accept → last delivery", b2)
	nominal(p, names)
	headroom(p, 2)
	return figure(title, fmt.Sprintf("from the first accepted push call of the scenario to the simulators' first and last acceptance; resolution %.2fs (the sampling interval)", r.SampleEvery), p)
}

func (r *Report) cpuFigure() (Figure, error) {
	const title = "pushd CPU"
	var xys plotter.XYs
	var prev *TimelinePoint
	win := r.rateWindow()
	for i := range r.Timeline {
		p := &r.Timeline[i]
		if p.PID == 0 {
			continue
		}
		if prev != nil && p.PID == prev.PID && p.T-prev.T >= win*0.999 {
			xys = append(xys, plotter.XY{X: (p.T + prev.T) / 2, Y: 100 * (p.CPUSeconds - prev.CPUSeconds) / (p.T - prev.T)})
			prev = p
		}
		if prev == nil || p.PID != prev.PID {
			prev = p
		}
	}
	if len(xys) == 0 {
		return Figure{Title: title, Empty: r.procNote()}, nil
	}
	p := newPlot("seconds since the start of the run", "% of one core")
	if err := plotutil.AddLines(p, "pushd user+system", xys); err != nil {
		return Figure{Title: title}, err
	}
	headroom(p, 1)
	if err := r.scenarioMarks(p, true); err != nil {
		return Figure{Title: title}, err
	}
	return figure(title, fmt.Sprintf("pushd's own process (/proc/<pid>/stat), averaged over %.2fs; the simulators run in another process; dotted lines: each scenario's first push call", win), p)
}

func (r *Report) procNote() string {
	if r.Pushd != nil && r.Pushd.Error != "" {
		return r.Pushd.Error
	}
	return "pushd was not sampled"
}

func (r *Report) rssFigure() (Figure, error) {
	const title = "pushd memory"
	var rss, hwm plotter.XYs
	for _, p := range r.Timeline {
		if p.PID == 0 {
			continue
		}
		rss = append(rss, plotter.XY{X: p.T, Y: mb(p.RSS)})
		hwm = append(hwm, plotter.XY{X: p.T, Y: mb(p.HWM)})
	}
	if len(rss) == 0 {
		return Figure{Title: title, Empty: r.procNote()}, nil
	}
	p := newPlot("seconds since the start of the run", "MB")
	if err := plotutil.AddLines(p, "RSS (VmRSS)", rss, "peak RSS (VmHWM)", hwm); err != nil {
		return Figure{Title: title}, err
	}
	headroom(p, 2)
	if err := r.scenarioMarks(p, true); err != nil {
		return Figure{Title: title}, err
	}
	return figure(title, "pushd's own process (/proc/<pid>/status)", p)
}

func (r *Report) channelsFigure() (Figure, error) {
	const title = "Per-channel counts, all scenarios"
	tot := map[string]*[3]float64{}
	for _, s := range r.Scenarios {
		for ch, t := range s.ByChannel {
			if tot[ch] == nil {
				tot[ch] = &[3]float64{}
			}
			tot[ch][0] += float64(t.Sent)
			tot[ch][1] += float64(t.Failed)
			tot[ch][2] += float64(t.InvalidTokens)
		}
	}
	if len(tot) == 0 {
		return Figure{Title: title, Empty: "no push record counted a target"}, nil
	}
	names := slices.Sorted(maps.Keys(tot))
	p := newPlot("", "targets")
	w := vg.Points(14)
	for k, label := range []string{"sent", "failed", "invalid tokens"} {
		var vs plotter.Values
		for _, n := range names {
			vs = append(vs, tot[n][k])
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return Figure{Title: title}, err
		}
		b.Color, b.Offset, b.LineStyle.Width = plotutil.Color(k), vg.Length(k-1)*w, 0
		p.Add(b)
		p.Legend.Add(label, b)
	}
	nominal(p, names)
	headroom(p, 3)
	return figure(title, "the push records' counts per delivery channel, summed over the scenarios", p)
}

func (r *Report) floorFigure() (Figure, error) {
	const title = "CPU per delivery: pushd and the floor"
	f := r.Floor
	if f == nil {
		return Figure{Title: title, Empty: "no floor was measured"}, nil
	}
	names := []string{"pushd (" + f.Scenario + ")"}
	vs := plotter.Values{f.PushdCPUMicrosPerDelivery}
	for _, fr := range f.Runs {
		if fr.CPUMicrosPerRequest > 0 {
			names = append(names, fr.Name())
			vs = append(vs, fr.CPUMicrosPerRequest)
		}
	}
	p := newPlot("", "CPU µs per delivery")
	b, err := plotter.NewBarChart(vs, vg.Points(30))
	if err != nil {
		return Figure{Title: title}, err
	}
	b.Color, b.LineStyle.Width = plotutil.Color(0), 0
	p.Add(b)
	nominal(p, names)
	headroom(p, 1)
	return figure(title, fmt.Sprintf("the floor: the same request shapes to the same APNs and FCM simulators, %d connections × %d streams, each tool in its own process; h2load mix weighs the two by the scenario's deliveries", f.Connections, f.Streams), p)
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"mb":  mb,
	"pct": func(share float64) float64 { return 100 * share },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pushd load test {{.R.StartedAt.Format "2006-01-02 15:04:05Z"}}</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #1d1d1f; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 18px; margin: 28px 0 6px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.verdict { display: inline-block; padding: 6px 14px; border-radius: 6px; font-weight: 600; color: #fff; }
.ok { background: #1f7a3a; } .fail { background: #b3261e; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; font-weight: 600; }
table.wide { font-size: 13px; } table.wide td { white-space: nowrap; }
.note { color: #555; font-size: 13px; margin: 2px 0 6px; }
.problems { color: #b3261e; }
figure { margin: 10px 0 22px; }
figure svg { width: 100%; max-width: 960px; height: auto; }
svg text { font-family: "Liberation Sans", Arial, Helvetica, "DejaVu Sans", sans-serif !important; }
pre { background: #f6f6f6; padding: 10px; overflow: auto; max-height: 480px; font-size: 12px; }
</style>
</head>
<body>
<h1>pushd load test</h1>
<p class="note">{{.R.StartedAt.Format "2006-01-02 15:04:05 MST"}} · pushd {{.R.PushdURL}} · app {{.R.AppID}}{{if .R.HybridAppID}} · hybrid app {{.R.HybridAppID}}{{end}}</p>
<p>Ledger verdict: {{if .R.OK}}<span class="verdict ok">OK</span> every targeted token received exactly one push per scenario (at least one in a kill scenario){{else}}<span class="verdict fail">FAIL</span>{{end}}</p>
{{if .R.Error}}<p class="problems">run stopped: {{.R.Error}}</p>{{end}}
<p>{{.R.Installations}} installations ({{.R.IOS}} iOS, {{.R.Android}} Android/FCM){{if .R.InvalidCohort}} + invalid-token cohort {{.R.InvalidCohort}} ({{.R.DeadTokens}} dead tokens){{end}};
{{.R.Upserts}} upserts in {{printf "%.2f" .R.UpsertSeconds}}s = {{printf "%.0f" .R.UpsertsPerSecond}}/s ({{.R.Concurrency}} in flight, {{.R.Retries}} retries).</p>

<h2>Scenarios</h2>
<table class="wide">
<tr><th>scenario</th><th>records</th><th>targets</th><th>sent</th><th>failed</th><th>invalid</th><th>seconds</th><th>deliveries/s</th><th>pushd CPU s</th><th>CPU µs/delivery</th><th>RSS start MB</th><th>RSS end MB</th><th>RSS peak MB</th><th>accept → first s</th><th>accept → last s</th><th>ledger</th></tr>
{{range .R.Scenarios}}<tr><td>{{.Name}}</td><td>{{len .Records}}</td><td>{{.Targets}}</td><td>{{.Sent}}</td><td>{{.Failed}}</td><td>{{.Invalid}}</td><td>{{printf "%.2f" .Seconds}}</td><td>{{printf "%.0f" .DeliveriesPerSecond}}</td><td>{{printf "%.2f" .CPUSeconds}}</td><td>{{printf "%.1f" .CPUMicrosPerDelivery}}</td><td>{{printf "%.0f" (mb .RSSStart)}}</td><td>{{printf "%.0f" (mb .RSSEnd)}}</td><td>{{printf "%.0f" (mb .RSSPeak)}}</td><td>{{printf "%.2f" .FirstDeliverySeconds}}</td><td>{{printf "%.2f" .LastDeliverySeconds}}</td><td class="{{if eq .Verification "OK"}}{{else}}problems{{end}}">{{.Verification}}</td></tr>
{{end}}</table>
{{range .R.Scenarios}}{{$n := .Name}}{{range .Problems}}<p class="problems">{{$n}}: {{.}}</p>{{end}}{{end}}

<h2>Per-channel counts</h2>
<table>
<tr><th>scenario</th><th>channel</th><th>targets</th><th>sent</th><th>failed</th><th>invalid tokens</th><th>arrivals</th></tr>
{{range .Channels}}<tr><td>{{.Scenario}}</td><td>{{.Channel}}</td><td>{{.T.Targets}}</td><td>{{.T.Sent}}</td><td>{{.T.Failed}}</td><td>{{.T.InvalidTokens}}</td><td>{{.T.Arrivals}}</td></tr>
{{end}}</table>

<h2>pushd and the floor</h2>
{{with .R.Pushd}}{{if .Error}}<p class="note">{{.Error}}</p>{{else}}<p>pushd's process over the run ({{.Samples}} samples every {{printf "%.2f" $.R.SampleEvery}}s): {{printf "%.1f" .CPUSeconds}}s CPU; RSS {{printf "%.0f" (mb .RSSStart)}} MB at start, {{printf "%.0f" (mb .RSSEnd)}} MB at end, peak {{printf "%.0f" (mb .PeakRSS)}} MB{{if .Restarts}} ({{.Restarts}} restarts){{end}}.</p>{{end}}{{end}}
{{with .R.Floor}}<p>Compared with scenario <b>{{.Scenario}}</b>: pushd {{printf "%.1f" .PushdCPUMicrosPerDelivery}} µs CPU per delivery, {{printf "%.0f" .PushdDeliveriesPerSecond}} deliveries/s. {{printf "%.0f" (pct .FCMShare)}}% of its APNs and FCM deliveries went to FCM. The floor sends the same request shapes to the same APNs and FCM simulators ({{.Connections}} connections × {{.Streams}} streams); h2load mix weighs the two h2load runs by the scenario's deliveries.</p>
<table>
<tr><th>floor</th><th>requests (200)</th><th>seconds</th><th>requests/s</th><th>CPU µs/request</th><th>pushd CPU / floor</th><th>pushd rate / floor</th><th>note</th></tr>
{{range .Runs}}<tr><td>{{.Name}}</td><td>{{.OK}}</td><td>{{printf "%.2f" .Seconds}}</td><td>{{printf "%.0f" .RequestsPerSecond}}</td><td>{{printf "%.1f" .CPUMicrosPerRequest}}</td><td>{{if .CPURatio}}{{printf "%.2f×" .CPURatio}}{{end}}</td><td>{{if .RateRatio}}{{printf "%.2f×" .RateRatio}}{{end}}</td><td>{{.Skipped}}</td></tr>
{{end}}</table>{{else}}<p class="note">No floor was measured.</p>{{end}}

<h2>Plots</h2>
{{range .Figures}}<figure>
<figcaption><b>{{.Title}}</b>{{if .Note}}<div class="note">{{.Note}}</div>{{end}}</figcaption>
{{if .Empty}}<p class="note">Nothing to plot: {{.Empty}}.</p>{{else}}{{.SVG}}{{end}}
</figure>
{{end}}
<h2>JSON report</h2>
<details><summary>loadtest-report.json ({{len .JSON}} bytes)</summary><pre>{{.JSON}}</pre></details>
</body>
</html>
`))

type channelRow struct {
	Scenario, Channel string
	T                 push.Tally
}

// WriteHTML writes the self-contained HTML report.
func (r *Report) WriteHTML(w io.Writer) error {
	figs, err := r.Figures()
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the report: %w", err)
	}
	var rows []channelRow
	for _, s := range r.Scenarios {
		for _, ch := range slices.Sorted(maps.Keys(s.ByChannel)) {
			rows = append(rows, channelRow{s.Name, ch, s.ByChannel[ch]})
		}
	}
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, map[string]any{"R": r, "Figures": figs, "JSON": string(js), "Channels": rows}); err != nil {
		return fmt.Errorf("cannot render the HTML report: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("cannot write the HTML report: %w", err)
	}
	return nil
}

// WriteHTMLFile writes the HTML report to path.
func (r *Report) WriteHTMLFile(path string) error {
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write the HTML report to %s: %w", path, err)
	}
	return nil
}
