package pushapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// The states a crash on the accept path leaves (issue 12, item 2), written into the real store
// as the killed process left them, then the client's retry with the same req_id. The process
// kills themselves are e2e.TestE2EAcceptCrashLosesNoPush.

// accept/after-claim: a claim without a record. The retry is that push: accepted under the
// claimed ids, its record and job written.
func TestAcceptRetryTakesOverAClaimWithoutRecord(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"push", "/1.1/push", `{"data":{"alert":"x"},"req_id":"r1"}`},
		{"devices", "/1.1/push/devices", `{"data":{"alert":"x"},"req_id":"r1","device_type":"ios","device_ids":["t1","t2"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			app := e.newApp(nil)
			ctx := context.Background()
			claimedAt := e.clock().Add(-time.Second).Truncate(time.Millisecond)
			if _, ok, err := e.st.ClaimReqID(ctx, app.ID, "r1", store.ReqClaim{ObjectID: "claimed0001", CreatedAt: claimedAt}, ReqIDWindow); err != nil || !ok {
				t.Fatalf("claim: %v %v", ok, err)
			}
			m := e.do(app, master, "POST", tc.path, tc.body).JSON(t)
			if m["objectId"] != "claimed0001" || m["createdAt"] != push.FormatTime(claimedAt) {
				t.Fatalf("retry answered %v, want the claimed objectId and createdAt", m)
			}
			rec, err := e.st.GetNotification(ctx, app.ID, "claimed0001")
			if err != nil || rec.Status != push.StatusInQueue || rec.PendingJob == nil || rec.ReqID != "r1" {
				t.Fatalf("record after the retry: %+v, %v; want in-queue holding its job", rec, err)
			}
			jobs := e.jobs()
			if len(jobs) != 1 || jobs[0].ID != "claimed0001" || jobs[0].NotificationObjectID != "claimed0001" {
				t.Fatalf("jobs %+v, want one, of the claimed record", jobs)
			}
			// A further retry is a duplicate of it, not a third push.
			if m := e.do(app, master, "POST", tc.path, tc.body).JSON(t); m["objectId"] != "claimed0001" {
				t.Fatalf("second retry answered %v", m)
			}
		})
	}
}

// accept/after-record: a record holding its job, written by a process that died before its
// append. The retry appends the job and answers the record's ids. The same state written by
// this process (its call finished) is answered without a second job.
func TestAcceptRetryAppendsTheJobOfARecordLeftByAnotherProcess(t *testing.T) {
	for _, tc := range []struct {
		by       string
		wantJobs int
	}{{"a-dead-process", 1}, {"", 0}} {
		t.Run(fmt.Sprintf("pendingBy=%q", tc.by), func(t *testing.T) {
			e := newEnv(t)
			app := e.newApp(nil)
			ctx := context.Background()
			by := tc.by
			if by == "" {
				by = e.svc.incarnation
			}
			at := e.clock().Add(-time.Second).Truncate(time.Millisecond)
			if _, ok, err := e.st.ClaimReqID(ctx, app.ID, "r1", store.ReqClaim{ObjectID: "left0001", CreatedAt: at}, ReqIDWindow); err != nil || !ok {
				t.Fatalf("claim: %v %v", ok, err)
			}
			job := push.Job{ID: "left0001", AppID: app.ID, NotificationObjectID: "left0001", Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"x"}`), CreatedAt: at}
			n := push.Notification{ObjectID: "left0001", AppID: app.ID, NotificationID: "nid1", Status: push.StatusInQueue,
				CreatedAt: at, UpdatedAt: at, ReqID: "r1", PendingJob: &job, PendingBy: by}
			if err := e.st.CreateNotification(ctx, n); err != nil {
				t.Fatal(err)
			}
			m := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"},"req_id":"r1"}`).JSON(t)
			if m["objectId"] != "left0001" {
				t.Fatalf("retry answered %v, want left0001", m)
			}
			jobs := e.jobs()
			if len(jobs) != tc.wantJobs || tc.wantJobs == 1 && jobs[0].ID != "left0001" {
				t.Fatalf("jobs %+v, want %d of left0001", jobs, tc.wantJobs)
			}
		})
	}
}

// A scheduled push's accept/after-claim: the retry writes the record and its schedule under the
// claimed ids; accept/after-record cannot leave a record without its schedule (one write).
func TestAcceptRetryTakesOverAScheduledClaim(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	ctx := context.Background()
	claimedAt := e.clock().Truncate(time.Millisecond)
	if _, ok, err := e.st.ClaimReqID(ctx, app.ID, "r1", store.ReqClaim{ObjectID: "sched0001", CreatedAt: claimedAt}, ReqIDWindow); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	at := e.clock().Add(time.Hour).Format(time.RFC3339)
	m := e.do(app, master, "POST", "/1.1/push", fmt.Sprintf(`{"data":{"alert":"x"},"req_id":"r1","push_time":%q}`, at)).JSON(t)
	if m["objectId"] != "sched0001" {
		t.Fatalf("retry answered %v, want sched0001", m)
	}
	rec, err := e.st.GetNotification(ctx, app.ID, "sched0001")
	if err != nil || rec.Status != push.StatusScheduled || rec.ScheduledID == 0 {
		t.Fatalf("record %+v, %v; want scheduled", rec, err)
	}
	sc, err := e.st.GetScheduled(ctx, app.ID, rec.ScheduledID)
	if err != nil || sc.Job.ID != "sched0001" || sc.Job.NotificationObjectID != "sched0001" {
		t.Fatalf("schedule %+v, %v; want the job of sched0001", sc, err)
	}
	if n := len(e.jobs()); n != 0 {
		t.Fatalf("%d jobs before the push time", n)
	}
}

// claimCounter is the real store, counting the req_id claims taken with and without their
// own fsync.
type claimCounter struct {
	*pebble.Store
	synced, unsynced atomic.Int32
}

func (c *claimCounter) ClaimReqID(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error) {
	c.synced.Add(1)
	return c.Store.ClaimReqID(ctx, appID, reqID, claim, ttl)
}

func (c *claimCounter) ClaimReqIDNoSync(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error) {
	c.unsynced.Add(1)
	return c.Store.ClaimReqIDNoSync(ctx, appID, reqID, claim, ttl)
}

// Where a push is not written whole (Deps.Joint unset), a req_id is claimed without an fsync of
// its own only where the job's synced append makes it durable (Deps.LogSyncsStore), and the
// claim still answers a retry with the first push.
func TestAcceptClaimsWithoutOwnSyncOnlyBeforeASyncedAppend(t *testing.T) {
	for _, syncs := range []bool{true, false} {
		t.Run(fmt.Sprintf("LogSyncsStore=%v", syncs), func(t *testing.T) {
			var cc *claimCounter
			e := newEnv(t, func(d *Deps) {
				cc = &claimCounter{Store: d.Store.(*pebble.Store)}
				// Not written whole (Deps.Joint): the claim's own write is what is counted.
				d.Store, d.LogSyncsStore, d.Joint = cc, syncs, nil
			})
			app := e.newApp(nil)
			first := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"},"req_id":"r1"}`).JSON(t)
			again := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"},"req_id":"r1"}`).JSON(t)
			if first["objectId"] == nil || again["objectId"] != first["objectId"] {
				t.Fatalf("the retry answered %v, want the first push %v", again, first)
			}
			synced, unsynced := cc.synced.Load(), cc.unsynced.Load()
			if syncs && (synced != 0 || unsynced != 2) || !syncs && (synced != 2 || unsynced != 0) {
				t.Errorf("claims with their own fsync %d, without %d; want %d without", synced, unsynced, map[bool]int{true: 2, false: 0}[syncs])
			}
			if n := len(e.jobs()); n != 1 {
				t.Errorf("%d jobs appended, want 1", n)
			}
		})
	}
}

// jointFails is a JointAccepter that fails every write, as a failed commit does (nothing of
// the push written).
type jointFails struct{}

func (jointFails) AcceptJoint(context.Context, push.Notification, time.Duration, string, queue.Record) (store.ReqClaim, bool, error) {
	return store.ReqClaim{}, false, errors.New("disk full")
}

// Over the embedded store and log a push is written whole (Deps.Joint, as pushd serve wires it):
// its record holds no copy of the job and no pending-jobs row, the job is in push.jobs once, and a
// retry with its req_id answers it without a second job. A write that fails answers 500 and
// leaves nothing: the retry is a new push.
func TestAcceptWritesThePushWhole(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	ctx := context.Background()
	for _, body := range []string{`{"data":{"alert":"x"},"req_id":"w1"}`, `{"data":{"alert":"y"}}`} {
		first := e.do(app, master, "POST", "/1.1/push", body).JSON(t)
		oid, _ := first["objectId"].(string)
		rec, err := e.st.GetNotification(ctx, app.ID, oid)
		if err != nil || rec.Status != push.StatusInQueue || rec.PendingJob != nil {
			t.Fatalf("record of %s: %+v, %v; want in queue without a copy of its job", body, rec, err)
		}
	}
	if again := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"},"req_id":"w1"}`).JSON(t); again["objectId"] == nil {
		t.Fatalf("retry answered %v", again)
	}
	if pending, err := e.st.PendingJobs(ctx, app.ID, e.clock().Add(time.Hour), 10); err != nil || len(pending) != 0 {
		t.Fatalf("pending-jobs rows: %d, %v; want none", len(pending), err)
	}
	if jobs := e.jobs(); len(jobs) != 2 {
		t.Fatalf("%d jobs in push.jobs, want 2 (the retry's is the first push's)", len(jobs))
	}

	f := newEnv(t, func(d *Deps) { d.Joint = jointFails{} })
	app = f.newApp(nil)
	if r := f.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"},"req_id":"w2"}`); r.Status != 500 {
		t.Fatalf("a failed write answered %d %s, want 500", r.Status, r.Body)
	}
	if _, claimed, err := f.st.ClaimReqIDNoSync(ctx, app.ID, "w2", store.ReqClaim{ObjectID: "next", CreatedAt: f.clock()}, ReqIDWindow); err != nil || !claimed {
		t.Fatalf("the req_id after a failed write: claimed %v, %v; want it free", claimed, err)
	}
	if n := len(f.jobs()); n != 0 {
		t.Fatalf("%d jobs after a failed write, want none", n)
	}
}
