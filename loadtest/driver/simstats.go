package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/pushd/pushd/loadtest/sim"
)

// fetchStats reads GET <url>/_stats (with per-token counts) of one simulator.
func fetchStats(ctx context.Context, hc *http.Client, s Sim) (sim.Stats, error) {
	var st sim.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/_stats", nil)
	if err != nil {
		return st, fmt.Errorf("cannot build the stats request of simulator %s: %w", s.URL, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, fmt.Errorf("cannot read the stats of simulator %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("cannot read the stats of simulator %s: HTTP %d: %s", s.URL, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("cannot decode the stats of simulator %s: %w", s.URL, err)
	}
	return st, nil
}

// fetchAll reads every simulator's stats, in sims order.
func fetchAll(ctx context.Context, hc *http.Client, sims []Sim) ([]sim.Stats, error) {
	out := make([]sim.Stats, len(sims))
	for i, s := range sims {
		st, err := fetchStats(ctx, hc, s)
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

// Delta returns what a simulator named name answered between two snapshots.
func Delta(name string, before, after sim.Stats) SimDelta {
	d := SimDelta{Name: name, Accepted: after.Accepted - before.Accepted, PerToken: map[string]int64{}}
	for _, r := range deadReasons {
		d.Dead += after.ByReason[r] - before.ByReason[r]
	}
	for tok, n := range after.PerToken {
		if k := n - before.PerToken[tok]; k != 0 {
			d.PerToken[tok] = k
		}
	}
	return d
}
