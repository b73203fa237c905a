package driver

import (
	"context"
	"time"

	"github.com/pushd/pushd/loadtest/procmon"
)

// Settling: the seed leaves pushd busy for a while after its last upsert is answered (the
// store flushes its memtables and compacts the tables the seed wrote; an import's ingested
// tables are compacted too). That work is the seed's, but a scenario started at once is billed
// for it: a 300,000-device push measured a sixth of its CPU in compactions of the seed. So the
// scenarios start once pushd's CPU over a window falls below settleShare of a core, or after
// Config.SettleTimeout (0: they start at once).

const (
	settleWindow = 500 * time.Millisecond
	settleShare  = 0.05 // of one core
)

// Settle says how the wait for pushd to go quiet after the seed ended.
type Settle struct {
	Seconds float64 `json:"seconds"`           // waited
	Share   float64 `json:"share"`             // pushd's CPU over the last window, in cores
	Quiet   bool    `json:"quiet"`             // it fell below the threshold (false: timed out, or the run ended)
	Skipped string  `json:"skipped,omitempty"` // why there was no wait
}

// settle waits until pushd is quiet (see above) and says how long that took.
func (r *run) settle(ctx context.Context) *Settle {
	if r.cfg.SettleTimeout <= 0 {
		return &Settle{Skipped: "--settle-timeout 0"}
	}
	read := func() (procmon.Sample, bool) {
		s, _, ok := r.mon.proc()
		return s, ok
	}
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	st := settleOn(read, wait, r.cfg.SettleTimeout)
	switch {
	case st.Skipped != "":
		r.logf("settle: skipped: %s", st.Skipped)
	case st.Quiet:
		r.logf("settle: pushd quiet %.1fs after the seed (%.1f%% of a core over %s)", st.Seconds, 100*st.Share, settleWindow)
	default:
		r.logf("settle: pushd still at %.0f%% of a core %.1fs after the seed; the scenarios start anyway", 100*st.Share, st.Seconds)
	}
	return st
}

// settleOn is settle's loop: read samples pushd, wait waits (false: the run ends).
func settleOn(read func() (procmon.Sample, bool), wait func(time.Duration) bool, timeout time.Duration) *Settle {
	s0, ok := read()
	if !ok {
		return &Settle{Skipped: "pushd cannot be sampled (no -pushd-pid-file)"}
	}
	start := s0.At
	st := &Settle{}
	for {
		if !wait(settleWindow) {
			return st
		}
		s1, ok := read()
		if !ok {
			st.Skipped = "pushd could no longer be sampled"
			return st
		}
		if el := s1.At.Sub(s0.At); el > 0 {
			st.Share = float64(s1.CPU-s0.CPU) / float64(el)
		}
		st.Seconds = s1.At.Sub(start).Seconds()
		if st.Share < settleShare {
			st.Quiet = true
			return st
		}
		if s1.At.Sub(start) >= timeout {
			return st
		}
		s0 = s1
	}
}
