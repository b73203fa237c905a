package fanout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Completion: how a task's counts reach its push record exactly once.
//
//  1. The task writes its final progress: Done, cursor, counts (PutTaskProgress).
//  2. One UpdateNotification (atomic read-modify-write of the record) adds the counts,
//     increments TasksDone, appends the task to TasksFinished, and moves the record to done
//     when TasksDone reaches Tasks. If TasksFinished already lists the task, the update is
//     skipped: it was applied before.
//  3. Only then does the handler return nil, which commits the task's offset.
//
// A crash after 1 redelivers the task; its progress says Done, so the worker skips the scan
// and repeats 2, which either applies (the crash came before it) or finds the task listed (the
// crash came after it). Two workers finishing the same task (a partition moving while its
// first owner still runs) race only on 2, and the record's atomic update lets one win. The
// counts of a finished task are those of its last checkpoint plus what followed it, so they
// are exact whichever execution finishes: re-sent targets after a crash are counted once.
//
// What a redelivered Done task cannot repeat are its failure reasons (progress does not keep
// them); counts and completion are unaffected.

// errApplied aborts a record update that was already made.
var errApplied = errors.New("already applied")

// complete adds a finished task to its record (step 2 above); applied says the record was
// written (not already listing the task, not cancelled, not gone).
func (w *Worker) complete(ctx context.Context, t *push.Task, counts push.Counts, reasons []string, stopped string) (applied bool, err error) {
	job := &t.Job
	suffix := taskSuffix(t)
	rec, err := w.st.UpdateNotification(ctx, job.AppID, job.NotificationObjectID, func(n *push.Notification) error {
		if n.Status == push.StatusCancelled || slices.Contains(n.TasksFinished, suffix) {
			return errApplied
		}
		n.TasksFinished = append(n.TasksFinished, suffix)
		n.TasksDone++
		if n.Counts == nil {
			n.Counts = push.Counts{}
		}
		n.Counts.Add(counts)
		for _, r := range reasons {
			n.Errors = appendReason(n.Errors, r, w.cfg.MaxErrors)
		}
		if stopped != "" && n.Stopped == "" {
			n.Stopped = stopped
		}
		if n.TasksDone >= n.Tasks && n.Status != push.StatusDone {
			n.Status = push.StatusDone
		}
		n.UpdatedAt = time.Now()
		return nil
	})
	switch {
	case errors.Is(err, errApplied), errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cannot add the counts of task %s to record %s: %w", t.ID, job.NotificationObjectID, err)
	}
	if rec.Status == push.StatusDone && rec.TasksDone == rec.Tasks {
		tot := rec.Counts.Total()
		// Check first: the fields are built only for a line the sampler keeps.
		if ce := w.logger.Check(zap.InfoLevel, "push done"); ce != nil {
			ce.Write(zap.String(telemetry.KeyAppID, job.AppID), zap.String(telemetry.KeyJobID, job.ID),
				zap.Int64("targets", tot.Targets), zap.Int64("sent", tot.Sent), zap.Int64("failed", tot.Failed),
				zap.Int64("expired", tot.Expired), zap.Int64("invalid_tokens", tot.InvalidTokens))
		}
	}
	return true, nil
}
