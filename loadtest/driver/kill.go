package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
)

// The kill scenario SIGKILLs pushd mid-push: once the simulators have accepted KillAt of the
// scenario's audience, the driver kills the process whose pid PushdPIDFile holds, waits for
// its supervisor (scripts/loadtest.sh) to start a new pushd on the same data directory and
// write the new pid, and for that pushd to be ready. The push must then finish with every
// token accepted at least once and exact record counts; the re-sent targets are measured as
// duplicates.

// killWait bounds the wait for the restarted pushd's new pid.
const killWait = 2 * time.Minute

// killMidPush kills pushd once the simulators accepted threshold pushes since r.stats, then
// waits for the restarted pushd. It returns how many pushes the simulators had accepted when
// the kill was sent.
func (r *run) killMidPush(ctx context.Context, threshold int64) (int64, error) {
	var base int64
	for _, st := range r.stats {
		base += st.Accepted
	}
	poll := time.NewTicker(r.cfg.PollEvery)
	defer poll.Stop()
	var accepted int64
	for {
		var now int64
		for _, s := range r.cfg.Sims {
			n, err := acceptedCount(ctx, r.sims, s)
			if err != nil {
				return 0, err
			}
			now += n
		}
		if accepted = now - base; accepted >= threshold {
			break
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			return 0, fmt.Errorf("cannot wait for %d accepted pushes before the kill (%d so far): %w", threshold, accepted, ctx.Err())
		}
	}
	pid, err := readPID(r.cfg.PushdPIDFile)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("cannot SIGKILL pushd (pid %d): %w", pid, err)
	}
	r.logf("  SIGKILL sent to pushd (pid %d) with %d pushes accepted; waiting for its restart", pid, accepted)
	deadline := time.Now().Add(killWait)
	for {
		next, err := readPID(r.cfg.PushdPIDFile)
		if err == nil && next != pid {
			r.logf("  pushd restarted (pid %d)", next)
			break
		}
		if time.Now().After(deadline) {
			return accepted, fmt.Errorf("pushd was not restarted within %s of the kill (pid file %s still says %d)", killWait, r.cfg.PushdPIDFile, pid)
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			return accepted, fmt.Errorf("cannot wait for pushd's restart: %w", ctx.Err())
		}
	}
	return accepted, r.waitReady(ctx)
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cannot read pushd's pid file: %w", err)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pushd's pid file %s holds %q, not a pid", path, bytes.TrimSpace(b))
	}
	return pid, nil
}

// acceptedCount reads one simulator's accepted count, without its per-token counts (a
// million-token map is too much to read every PollEvery).
func acceptedCount(ctx context.Context, hc *http.Client, s Sim) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/_stats?tokens=0", nil)
	if err != nil {
		return 0, fmt.Errorf("cannot build the stats request of simulator %s: %w", s.URL, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot read the stats of simulator %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("cannot read the stats of simulator %s: HTTP %d: %s", s.URL, resp.StatusCode, b)
	}
	var st sim.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("cannot decode the stats of simulator %s: %w", s.URL, err)
	}
	return st.Accepted, nil
}
