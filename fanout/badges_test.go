package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// bodySender records the payload each target was handed, copied at Send time (the worker
// reuses a batch's messages once Send returns), and fails the calls fail says to fail after
// recording them, as a crash after the gateway accepted a batch would.
type bodySender struct {
	mu     sync.Mutex
	bodies map[string][]string // by object id, or device id without one
	fail   func(call int) bool
	calls  int
}

func newBodySender() *bodySender { return &bodySender{bodies: map[string][]string{}} }

func (s *bodySender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	for i := range ds {
		id := ds[i].Target.ObjectID
		if id == "" {
			id = ds[i].Target.DeviceID
		}
		s.bodies[id] = append(s.bodies[id], string(ds[i].Message.Body))
		res[i] = push.Result{Outcome: push.OutcomeSent}
	}
	if s.fail != nil && s.fail(s.calls) {
		return errors.New("crash")
	}
	return nil
}

func (s *bodySender) got(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies[id]...)
}

// putBadged stores an installation whose document carries badge (< 0: none).
func (e *env) putBadged(oid, deviceType, deviceID string, badge float64) {
	e.t.Helper()
	r := push.Route{ObjectID: oid, DeviceType: deviceType, UpdatedAt: time.Now().Add(-time.Hour).UnixMilli(), Channels: []string{"news"}}
	m := map[string]any{"objectId": oid, "deviceType": deviceType, "channels": []any{"news"}}
	if deviceType == push.DeviceIOS {
		r.DeviceToken, r.APNsTopic = deviceID, "com.example.app"
		m["deviceToken"] = deviceID
	} else {
		r.InstallationID = deviceID
		m["installationId"] = deviceID
	}
	if badge >= 0 {
		m["badge"] = badge
	}
	doc, _ := json.Marshal(m)
	if err := e.st.PutInstallation(context.Background(), testApp, 16, push.Installation{Route: r, CreatedAt: r.UpdatedAt, Doc: doc}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storedBadge(oid string) (int64, push.Installation) {
	e.t.Helper()
	in, err := e.st.GetInstallation(context.Background(), testApp, oid)
	if err != nil {
		e.t.Fatal(err)
	}
	return push.DocBadge(in.Doc), in
}

func wantBodies(t *testing.T, snd *bodySender, id string, want ...string) {
	t.Helper()
	got := snd.got(id)
	if len(got) != len(want) {
		t.Errorf("%s got payloads %q, want %q", id, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s payload %d = %s, want %s", id, i, got[i], want[i])
		}
	}
}

const incrementData = `{"alert":"hi","badge":"Increment"}`

// Each iOS target of a "badge": "Increment" push gets its own stored badge + 1, which is
// stored; Android targets get no badge; a listed token with no installation gets 1.
func TestFanoutBadgeIncrement(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	e.putBadged("ia", push.DeviceIOS, "toka", 3)
	e.putBadged("ib", push.DeviceIOS, "tokb", -1)
	e.putBadged("ic", push.DeviceIOS, "tokc", 10)
	e.putBadged("an", push.DeviceAndroid, "iid-an", 5)
	_, before := e.storedBadge("ia")
	snd := newBodySender()
	e.start(DefaultWorkerConfig(), snd, 1)

	for _, want := range [][3]int{{4, 1, 11}, {5, 2, 12}} {
		job := e.submit(push.Job{Data: json.RawMessage(incrementData)})
		rec := e.waitDone(job.NotificationObjectID)
		if got := rec.Counts[push.ChannelAPNs]; got.Sent != 3 {
			t.Fatalf("apns counts %+v", got)
		}
		for i, oid := range []string{"ia", "ib", "ic"} {
			got := snd.got(oid)
			if body := got[len(got)-1]; body != `{"aps":{"alert":"hi","badge":`+strconv.Itoa(want[i])+`}}` {
				t.Errorf("%s payload %s, want badge %d", oid, body, want[i])
			}
			if n, _ := e.storedBadge(oid); n != int64(want[i]) {
				t.Errorf("%s stored badge %d, want %d", oid, n, want[i])
			}
		}
	}
	wantBodies(t, snd, "an", `{"alert":"hi"}`, `{"alert":"hi"}`)
	if n, _ := e.storedBadge("an"); n != 5 {
		t.Errorf("android badge changed to %d", n)
	}
	if _, after := e.storedBadge("ia"); after.UpdatedAt != before.UpdatedAt {
		t.Errorf("the badge write moved updatedAt from %d to %d", before.UpdatedAt, after.UpdatedAt)
	}

	// /push/devices: a stored token counts on, an unknown one gets 1.
	job := e.submit(push.Job{Kind: push.JobDevices, DeviceType: push.DeviceIOS, DeviceIDs: []string{"toka", "tokunknown"},
		Data: json.RawMessage(incrementData)})
	e.waitDone(job.NotificationObjectID)
	if got := snd.got("ia"); got[len(got)-1] != `{"aps":{"alert":"hi","badge":6}}` {
		t.Errorf("devices push to a stored token: %s, want badge 6", got[len(got)-1])
	}
	wantBodies(t, snd, "tokunknown", `{"aps":{"alert":"hi","badge":1}}`)

	// A plain push still shares one payload and touches no badge.
	job = e.submit(push.Job{Data: json.RawMessage(`{"alert":"plain"}`)})
	e.waitDone(job.NotificationObjectID)
	if got := snd.got("ia"); got[len(got)-1] != `{"aps":{"alert":"plain"}}` {
		t.Errorf("plain push payload %s", got[len(got)-1])
	}
	if n, _ := e.storedBadge("ia"); n != 6 {
		t.Errorf("a plain push changed the badge to %d", n)
	}
}

// A batch sent again after a crash (the gateway had accepted it, the worker never learned)
// carries the same badges, and the stored badge counts the push once.
func TestFanoutBadgeIncrementOncePerPushAcrossCrash(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	e.putBadged("ia", push.DeviceIOS, "toka", 3)
	e.putBadged("ib", push.DeviceIOS, "tokb", 0)
	_, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
	if len(tasks) != 1 {
		t.Fatalf("%d tasks", len(tasks))
	}
	tasks[0].Job.Data = json.RawMessage(incrementData)
	snd := newBodySender()
	snd.fail = func(call int) bool { return call == 1 }
	w := e.worker(DefaultWorkerConfig(), snd)
	if err := w.RunTask(context.Background(), &tasks[0]); err == nil {
		t.Fatal("the task survived its crash")
	}
	// The worker restarts: a new one, with a new render of the job.
	w = e.worker(DefaultWorkerConfig(), snd)
	if err := w.RunTask(context.Background(), &tasks[0]); err != nil {
		t.Fatal(err)
	}
	wantBodies(t, snd, "ia", `{"aps":{"alert":"hi","badge":4}}`, `{"aps":{"alert":"hi","badge":4}}`)
	wantBodies(t, snd, "ib", `{"aps":{"alert":"hi","badge":1}}`, `{"aps":{"alert":"hi","badge":1}}`)
	if n, _ := e.storedBadge("ia"); n != 4 {
		t.Errorf("stored badge %d after a redelivered batch, want 4", n)
	}
}

// A listed device id the gateway reported dead, with no installation, is not sent to again
// within the window: it counts as an invalid token. Past the window, or once an installation
// registers the token again, it is sent to.
func TestFanoutDeadListedTokenDropped(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	ctx := context.Background()
	now := time.Now()
	for id, since := range map[string]time.Time{
		"dead":      now.Add(-time.Hour),
		"old":       now.Add(-push.DeadTokenWindow - time.Hour),
		"back":      now.Add(-time.Hour),
		"reg-dead":  now.Add(-time.Hour),
		"iid-never": now.Add(-time.Hour), // own-channel ids are never dead-marked: not consulted
	} {
		if err := e.st.MarkDeadToken(ctx, testApp, id, since); err != nil {
			t.Fatal(err)
		}
	}
	e.putBadged("back", push.DeviceIOS, "back", -1) // registered again after it was marked
	snd := newBodySender()
	e.start(DefaultWorkerConfig(), snd, 1)

	job := e.submit(push.Job{Kind: push.JobDevices, DeviceType: push.DeviceIOS, DeviceIDs: []string{"dead", "old", "back", "live"}})
	rec := e.waitDone(job.NotificationObjectID)
	if got, want := rec.Counts[push.ChannelAPNs], (push.Tally{Targets: 4, Sent: 3, InvalidTokens: 1}); !got.Equal(want) {
		t.Errorf("apns counts %+v, want %+v", got, want)
	}
	for id, want := range map[string]int{"dead": 0, "old": 1, "back": 1, "live": 1} {
		if n := len(snd.got(id)); n != want {
			t.Errorf("%s sent %d times, want %d", id, n, want)
		}
	}
	job = e.submit(push.Job{Kind: push.JobDevices, DeviceType: push.DeviceAndroid, Vendor: "mi", DeviceIDs: []string{"reg-dead", "reg-live"}})
	rec = e.waitDone(job.NotificationObjectID)
	if got, want := rec.Counts[push.ChannelMi], (push.Tally{Targets: 2, Sent: 1, InvalidTokens: 1}); !got.Equal(want) {
		t.Errorf("mi counts %+v, want %+v", got, want)
	}
	job = e.submit(push.Job{Kind: push.JobDevices, DeviceType: push.DeviceAndroid, DeviceIDs: []string{"iid-never"}})
	rec = e.waitDone(job.NotificationObjectID)
	if got := rec.Counts[push.ChannelDirect]; got.Sent != 1 {
		t.Errorf("own-channel counts %+v, want it sent", got)
	}
}
