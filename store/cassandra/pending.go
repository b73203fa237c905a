package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// pending_jobs indexes the records holding a pending job (push.Notification.PendingJob). Its
// row is written with or before the record's and removed with or after it, so the index is a
// superset of the pending records: PendingJobs reads each record and removes a row whose record
// no longer holds that job.
const (
	cqlPendingInsert = `INSERT INTO pending_jobs (app_id, pending_since, object_id) VALUES (?, ?, ?)`
	cqlPendingDelete = `DELETE FROM pending_jobs WHERE app_id = ? AND pending_since = ? AND object_id = ?`
	cqlPendingList   = `SELECT pending_since, object_id FROM pending_jobs WHERE app_id = ? AND pending_since < ? LIMIT ?`
)

func pendingSince(n *push.Notification) time.Time {
	return n.PendingSince().Truncate(time.Millisecond)
}

// addPending adds the pending_jobs row of n, if it holds a pending job, to b.
func addPending(b batch, n *push.Notification) {
	if n.PendingJob != nil {
		b.Query(cqlPendingInsert, n.AppID, pendingSince(n), n.ObjectID)
	}
}

// pendingMoved says whether an update from old to n adds (add) or drops (drop) a pending row.
func pendingMoved(old, n *push.Notification) (add, drop bool) {
	oldAt, newAt := pendingSince(old), pendingSince(n)
	if old.PendingJob != nil && n.PendingJob != nil && oldAt.Equal(newAt) {
		return false, false
	}
	return n.PendingJob != nil, old.PendingJob != nil
}

// CreateScheduledNotification implements store.Store: the by-id row is claimed with LWT as in
// CreateNotification, then the record's rows and the schedule's rows go in one logged batch.
func (s *Store) CreateScheduledNotification(ctx context.Context, n push.Notification, sc push.Scheduled) error {
	day := dayOf(n.CreatedAt)
	ttl := recordTTL(&n)
	if err := s.claimRecordID(ctx, &n, day, ttl); err != nil {
		return err
	}
	doc, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("cannot encode push record %s: %w", n.ObjectID, err)
	}
	sdoc, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("cannot encode scheduled push %d: %w", sc.ID, err)
	}
	slot, due := slotOf(sc.ID), sc.DueAt.Truncate(time.Millisecond)
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(cqlNotifInsert, ttl, doc, n.Status, n.AppID, day, n.CreatedAt, n.ObjectID)
	b.Query(cqlNIDInsert, n.AppID, n.NotificationID, n.ObjectID, ttl)
	addPending(b, &n)
	b.Query(cqlSchedInsert, slot, due, sc.ID, sc.AppID, sdoc)
	b.Query(cqlSchedIDInsert, sc.AppID, sc.ID, slot, due)
	if err := s.s.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cannot create scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	return nil
}

// PendingJobs implements store.Store.
func (s *Store) PendingJobs(ctx context.Context, appID string, before time.Time, limit int) ([]push.Notification, error) {
	it := s.q(ctx, cqlPendingList, appID, before, limit).Iter()
	type row struct {
		since time.Time
		oid   string
	}
	var (
		rows  []row
		since time.Time
		oid   string
	)
	for it.Scan(&since, &oid) {
		rows = append(rows, row{since, oid})
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cannot list pending jobs of app %s: %w", appID, err)
	}
	var out []push.Notification
	for _, r := range rows {
		n, _, _, err := s.readRecord(ctx, appID, r.oid)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("cannot list pending jobs of app %s: %w", appID, err)
		}
		if err == nil && n.PendingJob != nil && pendingSince(&n).Equal(r.since) {
			if n.PendingSince().Before(before) {
				out = append(out, n)
			}
			continue
		}
		// A row left by an update or a delete that stopped after its record's write.
		if err := s.q(ctx, cqlPendingDelete, appID, r.since, r.oid).Exec(); err != nil {
			return nil, fmt.Errorf("cannot drop a stale pending job row of app %s: %w", appID, err)
		}
	}
	return out, nil
}
