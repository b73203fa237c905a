package pushapi

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// fakeCounter is a Counter of func fields: the real one (fanout.Audience) is tested against
// real pushes in fanout and through the binary in e2e; here the API's side of a dry run is.
type fakeCounter struct {
	mu    sync.Mutex
	jobs  []push.Job
	count func(ctx context.Context, job *push.Job) (push.Audience, error)
}

func (f *fakeCounter) Count(ctx context.Context, job *push.Job) (push.Audience, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, *job)
	f.mu.Unlock()
	if f.count != nil {
		return f.count(ctx, job)
	}
	return push.Audience{Rows: 9, Channels: push.Counts{
		push.ChannelAPNs: {Targets: 2}, push.ChannelDirect: {Targets: 1}, push.ChannelHMS: {Targets: 3},
		push.ChannelFCM: {Targets: 1},
	}}, nil
}

func withCounter(c Counter) func(*Deps) {
	return func(d *Deps) { d.Counter = c }
}

// checkNothingStored fails unless the app has no push record, push.jobs no job, and the
// day's volume is untouched.
func checkNothingStored(t *testing.T, e *env, app push.App) {
	t.Helper()
	ctx := context.Background()
	n := 0
	if err := e.st.ListNotifications(ctx, app.ID, func(*push.Notification) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d push records after dry runs, want 0", n)
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Errorf("%d jobs in push.jobs after dry runs, want 0", len(jobs))
	}
	if v, err := e.st.DailyVolume(ctx, app.ID, push.Day(e.clock())); err != nil || v != 0 {
		t.Errorf("daily volume %d (%v) after dry runs, want 0", v, err)
	}
	if sc, err := e.st.ListScheduled(ctx, app.ID); err != nil || len(sc) != 0 {
		t.Errorf("%d scheduled pushes (%v) after dry runs, want 0", len(sc), err)
	}
}

// TestPushDryRunAnswersAudienceAndStoresNothing: a dry run answers the counter's audience per
// channel and device type, and each channel's rendered payload; it writes no record, no job,
// no schedule, no daily volume, and claims no req_id (the same req_id then sends for real).
func TestPushDryRunAnswersAudienceAndStoresNothing(t *testing.T) {
	fc := &fakeCounter{}
	e := newEnv(t, withCounter(fc))
	app := e.newAppWith(func(a *push.App) { // China edition, HMS credentials only
		a.Credentials = map[string]json.RawMessage{push.ChannelHMS: json.RawMessage(`{"_default":{"appId":"1"}}`)}
	})
	r := e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"hi","title":"T","ios":{"badge":"Increment","sound":"a.caf"},"hms":{"title":"Huawei"}},"where":{"age":{"$gt":3}},"channels":["news"],"req_id":"r1","expiration_interval":60,"prod":"dev"}`)
	if r.Status != 200 {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	var got dryRunAnswer
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if !got.DryRun || got.Devices != 7 || got.RowsScanned != 9 || got.ByDeviceType["ios"] != 2 || got.ByDeviceType["android"] != 5 {
		t.Errorf("answer %s: want 7 devices (2 ios, 5 android) from 9 rows", r.Body)
	}
	wantCh := map[string]int64{"apns": 2, "direct": 1, "mi": 0, "hms": 3, "mz": 0, "vivo": 0, "oppo": 0, "honor": 0, "fcm": 1}
	if len(got.ByChannel) != len(wantCh) {
		t.Errorf("byChannel %v, want %v (the edition's channels, and fcm which a target routes to)", got.ByChannel, wantCh)
	}
	for ch, n := range wantCh {
		if got.ByChannel[ch] != n {
			t.Errorf("byChannel[%s] = %d, want %d", ch, got.ByChannel[ch], n)
		}
		if _, ok := got.Payloads[ch]; !ok {
			t.Errorf("no payload for channel %s", ch)
		}
	}
	if p := got.Payloads["apns"]; !p.BadgeIncrement || !strings.Contains(string(p.Payload), `"sound":"a.caf"`) || p.Expiration != "2026-03-04T05:07:07.000Z" {
		t.Errorf("apns payload %+v", p)
	}
	if p := got.Payloads["hms"]; !strings.Contains(string(p.Payload), `"title":"Huawei"`) || p.Error != "" {
		t.Errorf("hms payload %+v, want its own title", p)
	}
	if p := got.Payloads["fcm"]; p.Error != "vendor fcm is not available in the china edition" || len(p.Payload) != 0 {
		t.Errorf("fcm payload %+v, want the edition error fan-out fails its targets with", p)
	}
	if p := got.Payloads["mi"]; !strings.Contains(string(p.Payload), `"title":"T"`) {
		t.Errorf("mi payload %+v, want the default title", p)
	}
	for ch, p := range got.Payloads {
		if want := ch != "hms" && ch != "direct"; p.NoCredentials != want {
			t.Errorf("payload of %s says noCredentials %v, want %v", ch, p.NoCredentials, want)
		}
	}
	if len(fc.jobs) != 1 {
		t.Fatalf("counter called %d times, want 1", len(fc.jobs))
	}
	j := fc.jobs[0]
	if j.AppID != app.ID || j.Kind != push.JobQuery || !strings.Contains(string(j.Where), `"channels"`) || !strings.Contains(string(j.Where), `"age"`) || !j.CreatedAt.Equal(e.clock()) {
		t.Errorf("counted job %+v: want the app's query job with channels merged, at the call's time", j)
	}

	// A devices dry run and a scheduled one: counted, nothing stored either.
	if r := e.do(app, master, "POST", "/1.1/push/devices", `{"dry_run":true,"data":{"alert":"x"},"device_type":"ios","device_ids":["aa","bb"],"req_id":"r2"}`); r.Status != 200 || r.JSON(t)["dryRun"] != true {
		t.Fatalf("devices dry run: %d %s", r.Status, r.Body)
	}
	if j := fc.jobs[1]; j.Kind != push.JobDevices || j.DeviceType != "ios" || len(j.DeviceIDs) != 2 {
		t.Errorf("counted devices job %+v", j)
	}
	r = e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"},"push_time":"2026-03-05T00:00:00Z"}`)
	if r.Status != 200 || r.JSON(t)["pushTime"] != "2026-03-05T00:00:00.000Z" {
		t.Fatalf("scheduled dry run: %d %s", r.Status, r.Body)
	}
	checkNothingStored(t, e, app)

	// dry_run false is a real push, and the dry run's req_id was never claimed.
	r = e.do(app, master, "POST", "/1.1/push", `{"dry_run":false,"data":{"alert":"hi"},"req_id":"r1"}`)
	if r.Status != 200 || r.JSON(t)["objectId"] == nil {
		t.Fatalf("real push after the dry run: %d %s", r.Status, r.Body)
	}
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Fatalf("%d jobs after a real push with the dry run's req_id, want 1 (not a duplicate)", len(jobs))
	}
}

// TestPushDryRunPassesTheChecksOfAPush: a dry run is refused exactly as the push would be
// (client key without client push, a bad body, an unconfigured hybrid profile, an invalid
// where) and counts against the calls per minute.
func TestPushDryRunPassesTheChecksOfAPush(t *testing.T) {
	fc := &fakeCounter{}
	e := newEnv(t, withCounter(fc))
	app := e.newApp(func(s *push.AppSettings) { s.CallsPerMinute = 6 })
	for _, tc := range []struct {
		who          who
		path, body   string
		status, code int
	}{
		{client, "/1.1/push", `{"dry_run":true,"data":{"alert":"x"}}`, 403, 119},
		{master, "/1.1/push", `{"dry_run":"yes","data":{"alert":"x"}}`, 400, 111},
		{master, "/1.1/push", `{"dry_runs":true,"data":{"alert":"x"}}`, 400, 1},
		{master, "/1.1/push", `{"dry_run":true,"data":{"alert":"x"},"where":{"age":{"$nope":1}}}`, 400, 300},
		{master, "/1.1/push/devices", `{"dry_run":true,"data":{"alert":"x"},"device_type":"android","vendor":"hms","device_ids":["r"]}`, 400, 1},
	} {
		r := e.do(app, tc.who, "POST", tc.path, tc.body)
		if r.Status != tc.status || r.Code(t) != tc.code {
			t.Errorf("%s %s: %d %s, want %d code %d", tc.path, tc.body, r.Status, r.Body, tc.status, tc.code)
		}
	}
	if len(fc.jobs) != 0 {
		t.Errorf("counter called %d times for refused dry runs, want 0", len(fc.jobs))
	}
	// Four of the app's 6 calls were admitted (the client call was refused before the limit).
	for i := range 2 {
		if r := e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"}}`); r.Status != 200 {
			t.Fatalf("dry run %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"}}`)
	if r.Status != 429 || r.Code(t) != 429 {
		t.Fatalf("7th call: %d %s, want 429: dry runs count against calls per minute", r.Status, r.Body)
	}
	checkNothingStored(t, e, app)
}

// TestPushDryRunBounds: a count over its timeout answers 124 (HTTP 504); a dry run beyond the
// concurrency waits, then gets 503 with Retry-After; a node without a counter answers 503; a
// client error of the counter (a where the fan-out cannot run) is passed on.
func TestPushDryRunBounds(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	fc := &fakeCounter{count: func(ctx context.Context, job *push.Job) (push.Audience, error) {
		switch {
		case strings.Contains(string(job.Where), "slow"):
			<-ctx.Done()
			return push.Audience{}, ctx.Err()
		case strings.Contains(string(job.Where), "block"):
			started <- struct{}{}
			<-release
		case strings.Contains(string(job.Where), "huge"):
			return push.Audience{}, push.Errorf(push.CodeInvalidQuery, "a sub-query matched too many")
		}
		return push.Audience{}, nil
	}}
	e := newEnv(t, withCounter(fc), func(d *Deps) { d.DryRun = DryRunConfig{Timeout: 50 * time.Millisecond, Concurrency: 1} })
	app := e.newApp(nil)
	r := e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"},"where":{"tag":"slow"}}`)
	if r.Status != 504 || r.Code(t) != 124 || !strings.Contains(r.JSON(t)["error"].(string), "--dry-run-timeout") {
		t.Errorf("slow count: %d %s, want 504 code 124 naming the flag", r.Status, r.Body)
	}
	r = e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"},"where":{"tag":"huge"}}`)
	if r.Status != 400 || r.Code(t) != 300 {
		t.Errorf("counter's client error: %d %s, want 400 code 300", r.Status, r.Body)
	}

	done := make(chan resp, 1)
	go func() {
		done <- e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"},"where":{"tag":"block"}}`)
	}()
	<-started
	r = e.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"}}`)
	if r.Status != 503 || r.Code(t) != 503 || string(r.Header.Peek("Retry-After")) != "1" {
		t.Errorf("dry run beyond the concurrency: %d %s (Retry-After %q), want 503 with Retry-After 1", r.Status, r.Body, r.Header.Peek("Retry-After"))
	}
	close(release)
	if r := <-done; r.Status != 200 {
		t.Errorf("blocked dry run: %d %s", r.Status, r.Body)
	}

	checkNothingStored(t, e, app)

	none := newEnv(t)
	app = none.newApp(nil)
	if r := none.do(app, master, "POST", "/1.1/push", `{"dry_run":true,"data":{"alert":"x"}}`); r.Status != 503 || r.Code(t) != 503 {
		t.Errorf("no counter: %d %s, want 503", r.Status, r.Body)
	}
	checkNothingStored(t, none, app)
}
