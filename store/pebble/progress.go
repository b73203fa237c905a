package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// GetTaskProgress implements store.Store.
func (s *Store) GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error) {
	if err := s.enter(); err != nil {
		return push.TaskProgress{}, err
	}
	defer s.exit()
	var p push.TaskProgress
	v, err := s.get(progressKey(nil, jobID, taskID))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return p, err
		}
		return p, fmt.Errorf("cannot get progress of task %s: %w", taskID, err)
	}
	if err := json.Unmarshal(v, &p); err != nil {
		return p, fmt.Errorf("cannot decode progress of task %s: %w", taskID, err)
	}
	return p, nil
}

// PutTaskProgress implements store.Store with one synced write.
func (s *Store) PutTaskProgress(ctx context.Context, p push.TaskProgress) error {
	return s.putTaskProgress(p, pebble.Sync)
}

// PutTaskProgressNoSync is PutTaskProgress without the fsync: the progress is durable with
// the next synced write of the store (fanout.ProgressNoSync).
func (s *Store) PutTaskProgressNoSync(ctx context.Context, p push.TaskProgress) error {
	return s.putTaskProgress(p, pebble.NoSync)
}

func (s *Store) putTaskProgress(p push.TaskProgress, opt *pebble.WriteOptions) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	v, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("cannot encode progress of task %s: %w", p.TaskID, err)
	}
	if err := s.db.Set(progressKey(nil, p.JobID, p.TaskID), v, opt); err != nil {
		return fmt.Errorf("cannot put progress of task %s: %w", p.TaskID, err)
	}
	return nil
}
