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
	PushdURL         string           `json:"pushd"`
	StartedAt        time.Time        `json:"startedAt"`
	AppID            string           `json:"appId,omitempty"`
	HybridAppID      string           `json:"hybridAppId,omitempty"` // the China edition app of the direct and mixed scenarios
	Installations    int              `json:"installations"`         // main population
	IOS              int              `json:"ios"`
	Android          int              `json:"android"`
	InvalidCohort    int              `json:"invalidCohort,omitempty"` // extra installations of the invalid-token cohort
	DeadTokens       int              `json:"deadTokens,omitempty"`
	OwnChannel       int              `json:"ownChannel,omitempty"` // hybrid app: own-channel devices of the direct scenario
	Mixed            int              `json:"mixed,omitempty"`      // hybrid app: devices of the mixed scenario
	QuotaFill        int              `json:"quotaFill,omitempty"`  // hybrid app: devices of the quota-fill scenario (the simulator's day quota)
	Quota            int              `json:"quota,omitempty"`      // hybrid app: devices of the quota scenario (beyond the quota)
	Concurrency      int              `json:"concurrency"`
	Upserts          int              `json:"upserts"` // installations created (main + cohort)
	UpsertSeconds    float64          `json:"upsertSeconds"`
	UpsertsPerSecond float64          `json:"upsertsPerSecond"`
	Retries          int64            `json:"retries"` // requests retried after 429/503/transport errors
	Scenarios        []ScenarioReport `json:"scenarios"`
	OK               bool             `json:"ok"`
	Error            string           `json:"error,omitempty"` // why the run stopped early
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
	OwnDevices   int      `json:"ownDevices,omitempty"`
	OwnOffline   int      `json:"ownOffline,omitempty"`
	OwnLC        int      `json:"ownLC,omitempty"`
	Arrivals     int64    `json:"arrivals,omitempty"`
	LCSuccesses  int64    `json:"lcSuccesses,omitempty"`
	OwnSeconds   float64  `json:"ownSeconds,omitempty"`
	Verification string   `json:"verification"` // OK or FAIL
	Problems     []string `json:"problems,omitempty"`
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
	fmt.Fprintf(&b, "\nupserts: %d in %.2fs = %.0f upserts/s (concurrency %d, %d retries)\n\n",
		r.Upserts, r.UpsertSeconds, r.UpsertsPerSecond, r.Concurrency, r.Retries)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\trecords\ttargets\tsent\tfailed\tinvalid\tseconds\tdeliveries/s\tverification\t")
	for _, s := range r.Scenarios {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.0f\t%s\t\n", s.Name, len(s.Records), s.Targets, s.Sent,
			s.Failed, s.Invalid, s.Seconds, s.DeliveriesPerSecond, s.Verification)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot format the report: %w", err)
	}
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
