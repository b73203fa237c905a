package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const (
	cqlProgressPut = `INSERT INTO task_progress (job_id, task_id, cursor, counts, done, epoch) VALUES (?, ?, ?, ?, ?, ?)`
	cqlProgressGet = `SELECT cursor, counts, done, epoch FROM task_progress WHERE job_id = ? AND task_id = ?`
)

// GetTaskProgress implements store.Store.
func (s *Store) GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error) {
	p := push.TaskProgress{JobID: jobID, TaskID: taskID}
	var counts []byte
	if err := s.q(ctx, cqlProgressGet, jobID, taskID).Scan(&p.Cursor, &counts, &p.Done, &p.Epoch); err != nil {
		if err = notFound(err); errors.Is(err, store.ErrNotFound) {
			return push.TaskProgress{}, err
		}
		return push.TaskProgress{}, fmt.Errorf("cannot get progress of task %s: %w", taskID, err)
	}
	if len(counts) > 0 {
		if err := json.Unmarshal(counts, &p.Counts); err != nil {
			return push.TaskProgress{}, fmt.Errorf("cannot decode progress of task %s: %w", taskID, err)
		}
	}
	return p, nil
}

// PutTaskProgress implements store.Store.
func (s *Store) PutTaskProgress(ctx context.Context, p push.TaskProgress) error {
	counts, err := json.Marshal(p.Counts)
	if err != nil {
		return fmt.Errorf("cannot encode progress of task %s: %w", p.TaskID, err)
	}
	if err := s.q(ctx, cqlProgressPut, p.JobID, p.TaskID, p.Cursor, counts, p.Done, p.Epoch).Exec(); err != nil {
		return fmt.Errorf("cannot put progress of task %s: %w", p.TaskID, err)
	}
	return nil
}
