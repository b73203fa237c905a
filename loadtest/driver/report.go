package driver

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pushd/pushd/push"
)

// Report is the outcome of one run, written as a table and as JSON.
type Report struct {
	PushdURL         string    `json:"pushd"`
	StartedAt        time.Time `json:"startedAt"`
	AppID            string    `json:"appId,omitempty"`
	HybridAppID      string    `json:"hybridAppId,omitempty"` // the China edition app of the direct and mixed scenarios
	Installations    int       `json:"installations"`         // main population
	IOS              int       `json:"ios"`
	Android          int       `json:"android"`
	InvalidCohort    int       `json:"invalidCohort,omitempty"` // extra installations of the invalid-token cohort
	DeadTokens       int       `json:"deadTokens,omitempty"`
	OwnChannel       int       `json:"ownChannel,omitempty"` // hybrid app: own-channel devices of the direct scenario
	Mixed            int       `json:"mixed,omitempty"`      // hybrid app: devices of the mixed scenario
	QuotaFill        int       `json:"quotaFill,omitempty"`  // hybrid app: devices of the quota-fill scenario (the simulator's day quota)
	Quota            int       `json:"quota,omitempty"`      // hybrid app: devices of the quota scenario (beyond the quota)
	Concurrency      int       `json:"concurrency"`
	Upserts          int       `json:"upserts"` // installations created (main + cohort)
	UpsertSeconds    float64   `json:"upsertSeconds"`
	UpsertsPerSecond float64   `json:"upsertsPerSecond"`
	Retries          int64     `json:"retries"` // requests retried after 429/503/transport errors
	// Settle is the wait after the seed for pushd to go quiet (settle.go).
	Settle    *Settle          `json:"settle,omitempty"`
	Scenarios []ScenarioReport `json:"scenarios"`
	OK        bool             `json:"ok"`
	Error     string           `json:"error,omitempty"` // why the run stopped early

	// Pushd is pushd's process over the run (sampled from /proc every SampleEvery seconds);
	// Floor the floor measured against the APNs and FCM simulators after the scenarios.
	Pushd *ProcessUse `json:"pushdProcess,omitempty"`
	Floor *Floor      `json:"floor,omitempty"`
	// Latency is the latency comparison (--latency-compare).
	Latency     *LatencyCompare `json:"latencyCompare,omitempty"`
	SampleEvery float64         `json:"sampleEvery,omitempty"`
	// Timeline is every sample; PushCalls every push call's accept latency; the latency
	// windows are the percentiles per second of the push calls and installation upserts.
	Timeline            []TimelinePoint `json:"timeline,omitempty"`
	PushCalls           []Call          `json:"pushCalls,omitempty"`
	PushLatency         []LatencyWindow `json:"pushLatency,omitempty"`
	PushLatencyWindow   float64         `json:"pushLatencyWindow,omitempty"` // seconds
	UpsertLatency       []LatencyWindow `json:"upsertLatency,omitempty"`
	UpsertLatencyWindow float64         `json:"upsertLatencyWindow,omitempty"`
}

// ProcessUse is pushd's CPU and memory over the run.
type ProcessUse struct {
	Samples    int     `json:"samples"`
	CPUSeconds float64 `json:"cpuSeconds"` // user+system since the (last) process started
	RSSStart   int64   `json:"rssStart"`   // bytes, first sample (before seeding)
	RSSEnd     int64   `json:"rssEnd"`
	PeakRSS    int64   `json:"peakRss"`  // VmHWM
	Restarts   int     `json:"restarts"` // pid changes (the kill scenario)
	// Build is how the (last) process's executable was built (procmon.Build): Go version,
	// CGO_ENABLED, GOAMD64, commit.
	Build string `json:"build,omitempty"`
	Error string `json:"error,omitempty"`
}

// ScenarioReport is one push scenario's figures and verdict.
type ScenarioReport struct {
	Name            string   `json:"name"`
	Records         []string `json:"records"` // push record objectIds
	ExpectedTargets int      `json:"expectedTargets"`
	Targets         int64    `json:"targets"`
	Sent            int64    `json:"sent"`
	Failed          int64    `json:"failed"`
	Expired         int64    `json:"expired"`
	Invalid         int64    `json:"invalid"`
	// Seconds is from the first push call to the observation of the last record done;
	// ServerSeconds is the records' own span (earliest createdAt to latest updatedAt).
	Seconds             float64 `json:"seconds"`
	ServerSeconds       float64 `json:"serverSeconds"`
	DeliveriesPerSecond float64 `json:"deliveriesPerSecond"` // sent / Seconds
	// Kill scenario: pushd SIGKILLs (and restarts), the simulators' accepted count when the
	// kill was sent, and the acceptances beyond the first per target (rate: per target).
	Kills            int     `json:"kills,omitempty"`
	KilledAtAccepted int64   `json:"killedAtAccepted,omitempty"`
	Duplicates       int64   `json:"duplicates,omitempty"`
	DuplicateRate    float64 `json:"duplicateRate,omitempty"`
	// ByChannel is the records' tallies per delivery channel (arrivals on the own channel).
	ByChannel map[string]push.Tally `json:"byChannel,omitempty"`
	// Own-channel targets: devices (of them offline during the push, on the original's
	// protocol), the records' arrivals and lcSuccesses, and the seconds from the push's end
	// until every device acked and the records counted the arrivals.
	OwnDevices  int     `json:"ownDevices,omitempty"`
	OwnOffline  int     `json:"ownOffline,omitempty"`
	OwnLC       int     `json:"ownLC,omitempty"`
	Arrivals    int64   `json:"arrivals,omitempty"`
	LCSuccesses int64   `json:"lcSuccesses,omitempty"`
	OwnSeconds  float64 `json:"ownSeconds,omitempty"`
	// Seconds since the run started at the first push call and when the last record was done.
	StartT float64 `json:"startT"`
	EndT   float64 `json:"endT"`
	// pushd's process during the scenario (from the first push call until every record was
	// done; unset when the process changed): CPU, CPU per sent delivery, RSS at both ends and
	// the highest RSS sampled.
	CPUSeconds           float64 `json:"cpuSeconds,omitempty"`
	CPUMicrosPerDelivery float64 `json:"cpuMicrosPerDelivery,omitempty"`
	// ReadsPerDelivery and WritesPerDelivery are pushd's read and write system calls over the
	// push per delivery (/proc/<pid>/io): how many answers a read brings and how many requests
	// a write carries, where the gateways' answer pattern shows in pushd's CPU.
	Reads             int64   `json:"reads,omitempty"`  // over the push
	Writes            int64   `json:"writes,omitempty"` // over the push
	ReadsPerDelivery  float64 `json:"readsPerDelivery,omitempty"`
	WritesPerDelivery float64 `json:"writesPerDelivery,omitempty"`
	RSSStart          int64   `json:"rssStart,omitempty"`
	RSSEnd            int64   `json:"rssEnd,omitempty"`
	RSSPeak           int64   `json:"rssPeak,omitempty"`
	// From the first accepted push call to the simulators' first and last acceptance of the
	// scenario (resolution: the sample interval; 0 when no simulator delivery was expected).
	FirstDeliverySeconds float64  `json:"firstDeliverySeconds,omitempty"`
	LastDeliverySeconds  float64  `json:"lastDeliverySeconds,omitempty"`
	Verification         string   `json:"verification"` // OK or FAIL
	Problems             []string `json:"problems,omitempty"`
}

// Verdicts.
const (
	VerdictOK   = "OK"
	VerdictFail = "FAIL"
)

func rate(n int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// Finish sets OK: every scenario verified and no run error.
func (r *Report) Finish() {
	r.OK = r.Error == "" && len(r.Scenarios) > 0
	for _, s := range r.Scenarios {
		if s.Verification != VerdictOK {
			r.OK = false
		}
	}
}

// WriteTable writes the human-readable report.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\npushd load test against %s (app %s)\n", r.PushdURL, r.AppID)
	fmt.Fprintf(&b, "installations: %d (%d iOS, %d Android/FCM)", r.Installations, r.IOS, r.Android)
	if r.InvalidCohort > 0 {
		fmt.Fprintf(&b, " + invalid-token cohort %d (%d dead tokens)", r.InvalidCohort, r.DeadTokens)
	}
	if r.HybridAppID != "" {
		fmt.Fprintf(&b, "\nhybrid app %s (china edition): %d own-channel devices (direct scenario), %d devices of the mixed scenario",
			r.HybridAppID, r.OwnChannel, r.Mixed)
	}
	fmt.Fprintf(&b, "\nupserts: %d in %.2fs = %.0f upserts/s (concurrency %d, %d retries)\n",
		r.Upserts, r.UpsertSeconds, r.UpsertsPerSecond, r.Concurrency, r.Retries)
	if st := r.Settle; st != nil {
		switch {
		case st.Skipped != "":
			fmt.Fprintf(&b, "settle: skipped (%s)\n", st.Skipped)
		case st.Quiet:
			fmt.Fprintf(&b, "settle: pushd quiet %.1fs after the seed (%.1f%% of a core), then the scenarios\n", st.Seconds, 100*st.Share)
		default:
			fmt.Fprintf(&b, "settle: pushd still at %.0f%% of a core %.1fs after the seed; the scenarios started anyway\n", 100*st.Share, st.Seconds)
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\trecords\ttargets\tsent\tfailed\tinvalid\tseconds\tdeliveries/s\tverification\t")
	for _, s := range r.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.0f\t%s\t\n", s.Name, len(s.Records), s.Targets, s.Sent,
			s.Failed, s.Invalid, s.Seconds, s.DeliveriesPerSecond, s.Verification)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot format the report: %w", err)
	}
	if err := r.writeResources(&b); err != nil {
		return err
	}
	r.Latency.write(&b)
	for _, s := range r.Scenarios {
		s.writeChannels(&b)
	}
	for _, s := range r.Scenarios {
		if s.Kills > 0 {
			fmt.Fprintf(&b, "  %s: pushd SIGKILLed at %d accepted (%.1f%% of %d targets) and restarted: %d duplicates (%.3f%%)\n",
				s.Name, s.KilledAtAccepted, 100*float64(s.KilledAtAccepted)/float64(max(s.ExpectedTargets, 1)),
				s.ExpectedTargets, s.Duplicates, 100*s.DuplicateRate)
		}
	}
	for _, s := range r.Scenarios {
		for _, p := range s.Problems {
			fmt.Fprintf(&b, "  %s: %s\n", s.Name, p)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "run stopped: %s\n", r.Error)
	}
	verdict := "OK: every targeted token received exactly one push per scenario (at least one in a kill scenario)"
	if !r.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "\nverification: %s\n", verdict)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}

// WriteJSONFile writes the report as indented JSON to path.
func (r *Report) WriteJSONFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write the report to %s: %w", path, err)
	}
	return nil
}

// writeChannels writes a scenario's per-channel figures when it spans several channels or
// the own channel.
func (s *ScenarioReport) writeChannels(b *strings.Builder) {
	if len(s.ByChannel) < 2 && s.OwnDevices == 0 {
		return
	}
	for _, ch := range slices.Sorted(maps.Keys(s.ByChannel)) {
		t := s.ByChannel[ch]
		fmt.Fprintf(b, "  %s: channel %-6s %d targets, %d sent, %d failed, %d invalid", s.Name, ch, t.Targets, t.Sent, t.Failed, t.InvalidTokens)
		if ch == push.ChannelDirect {
			fmt.Fprintf(b, ", %d arrivals", t.Arrivals)
		}
		b.WriteString("\n")
	}
	if s.OwnDevices > 0 {
		fmt.Fprintf(b, "  %s: own channel: %d devices (%d on %s, %d offline until the push was done); lcSuccesses %d, arrivals %d; %.2fs from the push's end to every ack counted\n",
			s.Name, s.OwnDevices, s.OwnLC, ProtoLC, s.OwnOffline, s.LCSuccesses, s.Arrivals, s.OwnSeconds)
	}
}

// mb is bytes in MB.
func mb(n int64) float64 { return float64(n) / (1 << 20) }

// writeResources writes pushd's CPU and memory per scenario and the floor with the ratios.
func (r *Report) writeResources(b *strings.Builder) error {
	if p := r.Pushd; p != nil {
		if p.Error != "" {
			fmt.Fprintf(b, "\npushd process: %s\n", p.Error)
		} else {
			fmt.Fprintf(b, "\npushd process (/proc, every %.2fs, %d samples): %.1fs CPU, RSS %.0f MB at start, %.0f MB at end (growth %+.0f MB), peak %.0f MB",
				r.SampleEvery, p.Samples, p.CPUSeconds, mb(p.RSSStart), mb(p.RSSEnd), mb(p.RSSEnd-p.RSSStart), mb(p.PeakRSS))
			if p.Restarts > 0 {
				fmt.Fprintf(b, " (%d restarts: figures of the last process)", p.Restarts)
			}
			b.WriteString("\n")
		}
		if p.Build != "" {
			fmt.Fprintf(b, "pushd build: %s\n", p.Build)
		}
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcpu-s\tcpu-µs/delivery\trss-start-MB\trss-end-MB\trss-peak-MB\taccept→first-s\taccept→last-s\treads/delivery\twrites/delivery\t")
	rows := 0
	for _, s := range r.Scenarios {
		if s.CPUSeconds == 0 && s.FirstDeliverySeconds == 0 && s.LastDeliverySeconds == 0 {
			continue
		}
		rows++
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%s\t\n", s.Name, s.CPUSeconds, s.CPUMicrosPerDelivery,
			mb(s.RSSStart), mb(s.RSSEnd), mb(s.RSSPeak), s.FirstDeliverySeconds, s.LastDeliverySeconds,
			perDelivery(s.ReadsPerDelivery), perDelivery(s.WritesPerDelivery))
	}
	if rows > 0 {
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("cannot format the report: %w", err)
		}
	}
	if f := r.Floor; f != nil {
		fmt.Fprintf(b, "floor against the same simulators (%d connections x %d streams), compared with scenario %s (%.0f%% of its APNs and FCM deliveries to FCM): pushd %.1f µs CPU/delivery, %.0f deliveries/s\n",
			f.Connections, f.Streams, f.Scenario, 100*f.FCMShare, f.PushdCPUMicrosPerDelivery, f.PushdDeliveriesPerSecond)
		for _, fr := range f.Runs {
			switch {
			case fr.Tool == floorMixed:
				fmt.Fprintf(b, "  %-14s the scenario's mix of the two h2load runs = %.0f/s, %.1f µs CPU/request: pushd CPU/delivery = %.2fx the floor, pushd rate = %.2fx the floor\n",
					fr.Name(), fr.RequestsPerSecond, fr.CPUMicrosPerRequest, fr.CPURatio, fr.RateRatio)
			case fr.CPUMicrosPerRequest > 0:
				fmt.Fprintf(b, "  %-14s %d requests in %.2fs = %.0f/s, %.1f µs CPU/request: pushd CPU/delivery = %.2fx the floor, pushd rate = %.2fx the floor\n",
					fr.Name(), fr.OK, fr.Seconds, fr.RequestsPerSecond, fr.CPUMicrosPerRequest, fr.CPURatio, fr.RateRatio)
			}
			if fr.Skipped != "" {
				fmt.Fprintf(b, "  %-14s %s\n", fr.Name(), fr.Skipped)
			}
		}
	}
	return nil
}

// perDelivery formats a count per delivery, "-" when it was not measured.
func perDelivery(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
