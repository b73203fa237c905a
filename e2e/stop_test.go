package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// SIGTERM during a burst of push calls: pushd exits 0, and every push it answered 200 is
// durable: after a restart its record exists and reaches done with exact counts, and every
// target got every one of those pushes at the simulator.
func TestE2EGracefulStopDrains(t *testing.T) {
	const (
		n            = 100 // audience of each push
		callers      = 4
		callsEach    = 100 // bound on each caller's loop
		acceptBefore = 20  // pushes answered 200 before the SIGTERM
		// The crash bound on duplicates (one checkpoint interval per task in flight) holds for a
		// stop too; a graceful stop should do better (see the log line below).
		checkpointEvery = 1000
		concurrency     = 4
	)
	s := startPushsim(t, "-latency", "5ms")
	data := t.TempDir()
	settings := push.DefaultSettings()
	settings.CallsPerMinute = push.MaxCallsPerMinute
	c, tokens := prepareData(t, data, s, settings, n, "burst")
	args := []string{"--roles", "api,fanout,scheduler", "--apns-endpoint", s.apnsURL, "--gateway-ca", filepath.Join(s.dir, "ca.pem"),
		"--fanout-checkpoint-every", strconv.Itoa(checkpointEvery), "--fanout-concurrency", strconv.Itoa(concurrency)}
	p := startPushd(t, data, args...)
	c.base = p.base

	var (
		mu       sync.Mutex
		accepted []string       // objectIds of pushes answered 200
		other    map[int]int    // other statuses → count
		otherMsg map[int]string // other statuses → one answer
		nOK      atomic.Int64   // len(accepted), for the wait below
		failures atomic.Int64   // calls without an answer (the process went away)
		wg       sync.WaitGroup // the callers
	)
	other, otherMsg = map[int]int{}, map[int]string{}
	body := map[string]any{"data": map[string]any{"alert": "burst"}, "channels": []string{"burst"}}
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range callsEach {
				status, b, err := c.call("POST", "/1.1/push", true, body)
				if err != nil {
					failures.Add(1)
					if p.exited() {
						return
					}
					continue
				}
				if status != http.StatusOK {
					mu.Lock()
					other[status]++
					otherMsg[status] = string(b)
					mu.Unlock()
					continue
				}
				var r struct {
					ObjectID string `json:"objectId"`
				}
				if err := json.Unmarshal(b, &r); err != nil || r.ObjectID == "" {
					t.Errorf("push answer %s: %v", b, err)
					return
				}
				mu.Lock()
				accepted = append(accepted, r.ObjectID)
				mu.Unlock()
				nOK.Add(1)
			}
		}()
	}
	waitfor.True(t, pushTimeout, "pushes to be accepted", func() bool { return nOK.Load() >= acceptBefore })
	stopAt := time.Now()
	err := p.stop(stopTimeout)
	stopped := time.Since(stopAt)
	wg.Wait()
	if err != nil {
		t.Errorf("pushd exit after SIGTERM during a burst: %v (want status 0)", err)
	}
	t.Logf("SIGTERM after %d accepted pushes: exited in %s; %d accepted in all, other answers %v, %d calls unanswered",
		acceptBefore, stopped.Round(time.Millisecond), len(accepted), other, failures.Load())
	for status, msg := range otherMsg {
		switch status {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			// Refused: the client retries later.
		default:
			t.Errorf("%d push calls answered %d during the stop: %s", other[status], status, msg)
		}
	}

	// Restart: everything answered 200 is done, exactly.
	p = startPushd(t, data, args...)
	c.base = p.base
	for _, oid := range accepted {
		rec := c.waitDone(t, oid)
		if rec.Devices != n || rec.Successes != n || rec.Failures != 0 || rec.TasksDone != rec.Tasks {
			t.Errorf("record %s: %+v, want devices = successes = %d and every task done", oid, rec, n)
		}
	}
	// No record exists but those answered 200: a call that failed left nothing behind.
	status, b, err := c.call("GET", "/1.1/notifications?count=1&limit=0", true, nil)
	var list struct {
		Count int `json:"count"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("list records: %d %s: %v", status, b, err)
	}
	if list.Count != len(accepted) {
		t.Errorf("%d push records after the restart, %d pushes answered 200", list.Count, len(accepted))
	}
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, int64(len(accepted)))
	if len(short) > 0 || len(strangers) > 0 {
		t.Errorf("%d tokens got fewer than the %d accepted pushes; %d tokens were not targets", len(short), len(accepted), len(strangers))
	}
	// Every record is one of the accepted pushes (checked above), so what is beyond is duplicates:
	// deliveries of a batch the stop interrupted, sent again after the restart.
	t.Logf("simulator: %d accepted, %d duplicates", st.Accepted, dups)
	if dups > checkpointEvery*concurrency {
		t.Errorf("%d duplicates after a graceful stop: more than %d", dups, checkpointEvery*concurrency)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
