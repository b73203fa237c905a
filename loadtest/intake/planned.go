package intake

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// handledJobSeries are fan-out's counters of the jobs its planner has handled, one way or
// another (fanout/planner.go): planned, skipped (record gone or done, app deleted) and
// invalid. Their sum reaches a load's accepted pushes once every one of them is planned.
var handledJobSeries = []string{
	"pushd_fanout_jobs_planned_total",
	"pushd_fanout_jobs_skipped_total",
	"pushd_fanout_jobs_invalid_total",
}

// HandledJobs reads pushd's ops endpoint (opsURL/metrics, the Prometheus text format) and
// returns how many jobs its planner has handled so far.
func HandledJobs(ctx context.Context, c *http.Client, opsURL string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(opsURL, "/")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot read pushd's metrics: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("cannot read pushd's metrics: status %d", res.StatusCode)
	}
	var sum int64
	found := 0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(handledJobSeries, name) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("cannot read pushd's metric %s: %q", name, value)
		}
		sum += int64(v)
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("cannot read pushd's metrics: %w", err)
	}
	if found == 0 {
		return 0, fmt.Errorf("pushd's metrics have none of %s: is fan-out running in this process?", strings.Join(handledJobSeries, ", "))
	}
	return sum, nil
}

// WaitHandled polls HandledJobs every poll until it reaches target, and returns when it saw
// it; an error when ctx ends or the ops endpoint fails first. The poll interval bounds the
// figure's resolution and what the polling costs pushd (one metrics page each).
func WaitHandled(ctx context.Context, c *http.Client, opsURL string, target int64, poll time.Duration) (time.Time, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	n := int64(-1) // the last count read
	for {
		got, err := HandledJobs(ctx, c, opsURL)
		if err != nil {
			if ctx.Err() != nil {
				return time.Time{}, fmt.Errorf("fan-out handled %d of %d jobs: %w", n, target, ctx.Err())
			}
			return time.Time{}, err
		}
		n = got
		if n >= target {
			return time.Now(), nil
		}
		select {
		case <-t.C: // sampling a counter another process moves: there is no event to wait on
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("fan-out handled %d of %d jobs: %w", n, target, ctx.Err())
		}
	}
}
