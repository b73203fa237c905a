package cassandra

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const (
	cqlNotifClaimID  = `INSERT INTO notifications_by_id (app_id, object_id, day, created_at) VALUES (?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	cqlNotifPutID    = `INSERT INTO notifications_by_id (app_id, object_id, day, created_at) VALUES (?, ?, ?, ?) USING TTL ?`
	cqlNotifGetID    = `SELECT day, created_at FROM notifications_by_id WHERE app_id = ? AND object_id = ?`
	cqlNotifDeleteID = `DELETE FROM notifications_by_id WHERE app_id = ? AND object_id = ? IF EXISTS`
	// An UPDATE, not an INSERT: it writes no row marker, so the row is gone once its cells
	// expire (an INSERT's marker written with TTL 0 would outlive them as an empty row).
	cqlNotifInsert  = `UPDATE notifications USING TTL ? SET doc = ?, status = ?, version = 1 WHERE app_id = ? AND day = ? AND created_at = ? AND object_id = ?`
	cqlNotifGet     = `SELECT doc, version FROM notifications WHERE app_id = ? AND day = ? AND created_at = ? AND object_id = ?`
	cqlNotifCAS     = `UPDATE notifications USING TTL ? SET doc = ?, status = ?, version = ? WHERE app_id = ? AND day = ? AND created_at = ? AND object_id = ? IF version = ?`
	cqlNotifDelete  = `DELETE FROM notifications WHERE app_id = ? AND day = ? AND created_at = ? AND object_id = ?`
	cqlNotifListDay = `SELECT doc FROM notifications WHERE app_id = ? AND day = ?`
	cqlNIDInsert    = `INSERT INTO notifications_by_nid (app_id, notification_id, object_id) VALUES (?, ?, ?) USING TTL ?`
	cqlNIDDelete    = `DELETE FROM notifications_by_nid WHERE app_id = ? AND notification_id = ? AND object_id = ?`
	cqlNIDList      = `SELECT object_id FROM notifications_by_nid WHERE app_id = ? AND notification_id = ?`
)

// recordDays is how many day partitions a listing reads: the 7-day retention plus today and
// one day of clock skew. A record created earlier whose push finished within 7 days (a push
// scheduled far ahead) is still readable by id and notification_id but no longer listed.
const recordDays = 9

// recordTTL is the TTL in seconds every row of a record is written with. Records expire by
// TTL, push.RecordRetention after their last write once their push is finished (done or
// cancelled); until then they are written with TTL 0 (no expiry, overriding the tables'
// default_time_to_live), so a push scheduled far ahead or still sending keeps its record.
// Every update of a finished record rewrites all its rows with the full TTL, as the Pebble
// sweep judges by the record's last update.
func recordTTL(n *push.Notification) int {
	if !n.Finished() {
		return 0
	}
	return int(push.RecordRetention / time.Second)
}

func dayOf(t time.Time) string { return t.UTC().Format("2006-01-02") }

// CreateNotification implements store.Store; the by-id row is claimed with LWT, so a second
// create of the objectId fails with store.ErrExists.
func (s *Store) CreateNotification(ctx context.Context, n push.Notification) error {
	day := dayOf(n.CreatedAt)
	ttl := recordTTL(&n)
	if err := s.claimRecordID(ctx, &n, day, ttl); err != nil {
		return err
	}
	doc, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("cannot encode push record %s: %w", n.ObjectID, err)
	}
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(cqlNotifInsert, ttl, doc, n.Status, n.AppID, day, n.CreatedAt, n.ObjectID)
	b.Query(cqlNIDInsert, n.AppID, n.NotificationID, n.ObjectID, ttl)
	addPending(b, &n)
	if err := s.s.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	return nil
}

// claimRecordID claims the objectId of a new record: its notifications_by_id row, INSERT IF NOT
// EXISTS. When the outcome is unknown, the row read at SERIAL is ours if it names the same day
// and creation time.
func (s *Store) claimRecordID(ctx context.Context, n *push.Notification, day string, ttl int) error {
	created := n.CreatedAt.Truncate(time.Millisecond)
	ours := func(ctx context.Context, _ map[string]any) (casState, error) {
		var (
			d  string
			at time.Time
		)
		found, err := s.serialRow(ctx, cqlNotifGetID, []any{n.AppID, n.ObjectID}, &d, &at)
		return stateOf(found, d == day && at.Equal(created)), err
	}
	applied, err := s.cas(ctx, s.q(ctx, cqlNotifClaimID, n.AppID, n.ObjectID, day, n.CreatedAt, ttl), map[string]any{}, ours)
	if err != nil {
		return fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	if !applied {
		return fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, store.ErrExists)
	}
	return nil
}

// recordRef locates a record's row.
type recordRef struct {
	day     string
	created time.Time
}

func (s *Store) readRecord(ctx context.Context, appID, objectID string) (push.Notification, recordRef, int64, error) {
	var (
		ref     recordRef
		n       push.Notification
		doc     []byte
		version int64
	)
	if err := s.q(ctx, cqlNotifGetID, appID, objectID).Scan(&ref.day, &ref.created); err != nil {
		return n, ref, 0, notFound(err)
	}
	if err := s.q(ctx, cqlNotifGet, appID, ref.day, ref.created, objectID).Scan(&doc, &version); err != nil {
		return n, ref, 0, notFound(err)
	}
	if err := json.Unmarshal(doc, &n); err != nil {
		return n, ref, 0, fmt.Errorf("cannot decode push record %s of app %s: %w", objectID, appID, err)
	}
	return n, ref, version, nil
}

// GetNotification implements store.Store.
func (s *Store) GetNotification(ctx context.Context, appID, objectID string) (push.Notification, error) {
	n, _, _, err := s.readRecord(ctx, appID, objectID)
	if err == nil {
		err = s.withDirectCounts(ctx, &n)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return n, fmt.Errorf("cannot get push record %s of app %s: %w", objectID, appID, err)
	}
	return n, err
}

// UpdateNotification implements store.Store with a compare-and-set on the row's version,
// retried on conflict. AppID, ObjectID and CreatedAt (the row's key) are kept.
func (s *Store) UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	for range maxCASRetries {
		n, ref, version, err := s.readRecord(ctx, appID, objectID)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return n, err
			}
			return n, fmt.Errorf("cannot update push record %s of app %s: %w", objectID, appID, err)
		}
		old := n
		old.PendingJob = nil
		if n.PendingJob != nil {
			j := *n.PendingJob
			old.PendingJob = &j
		}
		oldNID, created := n.NotificationID, n.CreatedAt
		if err := fn(&n); err != nil {
			return push.Notification{}, err
		}
		n.AppID, n.ObjectID, n.CreatedAt = appID, objectID, created
		addPend, dropPend := pendingMoved(&old, &n)
		if addPend { // before the record: the index may hold more than the pending records, never less
			if err := s.q(ctx, cqlPendingInsert, appID, pendingSince(&n), objectID).Exec(); err != nil {
				return push.Notification{}, fmt.Errorf("cannot index the pending job of push record %s of app %s: %w", objectID, appID, err)
			}
		}
		doc, err := json.Marshal(n)
		if err != nil {
			return push.Notification{}, fmt.Errorf("cannot encode push record %s: %w", objectID, err)
		}
		ttl := recordTTL(&n)
		// Outcome unknown: applied if the row at SERIAL holds this version and document;
		// another's update if its version moved otherwise (read again and retry).
		ours := func(ctx context.Context, _ map[string]any) (casState, error) {
			var (
				got []byte
				v   int64
			)
			found, err := s.serialRow(ctx, cqlNotifGet, []any{appID, ref.day, ref.created, objectID}, &got, &v)
			if found && v == version {
				return casNone, err
			}
			return stateOf(found, v == version+1 && bytes.Equal(got, doc)), err
		}
		applied, err := s.cas(ctx, s.q(ctx, cqlNotifCAS, ttl, doc, n.Status, version+1, appID, ref.day, ref.created, objectID, version),
			map[string]any{}, ours)
		if err != nil {
			return push.Notification{}, fmt.Errorf("cannot update push record %s of app %s: %w", objectID, appID, err)
		}
		if !applied {
			continue
		}
		if dropPend {
			if err := s.q(ctx, cqlPendingDelete, appID, pendingSince(&old), objectID).Exec(); err != nil {
				return n, fmt.Errorf("cannot drop the pending job row of push record %s of app %s: %w", objectID, appID, err)
			}
		}
		// A finished record's index rows get the TTL its row just got (they were written
		// without expiry while the push ran); a new notification_id is re-indexed.
		if oldNID != n.NotificationID || ttl != 0 {
			b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
			if oldNID != n.NotificationID {
				b.Query(cqlNIDDelete, appID, oldNID, objectID)
			}
			b.Query(cqlNIDInsert, appID, n.NotificationID, objectID, ttl)
			if ttl != 0 {
				b.Query(cqlNotifPutID, appID, objectID, ref.day, ref.created, ttl)
			}
			if err := s.s.ExecuteBatch(b); err != nil {
				return n, fmt.Errorf("cannot re-index push record %s of app %s: %w", objectID, appID, err)
			}
		}
		if err := s.withDirectCounts(ctx, &n); err != nil { // the record as readers see it
			return n, err
		}
		return n, nil
	}
	return push.Notification{}, fmt.Errorf("cannot update push record %s of app %s: %d conflicting updates in a row", objectID, appID, maxCASRetries)
}

// DeleteNotification implements store.Store; of concurrent deleters one succeeds.
func (s *Store) DeleteNotification(ctx context.Context, appID, objectID string) error {
	n, ref, _, err := s.readRecord(ctx, appID, objectID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete push record %s of app %s: %w", objectID, appID, err)
	}
	applied, err := s.cas(ctx, s.q(ctx, cqlNotifDeleteID, appID, objectID), map[string]any{},
		s.serialGone(cqlNotifGetID, []any{appID, objectID}, new(string), new(time.Time)))
	if err != nil {
		return fmt.Errorf("cannot delete push record %s of app %s: %w", objectID, appID, err)
	}
	if !applied {
		return store.ErrNotFound
	}
	// Counters cannot share a logged batch with other rows: their own delete, first.
	if err := s.q(ctx, cqlDirectCountDrop, appID, objectID).Exec(); err != nil {
		return fmt.Errorf("cannot delete the counts of push record %s of app %s: %w", objectID, appID, err)
	}
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	b.Query(cqlNotifDelete, appID, ref.day, ref.created, objectID)
	b.Query(cqlNIDDelete, appID, n.NotificationID, objectID)
	b.Query(cqlReceiptMarkDrop, appID, objectID) // vendor receipts' marks
	if n.PendingJob != nil {
		b.Query(cqlPendingDelete, appID, pendingSince(&n), objectID)
	}
	if err := s.s.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cannot delete push record %s of app %s: %w", objectID, appID, err)
	}
	return nil
}

// ListNotifications implements store.Store: day partitions newest first, each in its
// clustering order (created_at DESC).
func (s *Store) ListNotifications(ctx context.Context, appID string, fn func(*push.Notification) error) error {
	day := time.Now().UTC().Add(24 * time.Hour)
	for range recordDays {
		it := s.q(ctx, cqlNotifListDay, appID, dayOf(day)).PageSize(scanPageSize).Iter()
		var (
			doc   []byte
			fnErr error
		)
		for it.Scan(&doc) {
			var n push.Notification
			if fnErr = json.Unmarshal(doc, &n); fnErr != nil {
				fnErr = fmt.Errorf("cannot decode a push record of app %s: %w", appID, fnErr)
				break
			}
			if fnErr = s.withDirectCounts(ctx, &n); fnErr != nil {
				break
			}
			if fnErr = fn(&n); fnErr != nil {
				break
			}
		}
		if err := it.Close(); err != nil && fnErr == nil {
			return fmt.Errorf("cannot list push records of app %s: %w", appID, err)
		}
		if fnErr != nil {
			return fnErr
		}
		day = day.Add(-24 * time.Hour)
	}
	return nil
}

// NotificationsByNID implements store.Store, newest first.
func (s *Store) NotificationsByNID(ctx context.Context, appID, notificationID string) ([]push.Notification, error) {
	it := s.q(ctx, cqlNIDList, appID, notificationID).Iter()
	var (
		oid  string
		oids []string
	)
	for it.Scan(&oid) {
		oids = append(oids, oid)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cannot list push records of app %s by notification id: %w", appID, err)
	}
	var out []push.Notification
	for _, oid := range oids {
		n, _, _, err := s.readRecord(ctx, appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			err = s.withDirectCounts(ctx, &n)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot get push record %s of app %s: %w", oid, appID, err)
		}
		out = append(out, n)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}
