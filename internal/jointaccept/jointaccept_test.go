package jointaccept

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/queue/queuetest"
	"github.com/pushd/pushd/store/pebble"
)

// TestAcceptJointWholeOrNothing: a push written whole holds no copy of its job and no
// pending-jobs row, its job is read from the log once; a duplicate of its req_id and a record
// the store refuses write nothing, and the log's readers are not held at the offsets those
// calls had reserved (the next job is read).
func TestAcceptJointWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lg, err := embedded.Open(st.DB(), embedded.Options{TrimInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	w, err := New(st, lg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := func(oid, reqID string) push.Notification {
		return push.Notification{ObjectID: oid, AppID: "app", NotificationID: "nid-" + oid, ReqID: reqID,
			Status: push.StatusInQueue, CreatedAt: now, UpdatedAt: now}
	}
	job := func(v string) queue.Record { return queue.Record{Partition: 0, Key: []byte("app"), Value: []byte(v)} }

	if _, ok, err := w.AcceptJoint(ctx, rec("p1", "r1"), time.Minute, queue.TopicJobs, job("job-p1")); err != nil || !ok {
		t.Fatalf("first push: %v, %v", ok, err)
	}
	if prev, ok, err := w.AcceptJoint(ctx, rec("p2", "r1"), time.Minute, queue.TopicJobs, job("job-p2")); err != nil || ok || prev.ObjectID != "p1" {
		t.Fatalf("duplicate req_id: %+v, %v, %v; want refused, held by p1", prev, ok, err)
	}
	bad := rec("", "r2") // no objectId: refused by the store
	if _, _, err := w.AcceptJoint(ctx, bad, time.Minute, queue.TopicJobs, job("job-bad")); err == nil {
		t.Fatal("a record without objectId was accepted")
	}
	if _, ok, err := w.AcceptJoint(ctx, rec("p3", ""), time.Minute, queue.TopicJobs, job("job-p3")); err != nil || !ok {
		t.Fatalf("push without req_id: %v, %v", ok, err)
	}
	got, err := st.GetNotification(ctx, "app", "p1")
	if err != nil || got.PendingJob != nil || got.Status != push.StatusInQueue {
		t.Fatalf("record p1: %+v, %v; want in queue, no job copy", got, err)
	}
	if _, err := st.GetNotification(ctx, "app", "p2"); err == nil {
		t.Fatal("the duplicate's record was written")
	}
	if pending, err := st.PendingJobs(ctx, "app", now.Add(time.Hour), 10); err != nil || len(pending) != 0 {
		t.Fatalf("pending-jobs rows: %d, %v; want none", len(pending), err)
	}

	// The log is not held at the offsets reserved by the calls that wrote nothing.
	queuetest.ExpectValues(t, lg, queue.TopicJobs, "g", "job-p1", "job-p3")
}
