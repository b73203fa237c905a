package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/pushjson"
	"github.com/pushd/pushd/store"
)

// CreateNotification implements store.Store; a record with the same objectId → store.ErrExists.
// It returns once the record is durable (commitUnlockSync).
func (s *Store) CreateNotification(ctx context.Context, n push.Notification) error {
	return s.createNotification(&n, true)
}

// CreateNotificationNoSync is CreateNotification without waiting for the WAL fsync: the record
// is visible at once but survives a crash only once a write to this DB that was synced after
// it returns — any synced write of this store, a queue/embedded Append on DB() (every Append
// is synced), or SyncWAL. The reasoning (Pebble's single, ordered WAL) is in commit.go. Use it
// only when such a synced write follows and the caller answers after it; pushapi does for a
// push record followed by its job.
func (s *Store) CreateNotificationNoSync(ctx context.Context, n push.Notification) error {
	return s.createNotification(&n, false)
}

// CreateNewNotificationNoSync is CreateNotificationNoSync for a record whose objectId the
// caller has just generated with push.NewObjectID (96 random bits, so no record can hold it
// yet): it skips the read that refuses an existing one. That read is a point lookup missing
// every memtable and level, which at the intake's rate cost about a sixth of a push's CPU
// (docs/decisions.md, "Intake and upserts"). A caller that adopts an objectId (a req_id
// claim taken over) must use CreateNotificationNoSync.
func (s *Store) CreateNewNotificationNoSync(ctx context.Context, n push.Notification) error {
	return s.createNotificationChecked(&n, false, false)
}

// SyncWAL returns once every write made to the DB before the call is durable.
func (s *Store) SyncWAL() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := s.syncWAL(); err != nil {
		return fmt.Errorf("cannot sync the store's WAL: %w", err)
	}
	return nil
}

func (s *Store) createNotification(n *push.Notification, sync bool) error {
	return s.createNotificationChecked(n, sync, true)
}

// createNotificationChecked writes n, refusing an existing record with store.ErrExists when
// check is set.
func (s *Store) createNotificationChecked(n *push.Notification, sync, check bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if n.ObjectID == "" || n.AppID == "" {
		return errors.New("cannot create a push record without appId and objectId")
	}
	unlock := s.locks.lock(stripeOf("n", n.AppID, n.ObjectID))
	var b *pebble.Batch
	var doc []byte
	var err error
	if check {
		b, doc, err = s.createNotificationBatch(n)
	} else {
		b, doc, err = s.newNotificationBatch(n)
	}
	if err != nil {
		unlock()
		return fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	defer b.Close()
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
	}
	// An objectId generated for this record (check unset) has had nothing counted under it.
	err = s.commitRecord(b, wo, n, doc, !check)
	unlock()
	if err != nil {
		return fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	return nil
}

// createNotificationBatch checks that n does not exist and builds the batch that writes it,
// and returns n's document. The caller holds n's stripe.
func (s *Store) createNotificationBatch(n *push.Notification) (*pebble.Batch, []byte, error) {
	var buf [128]byte
	key := notifKey(buf[:0], n.AppID, n.ObjectID)
	if doc, _ := s.recs.get(key); doc != nil {
		return nil, nil, store.ErrExists
	}
	_, found, err := s.getInto(nil, key)
	if err != nil {
		return nil, nil, err
	}
	if found {
		return nil, nil, store.ErrExists
	}
	return s.newNotificationBatch(n)
}

// newNotificationBatch builds the batch that writes n and its index rows, and returns n's
// document.
func (s *Store) newNotificationBatch(n *push.Notification) (*pebble.Batch, []byte, error) {
	b := s.db.NewBatch()
	doc, err := notificationRows(b, nil, n)
	if err != nil {
		_ = b.Close()
		return nil, nil, err
	}
	return b, doc, nil
}

// writeNotification writes n and its index rows, removing old's index rows when they differ,
// in one batch committed with wo. The caller holds n's stripe.
func (s *Store) writeNotification(old, n *push.Notification, wo *pebble.WriteOptions) error {
	b := s.db.NewBatch()
	defer b.Close()
	doc, err := notificationRows(b, old, n)
	if err != nil {
		return err
	}
	return s.commitRecord(b, wo, n, doc, false)
}

// commitRecord commits b, which writes record n as doc, and then tells the record cache
// (reccache.go): the new document once it is committed, or to forget the record when the
// commit failed or wrote it done or cancelled. The caller holds n's stripe until it returns.
func (s *Store) commitRecord(b *pebble.Batch, wo *pebble.WriteOptions, n *push.Notification, doc []byte, fresh bool) error {
	err := b.Commit(wo)
	var kb [keyBuf]byte
	key := notifKey(kb[:0], n.AppID, n.ObjectID)
	if err != nil || n.Finished() {
		// Failed: the next read asks Pebble. Done or cancelled: fan-out reads it no more, and
		// the room goes to the pushes still to plan.
		s.recs.drop(key)
		return err
	}
	s.recs.put(key, doc, fresh)
	return nil
}

// notificationRows adds n and its index rows to b, and the removal of old's index rows when
// they differ (old is nil for a new record). It returns n's document.
func notificationRows(b *pebble.Batch, old, n *push.Notification) ([]byte, error) {
	v, err := pushjson.AppendNotification(nil, n)
	if err != nil {
		return nil, err
	}
	// Keys are built in buffers on the stack: Batch.Set and Delete copy them.
	var tb, nb, kb [keyBuf]byte
	timeKey := notifTimeKey(tb[:0], n.AppID, n.CreatedAt.UnixNano(), n.ObjectID)
	nidKey := appendStr(notifNIDPrefix(nb[:0], n.AppID, n.NotificationID), n.ObjectID)
	if old != nil {
		if k := notifTimeKey(kb[:0], old.AppID, old.CreatedAt.UnixNano(), old.ObjectID); string(k) != string(timeKey) {
			if err := b.Delete(k, nil); err != nil {
				return nil, err
			}
		}
		if k := appendStr(notifNIDPrefix(kb[:0], old.AppID, old.NotificationID), old.ObjectID); string(k) != string(nidKey) {
			if err := b.Delete(k, nil); err != nil {
				return nil, err
			}
		}
	}
	if err := b.Set(notifKey(kb[:0], n.AppID, n.ObjectID), v, nil); err != nil {
		return nil, err
	}
	if old == nil || !old.CreatedAt.Equal(n.CreatedAt) {
		if err := b.Set(timeKey, nil, nil); err != nil {
			return nil, err
		}
	}
	if old == nil || old.NotificationID != n.NotificationID {
		if err := b.Set(nidKey, nil, nil); err != nil {
			return nil, err
		}
	}
	return v, pendingRows(b, old, n)
}

// pendingRows adds to b the pending_jobs row of n when it holds a pending job, and the removal
// of old's when it held one under another key.
func pendingRows(b *pebble.Batch, old, n *push.Notification) error {
	var key []byte
	var pb, ob [keyBuf]byte
	if n.PendingJob != nil {
		key = pendingKey(pb[:0], n.AppID, n.PendingSince().UnixNano(), n.ObjectID)
	}
	if old != nil && old.PendingJob != nil {
		k := pendingKey(ob[:0], old.AppID, old.PendingSince().UnixNano(), old.ObjectID)
		if string(k) == string(key) {
			return nil
		}
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	if key == nil {
		return nil
	}
	return b.Set(key, nil, nil)
}

func (s *Store) readNotification(appID, objectID string) (push.Notification, error) {
	var n push.Notification
	key := notifKey(nil, appID, objectID)
	v, _ := s.recs.get(key)
	if v == nil {
		var err error
		if v, err = s.get(key); err != nil {
			return n, err
		}
	}
	if err := pushjson.DecodeNotification(v, &n); err != nil {
		return n, fmt.Errorf("cannot decode push record %s of app %s: %w", objectID, appID, err)
	}
	return n, nil
}

// GetNotification implements store.Store.
func (s *Store) GetNotification(ctx context.Context, appID, objectID string) (push.Notification, error) {
	if err := s.enter(); err != nil {
		return push.Notification{}, err
	}
	defer s.exit()
	n, err := s.readNotification(appID, objectID)
	if err == nil {
		err = s.withDirectCounts(&n)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return n, fmt.Errorf("cannot get push record %s of app %s: %w", objectID, appID, err)
	}
	return n, err
}

// UpdateNotification implements store.Store: read, fn, write under the record's stripe. fn
// cannot move the record: AppID, ObjectID and CreatedAt (its keys) are restored after it runs;
// a changed NotificationID is re-indexed.
func (s *Store) UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	return s.updateNotification(appID, objectID, fn, pebble.Sync, true)
}

// UpdateNotificationNoSync is UpdateNotification without waiting for the WAL fsync: the update
// is visible at once and durable once a later synced write to this DB returns (commit.go).
// fanout.Planner records the plan of a task it runs itself with it.
func (s *Store) UpdateNotificationNoSync(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	return s.updateNotification(appID, objectID, fn, pebble.NoSync, true)
}

// ChangeNotification is UpdateNotification (sync) or UpdateNotificationNoSync (!sync) for a
// caller that does not read the record back: it skips the reads of the own-channel and
// receipt counts kept beside the record, which the result would carry (fanout.RecordChanger;
// the planner's update, where they were a tenth of its cost when its records had left recCache).
func (s *Store) ChangeNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error, sync bool) error {
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
	}
	_, err := s.updateNotification(appID, objectID, fn, wo, false)
	return err
}

// updateNotification reads, changes and writes the record under its stripe; counts says
// whether the result carries the counts kept beside it (withDirectCounts).
func (s *Store) updateNotification(appID, objectID string, fn func(*push.Notification) error, wo *pebble.WriteOptions, counts bool) (push.Notification, error) {
	if err := s.enter(); err != nil {
		return push.Notification{}, err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("n", appID, objectID))()
	n, err := s.readNotification(appID, objectID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return push.Notification{}, err
		}
		return push.Notification{}, fmt.Errorf("cannot update push record %s of app %s: %w", objectID, appID, err)
	}
	// old is what the index rows were written from: the keys' fields (ids, times) only,
	// which fn cannot change under it in a shallow copy, but for the pending job, copied
	// (fn may move its query time in place). One decode, where a second one made the copy:
	// a push's record is updated twice, and its JSON was the intake's largest cost.
	old := n
	if old.PendingJob != nil {
		j := *old.PendingJob
		old.PendingJob = &j
	}
	if err := fn(&n); err != nil {
		return push.Notification{}, err
	}
	n.AppID, n.ObjectID, n.CreatedAt = appID, objectID, old.CreatedAt
	if err := s.writeNotification(&old, &n, wo); err != nil {
		return push.Notification{}, fmt.Errorf("cannot update push record %s of app %s: %w", objectID, appID, err)
	}
	if !counts {
		return n, nil
	}
	// The result is the record as readers see it; fn saw (and wrote) the stored document only.
	if err := s.withDirectCounts(&n); err != nil {
		return push.Notification{}, fmt.Errorf("cannot read the own-channel counts of push record %s of app %s: %w", objectID, appID, err)
	}
	return n, nil
}

// DeleteNotification implements store.Store.
func (s *Store) DeleteNotification(ctx context.Context, appID, objectID string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if _, err := s.deleteNotification(appID, objectID, pebble.Sync, nil); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete push record %s of app %s: %w", objectID, appID, err)
	}
	return nil
}

// deleteNotification removes a record and its index rows under the record's stripe, if the
// record read there satisfies cond (nil: always); it says whether it did.
func (s *Store) deleteNotification(appID, objectID string, wo *pebble.WriteOptions, cond func(*push.Notification) bool) (bool, error) {
	defer s.locks.lock(stripeOf("n", appID, objectID))()
	n, err := s.readNotification(appID, objectID)
	if err != nil {
		return false, err
	}
	if cond != nil && !cond(&n) {
		return false, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	keys := [][]byte{
		notifKey(nil, appID, objectID),
		notifTimeKey(nil, appID, n.CreatedAt.UnixNano(), objectID),
		appendStr(notifNIDPrefix(nil, appID, n.NotificationID), objectID),
		directCountKey(nil, appID, objectID), // the own channel's counts, if any
	}
	if n.PendingJob != nil {
		keys = append(keys, pendingKey(nil, appID, n.PendingSince().UnixNano(), objectID))
	}
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return false, err
		}
	}
	if err := deleteReceipts(b, appID, objectID); err != nil { // vendor receipts' marks and counts
		return false, err
	}
	err = b.Commit(wo)
	s.recs.drop(keys[0]) // committed or not: the next read asks Pebble
	if err != nil {
		return false, err
	}
	return true, nil
}

// CreateScheduledNotification implements store.Store: the record, its index rows and both rows
// of the schedule in one synced batch.
func (s *Store) CreateScheduledNotification(ctx context.Context, n push.Notification, sc push.Scheduled) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if n.ObjectID == "" || n.AppID == "" || sc.AppID != n.AppID {
		return errors.New("cannot create a scheduled push record without appId and objectId, or for another app than its schedule")
	}
	v, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("cannot encode scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	unlock := s.locks.lockAll([]int{stripeOf("s", sc.AppID, fmt.Sprint(sc.ID)), stripeOf("n", n.AppID, n.ObjectID)})
	b, doc, err := s.createNotificationBatch(&n)
	if err != nil {
		unlock()
		return fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	defer b.Close()
	if err := b.Set(schedKey(nil, sc.AppID, sc.ID), v, nil); err != nil {
		unlock()
		return err
	}
	if err := b.Set(schedDueKey(nil, sc.DueAt.UnixNano(), sc.AppID, sc.ID), v, nil); err != nil {
		unlock()
		return err
	}
	err = s.commitRecord(b, pebble.Sync, &n, doc, false)
	unlock()
	if err != nil {
		return fmt.Errorf("cannot create scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	return nil
}

// PendingJobs implements store.Store, over the pending_jobs index, longest pending first.
func (s *Store) PendingJobs(ctx context.Context, appID string, before time.Time, limit int) ([]push.Notification, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	prefix := pendingPrefix(nil, appID)
	upper := appendInt64(pendingPrefix(nil, appID), before.UnixNano()) // keys from `before` on sort after it
	var out []push.Notification
	errLimit := errors.New("limit reached")
	err := s.iterate(prefix, upper, func(k, _ []byte) error {
		if len(out) >= limit {
			return errLimit
		}
		if len(k) < len(prefix)+8 {
			return store.ErrBadKey
		}
		oid, _, err := store.DecodeKeyString(k[len(prefix)+8:])
		if err != nil {
			return err
		}
		n, err := s.readNotification(appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted after the iterator opened
		}
		if err == nil {
			err = s.withDirectCounts(&n)
		}
		if err != nil {
			return err
		}
		if n.PendingJob != nil && n.PendingSince().Before(before) {
			out = append(out, n)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		return nil, fmt.Errorf("cannot list pending jobs of app %s: %w", appID, err)
	}
	return out, nil
}

// ListNotifications implements store.Store, newest first, over the time index.
func (s *Store) ListNotifications(ctx context.Context, appID string, fn func(*push.Notification) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	prefix := notifTimePrefix(nil, appID)
	var cbErr error
	err := s.iterate(prefix, prefixEnd(prefix), func(k, _ []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(k) < len(prefix)+8 {
			return store.ErrBadKey
		}
		oid, _, err := store.DecodeKeyString(k[len(prefix)+8:])
		if err != nil {
			return err
		}
		n, err := s.readNotification(appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted after the iterator opened
		}
		if err == nil {
			err = s.withDirectCounts(&n)
		}
		if err != nil {
			return err
		}
		if err := fn(&n); err != nil {
			cbErr = err
			return err
		}
		return nil
	})
	if cbErr != nil {
		return cbErr
	}
	if err != nil {
		return fmt.Errorf("cannot list push records of app %s: %w", appID, err)
	}
	return nil
}

// NotificationsByNID implements store.Store, newest first.
func (s *Store) NotificationsByNID(ctx context.Context, appID, notificationID string) ([]push.Notification, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	prefix := notifNIDPrefix(nil, appID, notificationID)
	var out []push.Notification
	err := s.iterate(prefix, prefixEnd(prefix), func(k, _ []byte) error {
		oid, _, err := store.DecodeKeyString(k[len(prefix):])
		if err != nil {
			return err
		}
		n, err := s.readNotification(appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err == nil {
			err = s.withDirectCounts(&n)
		}
		if err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list push records of app %s by notification id: %w", appID, err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}
