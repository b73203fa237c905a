package pebble

import (
	"context"
	"errors"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

var errTODO = errors.New("not implemented yet")

func (s *Store) CreateNotification(ctx context.Context, n push.Notification) error { return errTODO }
func (s *Store) GetNotification(ctx context.Context, appID, objectID string) (push.Notification, error) {
	return push.Notification{}, errTODO
}
func (s *Store) UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	return push.Notification{}, errTODO
}
func (s *Store) DeleteNotification(ctx context.Context, appID, objectID string) error { return errTODO }
func (s *Store) ListNotifications(ctx context.Context, appID string, fn func(*push.Notification) error) error {
	return errTODO
}
func (s *Store) NotificationsByNID(ctx context.Context, appID, notificationID string) ([]push.Notification, error) {
	return nil, errTODO
}
func (s *Store) NextID(ctx context.Context, name string) (int64, error)       { return 0, errTODO }
func (s *Store) PutScheduled(ctx context.Context, sc push.Scheduled) error     { return errTODO }
func (s *Store) ListScheduled(ctx context.Context, appID string) ([]push.Scheduled, error) {
	return nil, errTODO
}
func (s *Store) GetScheduled(ctx context.Context, appID string, id int64) (push.Scheduled, error) {
	return push.Scheduled{}, errTODO
}
func (s *Store) DeleteScheduled(ctx context.Context, appID string, id int64) error { return errTODO }
func (s *Store) DueScheduled(ctx context.Context, before time.Time, limit int) ([]push.Scheduled, error) {
	return nil, errTODO
}
func (s *Store) ClaimReqID(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error) {
	return store.ReqClaim{}, false, errTODO
}
func (s *Store) AddDailyVolume(ctx context.Context, appID, day string, n int64) (int64, error) {
	return 0, errTODO
}
func (s *Store) DailyVolume(ctx context.Context, appID, day string) (int64, error) { return 0, errTODO }
func (s *Store) GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error) {
	return push.TaskProgress{}, errTODO
}
func (s *Store) PutTaskProgress(ctx context.Context, p push.TaskProgress) error { return errTODO }
