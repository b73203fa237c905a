package driver

import (
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/procmon"
)

// fakeProc is a pushd whose CPU per settle window is busy[i] cores in window i (then 0), on a
// clock that advances by what wait was asked for: no real time passes.
type fakeProc struct {
	busy  []float64
	now   time.Time
	cpu   time.Duration
	waits int
}

func (p *fakeProc) read() (procmon.Sample, bool) { return procmon.Sample{At: p.now, CPU: p.cpu}, true }

func (p *fakeProc) wait(d time.Duration) bool {
	share := 0.0
	if p.waits < len(p.busy) {
		share = p.busy[p.waits]
	}
	p.waits++
	p.now = p.now.Add(d)
	p.cpu += time.Duration(share * float64(d))
	return true
}

// TestDriverSettle: the scenarios wait while pushd works after the seed and start at the first
// window under the threshold; a pushd that never goes quiet is waited for until the timeout
// only; without samples there is no wait.
func TestDriverSettle(t *testing.T) {
	p := &fakeProc{busy: []float64{1.6, 0.9, 0.3, 0.01}, now: time.Unix(1e9, 0)}
	st := settleOn(p.read, p.wait, time.Minute)
	if !st.Quiet || p.waits != 4 || st.Seconds != 4*settleWindow.Seconds() || st.Share > settleShare {
		t.Fatalf("busy then quiet: %+v after %d windows, want quiet after 4 (%.1fs)", st, p.waits, 4*settleWindow.Seconds())
	}

	p = &fakeProc{now: time.Unix(1e9, 0)}
	if st := settleOn(p.read, p.wait, time.Minute); !st.Quiet || p.waits != 1 {
		t.Fatalf("already quiet: %+v after %d windows, want one", st, p.waits)
	}

	busy := make([]float64, 1000)
	for i := range busy {
		busy[i] = 0.5
	}
	p = &fakeProc{busy: busy, now: time.Unix(1e9, 0)}
	st = settleOn(p.read, p.wait, 3*time.Second)
	if st.Quiet || st.Seconds != 3 || st.Share != 0.5 {
		t.Fatalf("never quiet: %+v, want a timeout after 3s at 0.5 of a core", st)
	}

	none := func() (procmon.Sample, bool) { return procmon.Sample{}, false }
	if st := settleOn(none, p.wait, time.Minute); st.Quiet || !strings.Contains(st.Skipped, "cannot be sampled") {
		t.Fatalf("no samples: %+v", st)
	}
}
