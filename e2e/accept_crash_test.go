package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// A SIGKILL at every fault point of the accept path (issue 12, item 2) loses no push and never
// leaves a 200 for a push that is not sent: pushd is started armed at the point, a push with a
// req_id kills it there, pushd restarts unarmed on the same data, and the same call is retried.
// The retry must answer the objectId of the record the first call left (if it left one), the
// push must end done with exact counts, every target token must reach the APNs simulator at
// least once (a per-token ledger: deltas of the simulator's counts), and the app must hold one
// record of the push, not two. The scheduler's points are crossed by a scheduled push seeded
// due. (A record left without its job and no retry is the re-driver's: scheduler.TestRedriver*;
// here the record, written unsynced in embedded mode, does not outlive a kill before the append.)
// accept/after-claim and accept/after-record are not on these paths: over the embedded store
// and log a push's req_id claim, record and job are one write (internal/jointaccept), so no
// kill leaves a claim without its record or a record without its job; armed there, pushd
// answers and sends the push. The mending of those states (left by a version before that, by a
// scheduled push, or in cluster mode) is pushapi's TestAcceptRetryTakesOverAClaimWithoutRecord
// and TestAcceptRetryAppendsTheJobOfARecordLeftByAnotherProcess, and scheduler's re-driver tests.
func TestE2EAcceptCrashLosesNoPush(t *testing.T) {
	const n = 20
	s := startPushsim(t)
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "crash")
	args := []string{
		"--roles", "api,fanout,scheduler",
		"--apns-endpoint", s.apnsURL,
		"--gateway-ca", filepath.Join(s.dir, "ca.pem"),
		"--redrive-after", "1s",
	}
	const (
		query   = "/1.1/push"
		devices = "/1.1/push/devices"
	)
	cases := []struct {
		point string
		path  string
	}{
		{"accept/after-job", query},
		{"accept/after-job", devices},
	}
	for i, tc := range cases {
		name := tc.point + tc.path
		t.Run(name, func(t *testing.T) {
			nid := fmt.Sprintf("crash%d", i)
			body := pushBody(tc.path == query, name, nid, tokens)
			before := s.stats.mustGet(t, true).PerToken

			p := startArmed(t, data, tc.point, args...)
			c.base = p.base
			if status, b, err := c.call("POST", tc.path, true, body); err == nil && status == http.StatusOK {
				t.Fatalf("the armed call answered 200 (%s) instead of dying at %s", b, tc.point)
			}
			p.waitOutput(regexp.MustCompile(`faultpoint `+regexp.QuoteMeta(tc.point)+` reached`), startTimeout)
			p.kill()

			p = startPushd(t, data, args...)
			c.base = p.base
			left := recordsOf(t, c, nid) // what the first call left
			// After the job, the push was written whole and synced (internal/jointaccept): the
			// retry answers its record.
			if len(left) > 1 || len(left) == 0 && tc.point == "accept/after-job" {
				t.Fatalf("a call killed at %s left records %v, want one", tc.point, left)
			}
			oid := ""
			if len(left) == 1 {
				oid = left[0]
			}
			got := pushAt(t, c, tc.path, body)
			if oid != "" && got != oid {
				t.Fatalf("the retry answered objectId %s, want %s: the record the first call left", got, oid)
			}
			oid = got
			rec := c.waitDone(t, oid)
			if rec.Devices != n || rec.Successes != n || rec.IOSSuccesses != n || rec.Failures != 0 {
				t.Errorf("record counts not exact: %+v, want devices = successes = %d", rec, n)
			}
			if got := recordsOf(t, c, nid); len(got) != 1 || got[0] != oid {
				t.Errorf("records of the push: %v, want only %s", got, oid)
			}
			checkLedger(t, s, before, tokens)
			if err := p.stop(stopTimeout); err != nil {
				t.Errorf("pushd exit after SIGTERM: %v", err)
			}
		})
	}
	// accept/after-claim and accept/after-record armed: a push with a req_id crosses neither
	// (its claim, record and job are one write), so the armed pushd answers 200 and sends it.
	for i, tc := range []struct{ point, path string }{
		{"accept/after-claim", query}, {"accept/after-claim", devices},
		{"accept/after-record", query}, {"accept/after-record", devices},
	} {
		point, path := tc.point, tc.path
		t.Run(point+" not crossed"+path, func(t *testing.T) {
			nid := fmt.Sprintf("whole%d", i)
			body := pushBody(path == query, nid, nid, tokens)
			before := s.stats.mustGet(t, true).PerToken
			p := startArmed(t, data, point, args...)
			c.base = p.base
			oid := pushAt(t, c, path, body)
			if rec := c.waitDone(t, oid); rec.Devices != n || rec.Successes != n {
				t.Errorf("record counts not exact: %+v, want devices = successes = %d", rec, n)
			}
			checkLedger(t, s, before, tokens)
			if out := p.out.String(); strings.Contains(out, "faultpoint "+point+" reached") {
				t.Fatalf("a push with a req_id crossed %s:\n%s", point, out)
			}
			if err := p.stop(stopTimeout); err != nil {
				t.Errorf("pushd exit after SIGTERM: %v", err)
			}
		})
	}
	for _, point := range []string{"scheduler/after-record", "scheduler/after-job"} {
		t.Run(point, func(t *testing.T) {
			before := s.stats.mustGet(t, true).PerToken
			oid := seedDueScheduled(t, data, c.appID, "crash")
			// The due push fires at the scheduler's first tick, maybe before the API serves:
			// wait for the kill, not for the API.
			if err := os.Setenv(faultpoint.Env, point); err != nil {
				t.Fatal(err)
			}
			armed := start(t, "pushd", bin(t, "pushd"), append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--log-level", "info"}, args...)...)
			os.Unsetenv(faultpoint.Env)
			armed.waitOutput(regexp.MustCompile(`faultpoint `+regexp.QuoteMeta(point)+` reached`), startTimeout)
			armed.kill()
			p := startPushd(t, data, args...)
			c.base = p.base
			rec := c.waitDone(t, oid)
			if rec.Devices != n || rec.Successes != n || rec.IOSSuccesses != n || rec.Failures != 0 {
				t.Errorf("record counts not exact: %+v, want devices = successes = %d", rec, n)
			}
			checkLedger(t, s, before, tokens)
			if status, b, err := c.call("GET", "/1.1/scheduledPushMessages", true, nil); err != nil || status != 200 || string(b) != `{"results":[]}` {
				t.Errorf("scheduled pushes after firing: %d %s %v, want none", status, b, err)
			}
			if err := p.stop(stopTimeout); err != nil {
				t.Errorf("pushd exit after SIGTERM: %v", err)
			}
		})
	}
}

// pushBody is the crash test's push with req_id and notification_id nid: to channel "crash"
// by query, or to tokens as a devices push.
func pushBody(byQuery bool, alert, nid string, tokens []string) map[string]any {
	body := map[string]any{"data": map[string]any{"alert": alert}, "req_id": nid, "notification_id": nid}
	if byQuery {
		body["channels"] = []string{"crash"}
	} else {
		body["device_type"] = "ios"
		body["device_ids"] = tokens
	}
	return body
}

// startArmed starts pushd with the fault point armed (PUSHD_FAULTPOINT in its environment).
func startArmed(t *testing.T, data, point string, args ...string) *pushd {
	t.Helper()
	if err := os.Setenv(faultpoint.Env, point); err != nil {
		t.Fatal(err)
	}
	defer os.Unsetenv(faultpoint.Env)
	return startPushd(t, data, args...)
}

// pushAt posts body to path with the master key and returns the objectId answered.
func pushAt(t *testing.T, c *client, path string, body any) string {
	t.Helper()
	status, b, err := c.call("POST", path, true, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("%s: status %d %s: %v", path, status, b, err)
	}
	var r struct {
		ObjectID string `json:"objectId"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ObjectID == "" {
		t.Fatalf("push answer %s: %v", b, err)
	}
	return r.ObjectID
}

// recordsOf lists the objectIds of the records with notification id nid.
func recordsOf(t *testing.T, c *client, nid string) []string {
	t.Helper()
	status, b, err := c.call("GET", "/1.1/notifications/"+nid, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if status == http.StatusNotFound {
		return nil
	}
	var agg struct {
		ObjectIDs []string `json:"objectIds"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &agg) != nil {
		t.Fatalf("records of %s: %d %s", nid, status, b)
	}
	return agg.ObjectIDs
}

// checkLedger checks that every token got at least one push more than before, and that no
// other token got any.
func checkLedger(t *testing.T, s *pushsim, before map[string]int64, tokens []string) {
	t.Helper()
	var after map[string]int64
	waitfor.True(t, pushTimeout, "every token to reach the simulator", func() bool {
		after = s.stats.mustGet(t, true).PerToken
		for _, tok := range tokens {
			if after[tok] <= before[tok] {
				return false
			}
		}
		return true
	})
	delta := make(map[string]int64, len(after))
	for tok, v := range after {
		if d := v - before[tok]; d > 0 {
			delta[tok] = d
		}
	}
	short, dups, strangers := deliveries(delta, tokens, 1)
	if len(short) > 0 || len(strangers) > 0 {
		t.Errorf("ledger: %d tokens short, %d strangers", len(short), len(strangers))
	}
	t.Logf("ledger: %d tokens reached, %d duplicates", len(tokens), dups)
}

// seedDueScheduled writes into data's store, while no pushd runs, a scheduled push of the
// app to channel ch that is already due, as POST /1.1/push with a push_time leaves it; it
// returns its record's objectId.
func seedDueScheduled(t *testing.T, data, appID, ch string) string {
	t.Helper()
	ctx := context.Background()
	st, err := pebble.Open(filepath.Join(data, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	id, err := st.NextID(ctx, "scheduled")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	due := now.Add(-time.Second)
	oid := push.NewObjectID()
	nid := push.NewNotificationID()
	data1 := json.RawMessage(`{"alert":"scheduled crash"}`)
	n := push.Notification{ObjectID: oid, AppID: appID, NotificationID: nid, Status: push.StatusScheduled,
		CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: data1, Prod: "prod",
		Channels: []string{ch}, PushTime: due, ScheduledID: id}
	job := push.Job{ID: oid, AppID: appID, NotificationObjectID: oid, NotificationID: nid, Kind: push.JobQuery,
		Where: json.RawMessage(fmt.Sprintf(`{"channels":{"$in":[%q]}}`, ch)), Data: data1, Prod: "prod", CreatedAt: now}
	sc := push.Scheduled{ID: id, AppID: appID, DueAt: due, Job: job, CreatedAt: now}
	if err := st.CreateScheduledNotification(ctx, n, sc); err != nil {
		t.Fatal(err)
	}
	return oid
}
