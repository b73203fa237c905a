package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

func pendingIDs(t *testing.T, s store.Store, app string, before time.Time, limit int) []string {
	t.Helper()
	recs, err := s.PendingJobs(bg, app, before, limit)
	if err != nil {
		t.Fatalf("PendingJobs: %v", err)
	}
	var ids []string
	for _, n := range recs {
		if n.PendingJob == nil || n.PendingJob.ID != "job-"+n.ObjectID {
			t.Fatalf("PendingJobs gave record %s without its job: %+v", n.ObjectID, n.PendingJob)
		}
		ids = append(ids, n.ObjectID)
	}
	return ids
}

func withJob(n push.Notification) push.Notification {
	n.PendingJob = &push.Job{ID: n.JobID, AppID: n.AppID, NotificationObjectID: n.ObjectID, Kind: push.JobQuery, CreatedAt: n.CreatedAt}
	return n
}

// testPendingJobs: the index of records holding a pending job follows creates, updates that
// drop or move the job, and deletes, per app, longest pending first.
func testPendingJobs(t *testing.T, s store.Store) {
	app, other := uniq("app"), uniq("app")
	t0 := ms(time.Now().Add(-time.Hour)).UTC()
	for i, oid := range []string{"p1", "p2"} {
		if err := s.CreateNotification(bg, withJob(notif(app, oid, "nid", t0.Add(time.Duration(i)*time.Minute)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateNotification(bg, notif(app, "p3", "nid", t0)); err != nil { // no job
		t.Fatal(err)
	}
	if err := s.CreateNotification(bg, withJob(notif(other, "p9", "nid", t0))); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	wantIDs(t, "pending before t0+30s", pendingIDs(t, s, app, t0.Add(30*time.Second), 10), "p1")
	wantIDs(t, "pending before now", pendingIDs(t, s, app, now, 10), "p1", "p2")
	wantIDs(t, "pending before now, limit 1", pendingIDs(t, s, app, now, 1), "p1")
	wantIDs(t, "pending before t0", pendingIDs(t, s, app, t0, 10))

	// The planner takes p1's job.
	if _, err := s.UpdateNotification(bg, app, "p1", func(n *push.Notification) error {
		n.Status, n.PendingJob = push.StatusInProcess, nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "pending after p1 was taken", pendingIDs(t, s, app, now, 10), "p2")
	// A scheduled push firing again sets a job pending since it fired.
	if _, err := s.UpdateNotification(bg, app, "p3", func(n *push.Notification) error {
		*n = withJob(*n)
		n.PendingJob.QueryAt = t0.Add(2 * time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "pending before t0+90s", pendingIDs(t, s, app, t0.Add(90*time.Second), 10), "p2")
	wantIDs(t, "pending after p3 fired", pendingIDs(t, s, app, now, 10), "p2", "p3")
	// A job's query time moved in place (the same job, changed by the update): the row
	// under the old time goes.
	if _, err := s.UpdateNotification(bg, app, "p2", func(n *push.Notification) error {
		n.PendingJob.QueryAt = t0.Add(3 * time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "pending before t0+150s", pendingIDs(t, s, app, t0.Add(150*time.Second), 10), "p3")
	if got := pendingIDs(t, s, app, now, 10); !slices.Equal(got, []string{"p3", "p2"}) {
		t.Errorf("pending after p2's job moved in place: got %q, want p3 then p2 (longest pending first)", got)
	}
	if err := s.DeleteNotification(bg, app, "p2"); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "pending after p2 was deleted", pendingIDs(t, s, app, now, 10), "p3")
	wantIDs(t, "other app", pendingIDs(t, s, other, now, 10), "p9")
}

// testCreateScheduledNotification: record and schedule are written together; a second record
// of the objectId writes neither.
func testCreateScheduledNotification(t *testing.T, s store.Store) {
	app := uniq("app")
	t0 := ms(time.Now().Add(-time.Hour)).UTC()
	n := notif(app, "s1", "nid", t0)
	n.Status, n.ScheduledID = push.StatusScheduled, 1
	sc := push.Scheduled{ID: 1, AppID: app, DueAt: t0.Add(time.Minute), Job: push.Job{ID: "s1", AppID: app, NotificationObjectID: "s1"}, CreatedAt: t0}
	if err := s.CreateScheduledNotification(bg, n, sc); err != nil {
		t.Fatalf("CreateScheduledNotification: %v", err)
	}
	got, err := s.GetNotification(bg, app, "s1")
	if err != nil || got.Status != push.StatusScheduled || got.ScheduledID != 1 {
		t.Fatalf("record = %+v, %v", got, err)
	}
	gs, err := s.GetScheduled(bg, app, 1)
	if err != nil || gs.Job.ID != "s1" || !gs.DueAt.Equal(sc.DueAt) {
		t.Fatalf("schedule = %+v, %v", gs, err)
	}
	sc2 := sc
	sc2.ID = 2
	err = s.CreateScheduledNotification(bg, n, sc2)
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("second record of s1: %v, want ErrExists", err)
	}
	if _, err := s.GetScheduled(bg, app, 2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused record's schedule was written: %v", err)
	}
	list, err := s.ListScheduled(bg, app)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListScheduled = %d, %v; want 1", len(list), err)
	}
}
