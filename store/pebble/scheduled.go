package pebble

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// NextID implements store.Store with a durable counter per name: each id is synced before it
// is handed out, so ids never repeat across restarts.
func (s *Store) NextID(ctx context.Context, name string) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	s.idMu.Lock()
	defer s.idMu.Unlock()
	key := counterKey(nil, name)
	last, ok := s.idMax[name]
	if !ok {
		v, found, err := s.getInto(nil, key)
		if err != nil {
			return 0, fmt.Errorf("cannot read id counter %s: %w", name, err)
		}
		if found {
			if len(v) != 8 {
				return 0, fmt.Errorf("cannot read id counter %s: %d-byte value", name, len(v))
			}
			last = int64(binary.BigEndian.Uint64(v))
		}
	}
	next := last + 1
	if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, uint64(next)), pebble.Sync); err != nil {
		return 0, fmt.Errorf("cannot advance id counter %s: %w", name, err)
	}
	s.idMax[name] = next
	return next, nil
}

// PutScheduled implements store.Store: the by-id row and the due-time row in one synced batch,
// moving the due row when DueAt changed.
func (s *Store) PutScheduled(ctx context.Context, sc push.Scheduled) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if sc.AppID == "" {
		return errors.New("cannot put a scheduled push without appId")
	}
	defer s.locks.lock(stripeOf("s", sc.AppID, fmt.Sprint(sc.ID)))()
	old, err := s.readScheduled(sc.AppID, sc.ID)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot put scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	v, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("cannot encode scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if found && !old.DueAt.Equal(sc.DueAt) {
		if err := b.Delete(schedDueKey(nil, old.DueAt.UnixNano(), sc.AppID, sc.ID), nil); err != nil {
			return err
		}
	}
	if err := b.Set(schedKey(nil, sc.AppID, sc.ID), v, nil); err != nil {
		return err
	}
	if err := b.Set(schedDueKey(nil, sc.DueAt.UnixNano(), sc.AppID, sc.ID), v, nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot put scheduled push %d of app %s: %w", sc.ID, sc.AppID, err)
	}
	return nil
}

func (s *Store) readScheduled(appID string, id int64) (push.Scheduled, error) {
	var sc push.Scheduled
	v, err := s.get(schedKey(nil, appID, id))
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(v, &sc); err != nil {
		return sc, fmt.Errorf("cannot decode scheduled push %d of app %s: %w", id, appID, err)
	}
	return sc, nil
}

// GetScheduled implements store.Store.
func (s *Store) GetScheduled(ctx context.Context, appID string, id int64) (push.Scheduled, error) {
	if err := s.enter(); err != nil {
		return push.Scheduled{}, err
	}
	defer s.exit()
	sc, err := s.readScheduled(appID, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return sc, fmt.Errorf("cannot get scheduled push %d of app %s: %w", id, appID, err)
	}
	return sc, err
}

// ListScheduled implements store.Store, in id order.
func (s *Store) ListScheduled(ctx context.Context, appID string) ([]push.Scheduled, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	prefix := schedPrefix(nil, appID)
	var out []push.Scheduled
	err := s.iterate(prefix, prefixEnd(prefix), func(_, v []byte) error {
		var sc push.Scheduled
		if err := json.Unmarshal(v, &sc); err != nil {
			return err
		}
		out = append(out, sc)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list scheduled pushes of app %s: %w", appID, err)
	}
	return out, nil
}

// DeleteScheduled implements store.Store: exactly one of concurrent deleters (the firing
// scheduler, a cancel) succeeds; the others get store.ErrNotFound.
func (s *Store) DeleteScheduled(ctx context.Context, appID string, id int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("s", appID, fmt.Sprint(id)))()
	sc, err := s.readScheduled(appID, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("cannot delete scheduled push %d of app %s: %w", id, appID, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(schedKey(nil, appID, id), nil); err != nil {
		return err
	}
	if err := b.Delete(schedDueKey(nil, sc.DueAt.UnixNano(), appID, id), nil); err != nil {
		return err
	}
	if err := b.Delete(schedClaimKey(nil, appID, id), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot delete scheduled push %d of app %s: %w", id, appID, err)
	}
	return nil
}

// DueScheduled implements store.Store: pushes of every app due at or before before, oldest
// due first, at most limit.
func (s *Store) DueScheduled(ctx context.Context, before time.Time, limit int) ([]push.Scheduled, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	if limit <= 0 {
		return nil, nil
	}
	lower := []byte{tSchedDue}
	upper := appendInt64([]byte{tSchedDue}, before.UnixNano()+1) // inclusive of before
	var out []push.Scheduled
	err := s.iterate(lower, upper, func(_, v []byte) error {
		var sc push.Scheduled
		if err := json.Unmarshal(v, &sc); err != nil {
			return err
		}
		out = append(out, sc)
		if len(out) >= limit {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("cannot list due scheduled pushes: %w", err)
	}
	return out, nil
}
