package fanout

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// seedDocs stores installations built from documents (objectId, deviceType and the device ids
// are read into the route, as the API does) in testApp.
func (e *env) seedDocs(buckets int, docs ...string) []string {
	e.t.Helper()
	now := time.Now()
	insts := make([]push.Installation, 0, len(docs))
	var ids []string
	for _, d := range docs {
		var m map[string]any
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			e.t.Fatalf("bad test doc %s: %v", d, err)
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		r := push.Route{
			ObjectID: str("objectId"), DeviceType: str("deviceType"), DeviceToken: str("deviceToken"),
			InstallationID: str("installationId"), RegistrationID: str("registrationId"), Vendor: str("vendor"),
			UpdatedAt: now.UnixMilli(),
		}
		if cs, ok := m["channels"].([]any); ok {
			for _, c := range cs {
				r.Channels = append(r.Channels, c.(string))
			}
		}
		insts = append(insts, push.Installation{Route: r, CreatedAt: now.UnixMilli(), Doc: []byte(d)})
		ids = append(ids, r.ObjectID)
	}
	if err := e.st.SeedInstallations(testApp, buckets, insts); err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// pushTo submits a query push with where and returns the object ids it was delivered to.
func (e *env) pushTo(snd *recSender, where string) map[string]int {
	e.t.Helper()
	return e.pushJob(snd, push.Job{Where: json.RawMessage(where)})
}

// pushJob is pushTo for a query job of the caller's making.
func (e *env) pushJob(snd *recSender, job push.Job) map[string]int {
	e.t.Helper()
	snd.mu.Lock()
	clear(snd.got)
	snd.mu.Unlock()
	job = e.submit(job)
	e.waitDone(job.NotificationObjectID)
	snd.mu.Lock()
	defer snd.mu.Unlock()
	out := make(map[string]int, len(snd.got))
	for k, v := range snd.got {
		out[k] = v
	}
	return out
}

func wantDelivered(t *testing.T, where string, got map[string]int, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("where %s: delivered to %v, want %v", where, got, want)
		return
	}
	for _, id := range want {
		if got[id] != 1 {
			t.Errorf("where %s: delivered to %v, want each of %v once", where, got, want)
			return
		}
	}
}

// A $select on channels means "any of its values". At the top level the worker's filter
// decides; inside a sub-query it is the resolver's scan that must not read only the first
// value's channel index.
func TestFanoutWhereSelectOnChannels(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	var docs []string
	for i := range 4 {
		tag := []string{"even", "odd"}[i%2]
		docs = append(docs, fmt.Sprintf(`{"objectId":"sel%d","deviceType":"android","installationId":"iid-sel%d","channels":[%q],"tag":%q}`, i, i, tag, tag))
	}
	ids := e.seedDocs(16, docs...)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)

	sel := `{"$select":{"query":{"className":"_Installation","where":{}},"key":"tag"}}`
	top := `{"channels":` + sel + `}`
	wantDelivered(t, top, e.pushTo(snd, top), ids...)
	nested := `{"objectId":{"$select":{"query":{"className":"_Installation","where":{"channels":` + sel + `}},"key":"objectId"}}}`
	wantDelivered(t, nested, e.pushTo(snd, nested), ids...)
}

// A where pinning device ids plans point tasks whose ids the worker looks up in by_device as
// queried: an FCM token keeps its case in the index, so it must be found as given.
func TestFanoutWhereDeviceTokenKeepsCase(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	const fcm = "FcmTokenMixedCase:APA91b"
	ids := e.seedDocs(16,
		`{"objectId":"fcm1","deviceType":"android","installationId":"iid-fcm1","deviceToken":"`+fcm+`"}`,
		`{"objectId":"ios1","deviceType":"ios","deviceToken":"`+fmt.Sprintf("%064x", 7)+`"}`,
	)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	for _, c := range []struct {
		where string
		want  []string
	}{
		{`{"deviceToken":"` + fcm + `"}`, ids[:1]},
		{`{"deviceToken":{"$in":["` + fcm + `","nope"]}}`, ids[:1]},
		{`{"deviceToken":{"$in":["` + fcm + `","` + fmt.Sprintf("%064x", 7) + `"]}}`, ids},
		{`{"deviceToken":"fcmtokenmixedcase:apa91b"}`, nil},
		{`{"installationId":"iid-fcm1"}`, ids[:1]},
	} {
		wantDelivered(t, c.where, e.pushTo(snd, c.where), c.want...)
	}
}

// startOldAndNew starts a worker over two Android installations, "old" and "new", created at
// the given times, and returns it with their ids in that order.
func startOldAndNew(t *testing.T, oldCreatedAt, newCreatedAt string) (*env, *recSender, []string) {
	t.Helper()
	e := newEnv(t)
	e.createApp(16, nil)
	ids := e.seedDocs(16,
		`{"objectId":"old","deviceType":"android","installationId":"iid-old","createdAt":"`+oldCreatedAt+`"}`,
		`{"objectId":"new","deviceType":"android","installationId":"iid-new","createdAt":"`+newCreatedAt+`"}`,
	)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	return e, snd, ids
}

// A string operand on createdAt/updatedAt is a date in the worker's residual filter too
// (createdAt read from the document, updatedAt from the route).
func TestFanoutWhereDateStrings(t *testing.T) {
	e, snd, ids := startOldAndNew(t, "2019-12-31T23:00:00.000Z", "2020-01-01T01:00:00.000Z")
	for _, c := range []struct {
		where string
		want  []string
	}{
		{`{"createdAt":{"$gte":"2020-01-01T08:00:00+08:00"}}`, ids[1:]}, // as text "2019…" and "2020-01-01T01" are both below
		{`{"createdAt":"2020-01-01T09:00:00+08:00"}`, ids[1:]},
		{`{"createdAt":{"$lt":"2020-01-01T00:00:00"}}`, ids[:1]},
		{`{"updatedAt":{"$gt":"2020-01-01T00:00:00Z"}}`, ids},
	} {
		wantDelivered(t, c.where, e.pushTo(snd, c.where), c.want...)
	}
}

// A where whose sub-query cannot be run (one that excludes more installations than the cap)
// ends the push at once with the reason on the record: retrying the task cannot help, and
// pushing without the exclusion would reach installations the where excludes.
func TestFanoutWhereThatCannotRunEndsThePush(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	docs := []string{`{"objectId":"keep","deviceType":"android","installationId":"iid-keep"}`}
	for i := range 1001 {
		docs = append(docs, fmt.Sprintf(`{"objectId":"out%d","deviceType":"android","installationId":"iid-out%d","optOut":true}`, i, i))
	}
	e.seedDocs(16, docs...)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	where := `{"installationId":{"$dontSelect":{"query":{"className":"_Installation","where":{"optOut":true}},"key":"installationId"}}}`
	job := e.submit(push.Job{Where: json.RawMessage(where)})
	rec := e.waitDone(job.NotificationObjectID)
	if n := snd.count(); n != 0 {
		t.Fatalf("delivered %d pushes for a where that cannot run", n)
	}
	if len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "matches more than 1000") {
		t.Fatalf("record errors %q, want the sub-query's reason", rec.Errors)
	}
	if rec.TasksDone != rec.Tasks {
		t.Fatalf("record done with %d of %d tasks", rec.TasksDone, rec.Tasks)
	}
}

// A where's relative times count from the job's QueryTime, in the planner and in the worker's
// filter (createdAt read from the document, updatedAt from the route), not from the clock of
// the moment each task runs.
func TestFanoutWhereRelativeTime(t *testing.T) {
	e, snd, ids := startOldAndNew(t, "2020-01-01T00:00:00.000Z", "2020-01-09T00:00:00.000Z")
	fired := time.Date(2020, 1, 10, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		where string
		at    time.Time
		want  []string
	}{
		{`{"createdAt":{"$gt":{"$relativeTime":"3 days ago"}}}`, fired, ids[1:]},
		{`{"createdAt":{"$lte":{"$relativeTime":"1 week ago"}}}`, fired, ids[:1]},
		{`{"createdAt":{"$gt":{"$relativeTime":"3 days ago"}}}`, fired.AddDate(0, 0, -8), ids},
		{`{"updatedAt":{"$gt":{"$relativeTime":"1 hour ago"}}}`, time.Now(), ids},
		{`{"updatedAt":{"$gt":{"$relativeTime":"1 hour ago"}}}`, time.Now().Add(2 * time.Hour), nil},
	} {
		got := e.pushJob(snd, push.Job{Where: json.RawMessage(c.where), QueryAt: c.at})
		wantDelivered(t, fmt.Sprintf("%s at %v", c.where, c.at), got, c.want...)
	}
}
