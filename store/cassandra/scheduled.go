package cassandra

import (
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
	cqlSchedInsert   = `INSERT INTO scheduled_pushes (slot, due_at, id, app_id, doc) VALUES (?, ?, ?, ?, ?)`
	cqlSchedDelete   = `DELETE FROM scheduled_pushes WHERE slot = ? AND due_at = ? AND id = ?`
	cqlSchedGet      = `SELECT doc FROM scheduled_pushes WHERE slot = ? AND due_at = ? AND id = ?`
	cqlSchedSlot     = `SELECT app_id, doc FROM scheduled_pushes WHERE slot = ?`
	cqlSchedDue      = `SELECT doc FROM scheduled_pushes WHERE slot = ? AND due_at <= ? LIMIT ?`
	cqlSchedIDInsert = `INSERT INTO scheduled_by_id (app_id, id, slot, due_at) VALUES (?, ?, ?, ?)`
	cqlSchedIDGet    = `SELECT slot, due_at FROM scheduled_by_id WHERE app_id = ? AND id = ?`
	cqlSchedIDDelete = `DELETE FROM scheduled_by_id WHERE app_id = ? AND id = ? IF EXISTS`
)

// scheduleSlots is the number of scheduled_pushes partitions (slot = id mod 16), the unit the
// scheduler leases.
const scheduleSlots = 16

func slotOf(id int64) int { return int(((id % scheduleSlots) + scheduleSlots) % scheduleSlots) }

// PutScheduled implements store.Store: both rows in one logged batch, the old due row removed
// when the due time moved.
func (s *Store) PutScheduled(ctx context.Context, sc push.Scheduled) error {
	doc, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("cannot encode scheduled push %d: %w", sc.ID, err)
	}
	slot := slotOf(sc.ID)
	due := sc.DueAt.Truncate(time.Millisecond)
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	var oldSlot int
	var oldDue time.Time
	switch err := s.q(ctx, cqlSchedIDGet, sc.AppID, sc.ID).Scan(&oldSlot, &oldDue); {
	case err == nil && !oldDue.Equal(due):
		b.Query(cqlSchedDelete, oldSlot, oldDue, sc.ID)
	case err != nil && !errors.Is(err, gocql.ErrNotFound):
		return fmt.Errorf("cannot put scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	b.Query(cqlSchedInsert, slot, due, sc.ID, sc.AppID, doc)
	b.Query(cqlSchedIDInsert, sc.AppID, sc.ID, slot, due)
	if err := s.s.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cannot put scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	return nil
}

// GetScheduled implements store.Store.
func (s *Store) GetScheduled(ctx context.Context, appID string, id int64) (push.Scheduled, error) {
	var (
		sc   push.Scheduled
		slot int
		due  time.Time
		doc  []byte
	)
	if err := s.q(ctx, cqlSchedIDGet, appID, id).Scan(&slot, &due); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return sc, err
		}
		return sc, fmt.Errorf("cannot get scheduled push %d of app %s: %w", id, appID, err)
	}
	if err := s.q(ctx, cqlSchedGet, slot, due, id).Scan(&doc); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return sc, err
		}
		return sc, fmt.Errorf("cannot get scheduled push %d of app %s: %w", id, appID, err)
	}
	if err := json.Unmarshal(doc, &sc); err != nil {
		return sc, fmt.Errorf("cannot decode scheduled push %d of app %s: %w", id, appID, err)
	}
	return sc, nil
}

// ListScheduled implements store.Store, in id order. It reads the 16 slot partitions and keeps
// the app's rows: scheduled pushes are few, and CLUSTER.md keys them by slot.
func (s *Store) ListScheduled(ctx context.Context, appID string) ([]push.Scheduled, error) {
	var out []push.Scheduled
	for slot := range scheduleSlots {
		it := s.q(ctx, cqlSchedSlot, slot).PageSize(scanPageSize).Iter()
		var (
			app string
			doc []byte
		)
		for it.Scan(&app, &doc) {
			if app != appID {
				continue
			}
			var sc push.Scheduled
			if err := json.Unmarshal(doc, &sc); err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("cannot decode a scheduled push of app %s: %w", appID, err)
			}
			out = append(out, sc)
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("cannot list scheduled pushes of app %s: %w", appID, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteScheduled implements store.Store: the by-id row goes with LWT (DELETE IF EXISTS), so of
// a firing scheduler and a cancel exactly one wins.
func (s *Store) DeleteScheduled(ctx context.Context, appID string, id int64) error {
	var (
		slot int
		due  time.Time
	)
	if err := s.q(ctx, cqlSchedIDGet, appID, id).Scan(&slot, &due); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete scheduled push %d of app %s: %w", id, appID, err)
	}
	applied, err := s.cas(ctx, s.q(ctx, cqlSchedIDDelete, appID, id), map[string]any{},
		s.serialGone(cqlSchedIDGet, []any{appID, id}, new(int), new(time.Time)))
	if err != nil {
		return fmt.Errorf("cannot delete scheduled push %d of app %s: %w", id, appID, err)
	}
	if !applied {
		return store.ErrNotFound
	}
	if err := s.q(ctx, cqlSchedDelete, slot, due, id).Exec(); err != nil {
		return fmt.Errorf("cannot delete scheduled push %d of app %s: %w", id, appID, err)
	}
	return nil
}

// DueScheduled implements store.Store: each slot's due rows, merged oldest due first.
func (s *Store) DueScheduled(ctx context.Context, before time.Time, limit int) ([]push.Scheduled, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []push.Scheduled
	for slot := range scheduleSlots {
		it := s.q(ctx, cqlSchedDue, slot, before, limit).Iter()
		var doc []byte
		for it.Scan(&doc) {
			var sc push.Scheduled
			if err := json.Unmarshal(doc, &sc); err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("cannot decode a due scheduled push: %w", err)
			}
			out = append(out, sc)
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("cannot list due scheduled pushes of slot %d: %w", slot, err)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.DueAt.Equal(b.DueAt) {
			return a.DueAt.Before(b.DueAt)
		}
		if a.AppID != b.AppID {
			return a.AppID < b.AppID
		}
		return a.ID < b.ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
