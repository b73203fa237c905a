package pushapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
)

const okPush = `{"data":{"alert":"hello"},"channels":["sports"]}`

func TestPushAcceptedIsDurableJobAndRecord(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	r := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"hi","badge":"Increment"},"where":{"deviceType":"ios"},"channels":"news","expiration_interval":60,"notification_id":"n1","prod":"dev","topic":"com.x","flow_control":10}`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	oid, _ := m["objectId"].(string)
	if oid == "" || m["createdAt"] != "2026-03-04T05:06:07.000Z" {
		t.Fatalf("response %s, want objectId and createdAt", r.Body)
	}
	jobs := e.jobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs in push.jobs, want 1", len(jobs))
	}
	j := jobs[0]
	if j.NotificationObjectID != oid || j.NotificationID != "n1" || j.Prod != "dev" || j.Topic != "com.x" || j.FlowControl != 1000 || j.Kind != push.JobQuery {
		t.Fatalf("job %+v does not carry the request", j)
	}
	if want := e.clock().Add(time.Minute); !j.ExpiresAt.Equal(want) {
		t.Fatalf("job expires at %v, want %v (expiration_interval from now)", j.ExpiresAt, want)
	}
	if !strings.Contains(string(j.Where), `"channels"`) || !strings.Contains(string(j.Where), `"deviceType":"ios"`) {
		t.Fatalf("job where %s lacks the merged channels condition", j.Where)
	}
	rec := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oid, "").JSON(t)
	if rec["status"] != push.StatusInQueue || rec["notificationId"] != "n1" || rec["prod"] != "dev" {
		t.Fatalf("record %v", rec)
	}
}

func TestPushNeedsMasterKeyUnlessClientPushAllowed(t *testing.T) {
	e := newEnv(t)
	closed := e.newApp(nil)
	r := e.do(closed, client, "POST", "/1.1/push", okPush)
	if r.Status != 403 || r.Code(t) != 119 {
		t.Fatalf("client push on a default app: %d %s, want 403 code 119", r.Status, r.Body)
	}
	open := e.newApp(func(s *push.AppSettings) { s.ClientPush = true })
	if r := e.do(open, client, "POST", "/1.1/push", okPush); r.Status != 200 {
		t.Fatalf("client push allowed: %d %s", r.Status, r.Body)
	}
	if r := e.do(open, client, "GET", "/1.1/scheduledPushMessages", ""); r.Status != 403 || r.Code(t) != 119 {
		t.Fatalf("listing scheduled pushes with the app key: %d %s, want 403 code 119", r.Status, r.Body)
	}
	if n := len(e.jobs()); n != 1 {
		t.Fatalf("%d jobs, want only the allowed one", n)
	}
}

func TestPushReqIDDeduplicatesForFiveMinutes(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	body := `{"data":{"alert":"x"},"req_id":"abc123"}`
	first := e.do(app, master, "POST", "/1.1/push", body).JSON(t)
	e.advance(4 * time.Minute)
	again := e.do(app, master, "POST", "/1.1/push", body)
	if again.Status != 200 {
		t.Fatalf("duplicate: %d %s, want 200", again.Status, again.Body)
	}
	if m := again.JSON(t); m["objectId"] != first["objectId"] || m["createdAt"] != first["createdAt"] {
		t.Fatalf("duplicate answered %v, want the first push's %v", m, first)
	}
	// Another app's req_id is its own.
	other := e.newApp(nil)
	if m := e.do(other, master, "POST", "/1.1/push", body).JSON(t); m["objectId"] == first["objectId"] {
		t.Fatal("req_id shared across apps")
	}
	e.advance(time.Minute + time.Second)
	later := e.do(app, master, "POST", "/1.1/push", body).JSON(t)
	if later["objectId"] == first["objectId"] {
		t.Fatal("req_id after 5 minutes was still a duplicate")
	}
	if n := len(e.jobs()); n != 3 {
		t.Fatalf("%d jobs, want 3 (first, other app, after the window)", n)
	}
}

func TestPushRateLimit429ForAMinute(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(func(s *push.AppSettings) { s.CallsPerMinute = 2 })
	for i := 0; i < 2; i++ {
		if r := e.do(app, master, "POST", "/1.1/push", okPush); r.Status != 200 {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := e.do(app, master, "POST", "/1.1/push/devices", `{"device_type":"ios","device_ids":["aa"],"data":{"alert":"x"}}`)
	if r.Status != 429 || r.Code(t) != 429 || string(r.Header.Peek("Retry-After")) != "60" {
		t.Fatalf("over the limit: %d %v %s, want 429 with Retry-After 60", r.Status, r.Header, r.Body)
	}
	e.advance(59 * time.Second)
	if r := e.do(app, master, "POST", "/1.1/push", okPush); r.Status != 429 {
		t.Fatalf("within the minute: %d, want 429", r.Status)
	}
	e.advance(time.Second)
	if r := e.do(app, master, "POST", "/1.1/push", okPush); r.Status != 200 {
		t.Fatalf("after the minute: %d %s, want 200", r.Status, r.Body)
	}
	if n := len(e.jobs()); n != 3 {
		t.Fatalf("%d jobs, want 3", n)
	}
}

func TestPushDailyVolumeReachedRefused(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(func(s *push.AppSettings) { s.DailyVolume = 100 })
	if _, err := e.st.AddDailyVolume(context.Background(), app.ID, push.Day(e.clock()), 100); err != nil {
		t.Fatal(err)
	}
	r := e.do(app, master, "POST", "/1.1/push", okPush)
	if r.Status != 429 || r.Code(t) != 154 {
		t.Fatalf("daily volume reached: %d %s, want 429 code 154", r.Status, r.Body)
	}
	e.advance(24 * time.Hour)
	if r := e.do(app, master, "POST", "/1.1/push", okPush); r.Status != 200 {
		t.Fatalf("next day: %d %s", r.Status, r.Body)
	}
}

func TestPushDevicesHybridNeedsDefaultProfile(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	body := `{"device_type":"android","vendor":"mi","device_ids":["r1","r2"],"data":{"alert":"x"}}`
	r := e.do(app, master, "POST", "/1.1/push/devices", body)
	if r.Status != 400 || r.Code(t) != 1 || !strings.Contains(string(r.Body), "_default") {
		t.Fatalf("no _default config: %d %s, want 400 code 1 naming _default", r.Status, r.Body)
	}
	configured := e.newAppWith(func(a *push.App) {
		a.Credentials = map[string]json.RawMessage{"mi": json.RawMessage(`{"_default":{"appSecret":"s"}}`)}
	})
	if r := e.do(configured, master, "POST", "/1.1/push/devices", body); r.Status != 200 {
		t.Fatalf("with _default configured: %d %s", r.Status, r.Body)
	}
	named := `{"device_type":"android","vendor":"mi","device_profile":"other","device_ids":["r1"],"data":{"alert":"x"}}`
	if r := e.do(configured, master, "POST", "/1.1/push/devices", named); r.Status != 400 || !strings.Contains(string(r.Body), "other") {
		t.Fatalf("unknown named profile: %d %s, want refused", r.Status, r.Body)
	}
	// FCM's one configuration is its service account.
	intl := e.newAppWith(func(a *push.App) {
		a.Settings.Edition = push.EditionInternational
		a.Credentials = map[string]json.RawMessage{"fcm": json.RawMessage(`{"type":"service_account"}`)}
	})
	fcmBody := `{"device_type":"android","vendor":"fcm","device_ids":["r1"],"data":{"alert":"x"}}`
	if r := e.do(intl, master, "POST", "/1.1/push/devices", fcmBody); r.Status != 200 {
		t.Fatalf("fcm with a service account: %d %s", r.Status, r.Body)
	}
	bare := e.newApp(func(s *push.AppSettings) { s.Edition = push.EditionInternational })
	if r := e.do(bare, master, "POST", "/1.1/push/devices", fcmBody); r.Status != 400 || r.Code(t) != 1 {
		t.Fatalf("fcm without credentials: %d %s, want 400 code 1", r.Status, r.Body)
	}
	jobs := e.jobs()
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want the mi and the fcm pushes", len(jobs))
	}
	vendors := map[string]int{}
	for _, j := range jobs {
		if j.Kind != push.JobDevices {
			t.Fatalf("job %+v is not a devices job", j)
		}
		vendors[j.Vendor] = len(j.DeviceIDs)
	}
	if vendors["mi"] != 2 || vendors["fcm"] != 1 {
		t.Fatalf("jobs %+v, want the configured mi push (2 ids) and the fcm push (1 id)", jobs)
	}
}

func TestPushScheduledListedCancelledAndImmediateWindow(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	soon := e.clock().Add(59 * time.Second).Format(time.RFC3339)
	r := e.do(app, master, "POST", "/1.1/push", fmt.Sprintf(`{"data":{"alert":"x"},"push_time":%q}`, soon))
	if r.Status != 200 {
		t.Fatalf("push_time under a minute: %d %s", r.Status, r.Body)
	}
	if n := len(e.jobs()); n != 1 {
		t.Fatalf("push_time under a minute: %d jobs, want it sent at once", n)
	}
	at := e.clock().Add(2 * time.Hour)
	r = e.do(app, master, "POST", "/1.1/push", fmt.Sprintf(`{"data":{"alert":"later"},"push_time":%q,"notification_id":"sched1"}`, at.Format(time.RFC3339)))
	if r.Status != 200 {
		t.Fatalf("scheduled push: %d %s", r.Status, r.Body)
	}
	oid := r.JSON(t)["objectId"].(string)
	if n := len(e.jobs()); n != 1 {
		t.Fatalf("scheduled push went to the log at once (%d jobs)", n)
	}
	list := e.do(app, master, "GET", "/1.1/scheduledPushMessages", "").JSON(t)
	results, _ := list["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("scheduled list %v, want one", list)
	}
	sp := results[0].(map[string]any)
	msg := sp["push_msg"].(map[string]any)
	where := msg["where"].(map[string]any)
	if sp["expire_time"] != float64(at.UnixMilli()) || msg["api-version"] != "1.1" || msg["app-id"] != app.ID ||
		msg["id"] != oid || msg["notificationId"] != "sched1" || where["query"] == nil || where["sort"] == nil {
		t.Fatalf("scheduled push shape %v", sp)
	}
	if _, ok := msg["through"]; !ok {
		t.Fatalf("push_msg lacks through: %v", msg)
	}
	rec := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oid, "").JSON(t)
	if rec["status"] != push.StatusScheduled || rec["push-time"] != at.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Fatalf("scheduled record %v", rec)
	}
	id := fmt.Sprint(int64(sp["id"].(float64)))
	if r := e.do(app, client, "DELETE", "/1.1/scheduledPushMessages/"+id, ""); r.Status != 403 {
		t.Fatalf("cancel with the app key: %d", r.Status)
	}
	if r := e.do(app, master, "DELETE", "/1.1/scheduledPushMessages/"+id, ""); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if r := e.do(app, master, "DELETE", "/1.1/scheduledPushMessages/"+id, ""); r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("second cancel: %d %s, want 404 code 101", r.Status, r.Body)
	}
	if r := e.do(app, master, "DELETE", "/1.1/scheduledPushMessages/abc", ""); r.Status != 400 {
		t.Fatalf("cancel of a non-integer id: %d %s, want 400", r.Status, r.Body)
	}
	if list := e.do(app, master, "GET", "/1.1/scheduledPushMessages", "").JSON(t); len(list["results"].([]any)) != 0 {
		t.Fatalf("cancelled push still listed: %v", list)
	}
	if r := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oid, ""); r.Status != 404 {
		t.Fatalf("cancelled push's record: %d, want removed", r.Status)
	}
}

// gateLog fails the first Append once release is closed; later Appends go through.
type gateLog struct {
	Log
	entered, release chan struct{}
	once             sync.Once
}

func (g *gateLog) Append(ctx context.Context, topic string, recs ...queue.Record) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
		return errors.New("log unavailable")
	}
	return g.Log.Append(ctx, topic, recs...)
}

// A retry that comes while the first call with its req_id is still being accepted must not
// be told 200 for a push that then fails: it waits, and (the first failing) becomes the push.
func TestPushReqIDRetryDuringAFailingFirstCall(t *testing.T) {
	var g *gateLog
	e := newEnv(t, func(d *Deps) {
		g = &gateLog{Log: d.Log, entered: make(chan struct{}), release: make(chan struct{})}
		d.Log, d.Joint = g, nil // the job appended after its record, where the append can fail
	})
	app := e.newApp(nil)

	body := `{"data":{"alert":"x"},"req_id":"retry1"}`
	first, retry := make(chan resp, 1), make(chan resp, 1)
	go func() { first <- e.do(app, master, "POST", "/1.1/push", body) }()
	<-g.entered // the first call holds the claim and is appending its job
	go func() { retry <- e.do(app, master, "POST", "/1.1/push", body) }()
	waitfor.True(t, 10*time.Second, "the retry waiting for the first call", func() bool { return e.svc.reqs.waiting.Load() == 1 })
	close(g.release)
	if f := <-first; f.Status != 500 {
		t.Fatalf("first call: %d %s, want 500", f.Status, f.Body)
	}
	r := <-retry
	if r.Status != 200 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	oid := r.JSON(t)["objectId"]
	jobs := e.jobs()
	if len(jobs) != 1 || jobs[0].NotificationObjectID != oid {
		t.Fatalf("retry answered 200 %s, but push.jobs holds %+v", r.Body, jobs)
	}
}

func TestPushDevicesNotificationChannelWinsOverChannel(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	r := e.do(app, master, "POST", "/1.1/push/devices", `{"device_type":"android","device_ids":["i1"],"data":{"alert":"x"},"channel":"c1","_notificationChannel":"nc1"}`)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if jobs := e.jobs(); len(jobs) != 1 || jobs[0].NotificationChannel != "nc1" {
		t.Fatalf("jobs %+v, want notification channel nc1 (_notificationChannel wins over channel)", jobs)
	}
}

// An app may have MaxPendingScheduled scheduled pushes waiting; one more is refused with 154
// and writes nothing (its req_id stays free), and cancelling one makes room.
func TestPushScheduledCapPerApp(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	ctx := context.Background()
	due := e.clock().Add(time.Hour)
	for i := range MaxPendingScheduled {
		sp := push.Scheduled{ID: int64(i + 1), AppID: app.ID, DueAt: due, CreatedAt: e.clock(),
			Job: push.Job{ID: fmt.Sprintf("j%d", i), AppID: app.ID, NotificationObjectID: fmt.Sprintf("n%d", i), Kind: push.JobQuery}}
		if err := e.st.PutScheduled(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	body := fmt.Sprintf(`{"data":{"alert":"later"},"push_time":%q,"req_id":"sched2"}`, due.Format(time.RFC3339))
	r := e.do(app, master, "POST", "/1.1/push", body)
	if r.Status != 429 || r.Code(t) != 154 || !strings.Contains(r.JSON(t)["error"].(string), "scheduled pushes waiting") {
		t.Fatalf("scheduled push over the cap: %d %s, want 429 code 154", r.Status, r.Body)
	}
	records := 0
	if err := e.st.ListNotifications(ctx, app.ID, func(*push.Notification) error { records++; return nil }); err != nil || records != 0 {
		t.Fatalf("the refused push left %d records (%v)", records, err)
	}
	// A push sent at once is not held back by the cap.
	if r := e.do(app, master, "POST", "/1.1/push", okPush); r.Status != 200 {
		t.Fatalf("immediate push: %d %s", r.Status, r.Body)
	}
	if r := e.do(app, master, "DELETE", "/1.1/scheduledPushMessages/1", ""); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if r := e.do(app, master, "POST", "/1.1/push", body); r.Status != 200 {
		t.Fatalf("the same req_id after a place freed: %d %s", r.Status, r.Body)
	}
}
