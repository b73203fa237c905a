package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store/pebble"
)

// expected evaluates where over the first n test installations the slow, obvious way (the
// whole document as decoded JSON) and returns the targets' delivery channels by object id.
func expected(t testing.TB, n int, where string) map[string]string {
	t.Helper()
	q, err := query.Parse(json.RawMessage(where))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	out := make(map[string]string)
	for i := 0; i < n; i++ {
		r, doc := testDoc(i, now)
		if r.Invalid || r.UpdatedAt < now.Add(-push.InactiveAfter).UnixMilli() {
			continue
		}
		if q.Match(doc) {
			out[r.ObjectID] = r.DeliveryChannel(push.EditionChina)
		}
	}
	return out
}

func TestFanoutTestDocIsTheDecodedDoc(t *testing.T) {
	now := time.Now()
	for i := range 1000 {
		var m map[string]any
		if err := json.Unmarshal(testInst(i, now).Doc, &m); err != nil {
			t.Fatal(err)
		}
		if _, d := testDoc(i, now); !reflect.DeepEqual(query.MapDoc(m), d) {
			t.Fatalf("installation %d: document %v, testDoc %v", i, m, d)
		}
	}
}

func countsOf(want map[string]string) push.Counts {
	c := push.Counts{}
	for _, ch := range want {
		t := c[ch]
		t.Targets++
		t.Sent++
		c[ch] = t
	}
	return c
}

func checkDelivered(t *testing.T, s *recSender, want map[string]string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range want {
		if s.got[id] != 1 {
			t.Errorf("%s delivered %d times, want 1", id, s.got[id])
		}
	}
	for id, n := range s.got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s delivered %d times, want 0", id, n)
		}
	}
}

func checkCounts(t *testing.T, got, want push.Counts) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("counts: got %v, want %v", got, want)
		return
	}
	for ch, w := range want {
		if !got[ch].Equal(w) {
			t.Errorf("counts[%s]: got %+v, want %+v", ch, got[ch], w)
		}
	}
}

func TestFanoutWhereMatchesFullDecode(t *testing.T) {
	const n = 3000
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	for _, where := range []string{
		`{}`,
		`{"channels":"news"}`,
		`{"channels":{"$all":["news","sports"]}}`,
		`{"deviceType":"ios","age":{"$gte":50}}`,
		`{"$or":[{"channels":"sports"},{"vendor":"mi"}]}`,
		`{"deviceToken":{"$exists":true},"channels":{"$ne":"news"}}`,
		`{"objectId":{"$in":["o0000002","o0000003","o0000097","o0000005","nope"]}}`,
		`{"installationId":{"$in":["iid-1","iid-3","iid-2"]}}`,
		`{"valid":{"$ne":false},"age":{"$lt":3}}`,
		`{"updatedAt":{"$lt":{"__type":"Date","iso":"2001-01-01T00:00:00.000Z"}}}`,
	} {
		t.Run(where, func(t *testing.T) {
			snd.mu.Lock()
			clear(snd.got)
			snd.mu.Unlock()
			want := expected(t, n, where)
			job := e.submit(push.Job{Where: json.RawMessage(where)})
			rec := e.waitDone(job.NotificationObjectID)
			checkDelivered(t, snd, want)
			checkCounts(t, rec.Counts, countsOf(want))
			if rec.TasksDone != rec.Tasks || len(rec.TasksFinished) != rec.Tasks {
				t.Errorf("tasks %d, done %d, finished %v", rec.Tasks, rec.TasksDone, rec.TasksFinished)
			}
		})
	}
}

func TestFanoutDevicesJob(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, 100)
	now := time.Now()
	snd := newRecSender()
	snd.keep = true
	e.start(DefaultWorkerConfig(), snd, 1)

	// Two stored iOS tokens, one unknown, one listed twice.
	tok0, tok2 := testInst(0, now).DeviceToken, testInst(2, now).DeviceToken
	job := e.submit(push.Job{Kind: push.JobDevices, DeviceType: push.DeviceIOS, Topic: "com.other",
		DeviceIDs: []string{tok0, "ffff", tok2, tok0}})
	rec := e.waitDone(job.NotificationObjectID)
	if got := rec.Counts[push.ChannelAPNs]; got.Targets != 3 || got.Sent != 3 {
		t.Fatalf("apns counts %+v, want 3 targets sent", got)
	}
	byID := map[string]push.Delivery{}
	for _, d := range snd.ds {
		byID[d.Target.DeviceID] = d
	}
	if d := byID["ffff"]; d.Target.ObjectID != "" || d.Target.Channel != push.ChannelAPNs || d.Message == nil || d.Message.Topic != "com.other" {
		t.Errorf("unknown token delivery %+v", d)
	}
	if d := byID[tok0]; d.Target.ObjectID != "o0000000" || d.Target.Topic != "com.example.app" {
		t.Errorf("stored token delivery %+v", d.Target)
	}

	// Android with a vendor: registration ids; unknown ones go to the vendor channel.
	snd.ds = nil
	job = e.submit(push.Job{Kind: push.JobDevices, DeviceType: push.DeviceAndroid, Vendor: "mi", DeviceProfile: "p1",
		DeviceIDs: []string{"reg-1", "reg-unknown"}})
	rec = e.waitDone(job.NotificationObjectID)
	if got := rec.Counts[push.ChannelMi]; got.Targets != 2 || got.Sent != 2 {
		t.Fatalf("mi counts %v, want 2 targets sent", rec.Counts)
	}
	for _, d := range snd.ds {
		if d.Target.Channel != push.ChannelMi || d.Target.Profile != "p1" {
			t.Errorf("vendor delivery %+v", d.Target)
		}
	}
}

func TestFanoutOutcomesAndErrors(t *testing.T) {
	const n = 400
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, n)
	snd := newRecSender()
	snd.outcome = func(d *push.Delivery) push.Result {
		switch d.Target.Channel {
		case push.ChannelMi:
			return push.Result{Outcome: push.OutcomeFailed, Reason: "mi: no credentials"}
		case push.ChannelAPNs:
			if d.Target.ObjectID[len(d.Target.ObjectID)-1] == '4' {
				return push.Result{Outcome: push.OutcomeInvalidToken}
			}
		}
		return push.Result{Outcome: push.OutcomeSent}
	}
	e.start(DefaultWorkerConfig(), snd, 1)
	job := e.submit(push.Job{})
	rec := e.waitDone(job.NotificationObjectID)
	want := expected(t, n, `{}`)
	var wantCounts = push.Counts{}
	for id, ch := range want {
		x := wantCounts[ch]
		x.Targets++
		switch {
		case ch == push.ChannelMi:
			x.Fail(push.FailRejected)
		case ch == push.ChannelAPNs && id[len(id)-1] == '4':
			x.InvalidTokens++
		default:
			x.Sent++
		}
		wantCounts[ch] = x
	}
	checkCounts(t, rec.Counts, wantCounts)
	if len(rec.Errors) != 1 || rec.Errors[0] != "mi: no credentials" {
		t.Errorf("errors %q", rec.Errors)
	}
}

// checkedInvalidator records the dead tokens fan-out deletes, and whether the task's durable
// progress counted each one (and every one before it) when its deletion came.
type checkedInvalidator struct {
	st          *pebble.Store
	jobID, task string
	mu          sync.Mutex
	calls       []string
	since       []time.Time
	early       int // deletions that came before a checkpoint counted them
}

func (v *checkedInvalidator) InvalidateToken(ctx context.Context, appID, objectID, deviceID string, since time.Time) error {
	p, err := v.st.GetTaskProgress(ctx, v.jobID, v.task)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, objectID)
	v.since = append(v.since, since)
	if err != nil || p.Counts.Total().InvalidTokens < int64(len(v.calls)) {
		v.early++
	}
	return nil
}

// With an invalidator, fan-out deletes a dead token's installation itself, and only once the
// task's progress that counts it is durable: a crash before then sends the batch again and the
// scan finds the installation again (e2e: TestE2EFanoutCrashCountsDeadTokens). Checkpoints
// every 4 batches here, so a deletion at the gateway's answer would come before its count.
func TestFanoutDeletesDeadTokensAfterTheirCheckpoint(t *testing.T) {
	const n = 400
	e := newEnv(t)
	pcfg := DefaultPlannerConfig()
	pcfg.BucketsPerTask, pcfg.MinTaskRows = 16, 0 // one task: its progress is read at each deletion
	e.pcfg = &pcfg
	inv := &checkedInvalidator{st: e.st, jobID: "deadjob", task: rangeTaskID("deadjob", 0, 16)}
	e.inv = inv
	e.createApp(16, nil)
	e.seed(16, n)
	since := time.UnixMilli(1_700_000_000_000)
	snd := newRecSender()
	var notLater atomic.Int64
	snd.outcome = func(d *push.Delivery) push.Result {
		if !d.InvalidateLater {
			notLater.Add(1)
		}
		if d.Target.Channel == push.ChannelAPNs && d.Target.ObjectID[len(d.Target.ObjectID)-1] == '4' {
			return push.Result{Outcome: push.OutcomeInvalidToken, Since: since}
		}
		return push.Result{Outcome: push.OutcomeSent}
	}
	cfg := DefaultWorkerConfig()
	cfg.BatchSize, cfg.CheckpointEvery = 16, 64
	e.start(cfg, snd, 1)
	job := e.submit(push.Job{ID: "deadjob"})
	rec := e.waitDone(job.NotificationObjectID)
	var dead []string
	for id, ch := range expected(t, n, `{}`) {
		if ch == push.ChannelAPNs && id[len(id)-1] == '4' {
			dead = append(dead, id)
		}
	}
	if got := rec.Counts.Total().InvalidTokens; got != int64(len(dead)) || len(dead) == 0 {
		t.Fatalf("record counts %d invalid tokens, want %d (and some)", got, len(dead))
	}
	if notLater.Load() != 0 {
		t.Errorf("%d deliveries without InvalidateLater: the sender would delete their installations at once", notLater.Load())
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	slices.Sort(dead)
	got := slices.Sorted(slices.Values(inv.calls))
	if !slices.Equal(got, dead) {
		t.Fatalf("deleted %d installations %v, want the %d dead ones %v", len(got), got, len(dead), dead)
	}
	if inv.early != 0 {
		t.Errorf("%d of %d deletions came before the task's progress counted them", inv.early, len(inv.calls))
	}
	for _, s := range inv.since {
		if !s.Equal(since) {
			t.Fatalf("deletion with since %v, want the gateway's %v", s, since)
		}
	}
}

func TestFanoutExpiredJob(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, 200)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	job := e.submit(push.Job{ExpiresAt: time.Now().Add(-time.Minute)})
	rec := e.waitDone(job.NotificationObjectID)
	tot := rec.Counts.Total()
	if want := int64(len(expected(t, 200, `{}`))); tot.Targets != want || tot.Expired != want || tot.Sent != 0 {
		t.Errorf("counts %+v, want %d expired", tot, want)
	}
	if snd.count() != 0 {
		t.Errorf("sent %d deliveries of an expired push", snd.count())
	}
}

func TestFanoutDailyVolumeStopsPush(t *testing.T) {
	const n, limit = 2000, 300
	e := newEnv(t)
	e.createApp(64, func(s *push.AppSettings) { s.DailyVolume = limit })
	e.seed(64, n)
	snd := newRecSender()
	cfg := DefaultWorkerConfig()
	cfg.BatchSize = 16
	cfg.CheckpointEvery = 64
	e.start(cfg, snd, 1)
	job := e.submit(push.Job{})
	rec := e.waitDone(job.NotificationObjectID)
	tot := rec.Counts.Total()
	want := int64(len(expected(t, n, `{}`)))
	if tot.Targets != want || tot.Sent+tot.Failed != want {
		t.Errorf("counts %+v, want %d targets all sent or failed", tot, want)
	}
	if tot.Sent > limit || int64(snd.count()) != tot.Sent {
		t.Errorf("sent %d (sender saw %d), limit %d", tot.Sent, snd.count(), limit)
	}
	if rec.Stopped != ReasonDailyVolume {
		t.Errorf("stopped %q", rec.Stopped)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	if v, err := e.st.DailyVolume(context.Background(), testApp, day); err != nil || v != tot.Sent {
		t.Errorf("daily volume %d (%v), want %d: reservations must be returned", v, err, tot.Sent)
	}
}

func TestFanoutCancelStopsSending(t *testing.T) {
	const n = 3000
	e := newEnv(t)
	e.pcfg = &PlannerConfig{BucketsPerTask: 8, IDsPerTask: 1000} // 8 tasks, however few rows
	e.createApp(64, nil)
	e.seed(64, n)
	clk := &fakeClock{now: time.Now()}
	cfg := DefaultWorkerConfig()
	cfg.clock = clk
	cfg.BatchSize = 16
	cfg.CheckpointEvery = 64
	snd := newRecSender()
	var job push.Job
	var once sync.Once
	snd.hook = func(int) {
		once.Do(func() {
			if err := e.st.DeleteNotification(context.Background(), testApp, job.NotificationObjectID); err != nil {
				t.Error(err)
			}
			clk.advance(time.Second) // the workers' cached reads of the record are now stale
		})
	}
	job = e.submit(push.Job{})
	r := e.start(cfg, snd, 1)
	// Every task ends (cancelled) without sending much: at most the batches in flight per task
	// (SendAhead of them: those handed to the sender before the cancel was read).
	waitfor.True(t, 30*time.Second, "all tasks cancelled", func() bool {
		return r.metric(`pushd_fanout_tasks_total{result="cancelled"}`) >= 8
	})
	if bound := cfg.Concurrency * cfg.SendAhead * cfg.BatchSize; snd.count() > bound {
		t.Errorf("sent %d after the cancel, want at most %d", snd.count(), bound)
	}
}

// metric sums a series over the workers' metric sets.
func (r *roles) metric(name string) float64 {
	var sum float64
	for _, ms := range r.wms {
		var b bytes.Buffer
		ms.WritePrometheus(&b)
		for _, line := range strings.Split(b.String(), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
	}
	return sum
}
