package pebble

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store"
)

// crashReopen opens the state mem would have after a power cut now (only synced data kept).
func crashReopen(t *testing.T, mem *vfs.MemFS) *Store {
	t.Helper()
	s, err := Open("/db", Options{FS: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// closeReopen closes s and opens the store in dir again (a clean restart: every cache empty),
// closed when the test ends.
func closeReopen(t *testing.T, s *Store, dir string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	return s2
}

// openCrashable opens a store on a new file system that a power cut can be simulated on
// (crashReopen), closed when the test ends.
func openCrashable(t *testing.T) (*Store, *vfs.MemFS) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	s, err := Open("/db", Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, mem
}

// openCrashableWithLog is openCrashable with queue/embedded on the store's DB, as pushd serve
// runs them; the log is closed before the store.
func openCrashableWithLog(t *testing.T) (*Store, *embedded.Log, *vfs.MemFS) {
	t.Helper()
	s, mem := openCrashable(t)
	lg, err := embedded.Open(s.DB(), embedded.Options{TrimInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close() })
	return s, lg, mem
}

func testRecord(oid string) push.Notification {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return push.Notification{ObjectID: oid, AppID: "app", NotificationID: "nid-" + oid, CreatedAt: now, UpdatedAt: now}
}

// TestStoreCrashWritesWithoutOwnSyncAreCoveredByLaterSync cuts power (a file system that
// keeps only synced data) after writes that do not wait for their own fsync: PutInstallation
// and CreateNotification (applied, then an fsync after the stripes are released),
// CreateNotificationNoSync followed by a synced write of the store or by a queue/embedded
// Append on the same DB, ClaimReqIDNoSync followed by such an Append, and
// UpdateNotificationNoSync followed by a synced write of the store. Everything acknowledged is there after the crash; a
// CreateNotificationNoSync that no synced write followed is not, which shows that the file
// system really drops what was not synced. The same for a task's final progress written
// without its fsync right before the synced record update that completes the task, and for
// checkpoints and daily-volume reservations written without one between synced checkpoints.
func TestStoreCrashWritesWithoutOwnSyncAreCoveredByLaterSync(t *testing.T) {
	ctx := context.Background()
	s, lg, mem := openCrashableWithLog(t)

	inst := push.Installation{Route: push.Route{ObjectID: "o1", DeviceType: push.DeviceAndroid, InstallationID: "iid1",
		Channels: []string{"news"}, UpdatedAt: 5}, CreatedAt: 5, Doc: []byte(`{"v":1}`)}
	if err := s.PutInstallation(ctx, "app", 4, inst); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNotification(ctx, testRecord("synced")); err != nil {
		t.Fatal(err)
	}
	afterOwn := crashReopen(t, mem)
	if _, err := afterOwn.GetNotification(ctx, "app", "synced"); err != nil {
		t.Errorf("record after the crash: %v", err)
	}
	if got, err := afterOwn.GetInstallation(ctx, "app", "o1"); err != nil || string(got.Doc) != `{"v":1}` {
		t.Errorf("installation after the crash = %s, %v", got.Doc, err)
	}

	// A record without its own fsync, then a synced write of the store.
	if err := s.CreateNotificationNoSync(ctx, testRecord("before-store-sync")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskProgress(ctx, push.TaskProgress{JobID: "j", TaskID: "t"}); err != nil {
		t.Fatal(err)
	}
	// A req_id claim and a record without their own fsync, then a job appended to the
	// embedded log (pushapi's order).
	claimAt := time.Now()
	if _, ok, err := s.ClaimReqIDNoSync(ctx, "app", "req-before-append", store.ReqClaim{ObjectID: "before-append", CreatedAt: claimAt}, time.Hour); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if err := s.CreateNotificationNoSync(ctx, testRecord("before-append")); err != nil {
		t.Fatal(err)
	}
	if err := lg.Append(ctx, queue.TopicJobs, queue.Record{Partition: 0, Key: []byte("app"), Value: []byte("job")}); err != nil {
		t.Fatal(err)
	}
	// A task's final progress without its own fsync, then the synced record update that
	// completes the task (fan-out's order).
	if err := s.CreateNotification(ctx, testRecord("completed")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskProgressNoSync(ctx, push.TaskProgress{JobID: "j", TaskID: "final", Done: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateNotification(ctx, "app", "completed", func(n *push.Notification) error {
		n.TasksDone++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A record update without its own fsync (a plan the planner runs itself), then the task's
	// synced checkpoint.
	if err := s.CreateNotification(ctx, testRecord("planned")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateNotificationNoSync(ctx, "app", "planned", func(n *push.Notification) error {
		n.Tasks = 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskProgress(ctx, push.TaskProgress{JobID: "j", TaskID: "planned"}); err != nil {
		t.Fatal(err)
	}
	// Checkpoints and daily-volume reservations without their own fsync, then the task's
	// synced checkpoint (fanout.WorkerConfig.SyncEvery).
	for i := range 3 {
		if _, err := s.AddDailyVolumeNoSync(ctx, "app", "2026-12-02", 100); err != nil {
			t.Fatal(err)
		}
		if err := s.PutTaskProgressNoSync(ctx, push.TaskProgress{JobID: "j", TaskID: "batches", Epoch: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutTaskProgress(ctx, push.TaskProgress{JobID: "j", TaskID: "batches", Epoch: 4}); err != nil {
		t.Fatal(err)
	}
	afterAck := crashReopen(t, mem)

	// The control: no synced write follows this one.
	if _, ok, err := s.ClaimReqIDNoSync(ctx, "app", "req-never-synced", store.ReqClaim{ObjectID: "never-synced", CreatedAt: claimAt}, time.Hour); err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if err := s.CreateNotificationNoSync(ctx, testRecord("never-synced")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskProgressNoSync(ctx, push.TaskProgress{JobID: "j", TaskID: "never-synced", Done: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateNotificationNoSync(ctx, "app", "completed", func(n *push.Notification) error {
		n.TasksDone = 99
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddDailyVolumeNoSync(ctx, "app", "2026-12-02", 50); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTaskProgressNoSync(ctx, push.TaskProgress{JobID: "j", TaskID: "batches", Epoch: 5}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.DailyVolume(ctx, "app", "2026-12-02"); err != nil || v != 350 {
		t.Fatalf("daily volume before the crash = %d, %v; want 350", v, err)
	}
	afterUnsynced := crashReopen(t, mem)

	for _, c := range []*Store{afterAck, afterUnsynced} {
		for _, oid := range []string{"synced", "before-store-sync", "before-append"} {
			if _, err := c.GetNotification(ctx, "app", oid); err != nil {
				t.Errorf("record %s after the crash: %v", oid, err)
			}
		}
		got, err := c.GetInstallation(ctx, "app", "o1")
		if err != nil || string(got.Doc) != `{"v":1}` {
			t.Errorf("installation after the crash = %s, %v", got.Doc, err)
		}
		if oid, err := c.LookupDevice(ctx, "app", push.KindIID, "iid1"); err != nil || oid != "o1" {
			t.Errorf("device row after the crash = %q, %v", oid, err)
		}
	}
	for _, c := range []*Store{afterAck, afterUnsynced} {
		if p, err := c.GetTaskProgress(ctx, "j", "final"); err != nil || !p.Done {
			t.Errorf("final progress after the crash = %+v, %v; want done", p, err)
		}
		if r, err := c.GetNotification(ctx, "app", "completed"); err != nil || r.TasksDone != 1 {
			t.Errorf("completed record after the crash: %d tasks done, %v; want 1 (an update no fsync covered is lost)", r.TasksDone, err)
		}
		if r, err := c.GetNotification(ctx, "app", "planned"); err != nil || r.Tasks != 1 {
			t.Errorf("planned record after the crash: %d tasks, %v; want 1", r.Tasks, err)
		}
	}
	for _, c := range []*Store{afterAck, afterUnsynced} {
		// The claim is there: a retry of the call is answered with its record.
		prev, ok, err := c.ClaimReqID(ctx, "app", "req-before-append", store.ReqClaim{ObjectID: "retry", CreatedAt: claimAt.Add(time.Second)}, time.Hour)
		if err != nil || ok || prev.ObjectID != "before-append" {
			t.Errorf("claim after the crash = %+v, claimed anew %v, %v; want the claim of before-append", prev, ok, err)
		}
	}
	for _, c := range []*Store{afterAck, afterUnsynced} {
		// The reservations and the checkpoint the synced one followed; not those after it.
		if v, err := c.DailyVolume(ctx, "app", "2026-12-02"); err != nil || v != 300 {
			t.Errorf("daily volume after the crash = %d, %v; want 300", v, err)
		}
		if p, err := c.GetTaskProgress(ctx, "j", "batches"); err != nil || p.Epoch != 4 {
			t.Errorf("checkpoint after the crash = epoch %d, %v; want 4", p.Epoch, err)
		}
	}
	if _, ok, err := afterUnsynced.ClaimReqID(ctx, "app", "req-never-synced", store.ReqClaim{ObjectID: "retry", CreatedAt: claimAt.Add(time.Second)}, time.Hour); err != nil || !ok {
		t.Errorf("a claim no fsync covered survived the crash (claimed anew %v, %v)", ok, err)
	}
	if _, err := afterUnsynced.GetTaskProgress(ctx, "j", "never-synced"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a progress no fsync covered survived the crash (%v)", err)
	}
	if _, err := afterUnsynced.GetNotification(ctx, "app", "never-synced"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a record no fsync covered survived the crash (%v): the test file system keeps unsynced data", err)
	}
}
