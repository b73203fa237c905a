package pushapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// scheduledJSON is a pending scheduled push in the spec's shape. expire_time is the planned
// send time in Unix milliseconds (the original service's unit).
func scheduledJSON(sp *push.Scheduled) map[string]any {
	j := &sp.Job
	where := json.RawMessage(j.Where)
	if len(where) == 0 {
		where = json.RawMessage(`{}`)
	}
	return map[string]any{
		"id":          sp.ID,
		"expire_time": sp.DueAt.UnixMilli(),
		"createdAt":   push.FormatTime(sp.CreatedAt),
		"push_msg": map[string]any{
			"through":        nil,
			"app-id":         sp.AppID,
			"where":          map[string]any{"sort": map[string]any{}, "query": where},
			"prod":           j.Prod,
			"api-version":    "1.1",
			"msg":            json.RawMessage(j.Data),
			"id":             j.NotificationObjectID,
			"notificationId": j.NotificationID,
		},
	}
}

// GET /1.1/scheduledPushMessages (master key).
func (s *Service) listScheduled(ctx *fasthttp.RequestCtx, c *api.Call) error {
	list, err := s.st.ListScheduled(ctx, c.App.ID)
	if err != nil {
		return fmt.Errorf("cannot list scheduled pushes of app %s: %w", c.App.ID, err)
	}
	results := make([]map[string]any, 0, len(list))
	for i := range list {
		results = append(results, scheduledJSON(&list[i]))
	}
	return writeObject(ctx, map[string]any{"results": results})
}

// DELETE /1.1/scheduledPushMessages/<id> (master key): the push will not be sent, and its
// record is removed.
func (s *Service) deleteScheduled(ctx *fasthttp.RequestCtx, c *api.Call) error {
	app := c.App.ID
	id, err := strconv.ParseInt(c.Params[0], 10, 64)
	if err != nil || id <= 0 {
		return push.Errorf(push.CodeValidation, "scheduled push id %q is not a positive integer: use the outer id of a listed result", c.Params[0])
	}
	sp, err := s.st.GetScheduled(ctx, app, id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("scheduled push", c.Params[0])
	}
	if err != nil {
		return fmt.Errorf("cannot read scheduled push %d of app %s: %w", id, app, err)
	}
	if err := s.st.DeleteScheduled(ctx, app, id); errors.Is(err, store.ErrNotFound) {
		return notFound("scheduled push", c.Params[0]) // fired or cancelled meanwhile
	} else if err != nil {
		return fmt.Errorf("cannot cancel scheduled push %d of app %s: %w", id, app, err)
	}
	if err := s.st.DeleteNotification(ctx, app, sp.Job.NotificationObjectID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot remove the record of scheduled push %d of app %s: %w", id, app, err)
	}
	api.WriteJSON(ctx, fasthttp.StatusOK, []byte(`{}`))
	return nil
}
