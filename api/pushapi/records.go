package pushapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store"
)

// successKey names the per-channel success counts as the original service does
// ([lc/ios/fcm/hms/mi/oppo/vivo/meizu]Successes).
var successKey = map[string]string{
	push.ChannelAPNs:   "iosSuccesses",
	push.ChannelDirect: "lcSuccesses",
	push.ChannelFCM:    "fcmSuccesses",
	push.ChannelHMS:    "hmsSuccesses",
	push.ChannelMi:     "miSuccesses",
	push.ChannelOppo:   "oppoSuccesses",
	push.ChannelVivo:   "vivoSuccesses",
	push.ChannelMz:     "meizuSuccesses",
	push.ChannelHonor:  "honorSuccesses",
}

// recordJSON is a push record as the REST API shows it at now: the original service's field
// names (msg, devices, successes, ...Successes, invalidTokens, errors, from-service, push-time)
// plus our delivery funnel per device type and channel (push.FunnelOf) and the push's pending
// targets.
func recordJSON(n *push.Notification, now time.Time) map[string]any {
	total := n.Counts.Total()
	m := map[string]any{
		"objectId":       n.ObjectID,
		"notificationId": n.NotificationID,
		"status":         n.Status,
		"createdAt":      push.FormatTime(n.CreatedAt),
		"updatedAt":      push.FormatTime(n.UpdatedAt),
		"msg":            json.RawMessage(n.Data),
		"prod":           n.Prod,
		"from-service":   "push",
		"devices":        total.Targets,
		"successes":      total.Sent,
		"failures":       total.Failed,
		"expired":        total.Expired,
		"invalidTokens":  total.InvalidTokens,
		"arrivals":       total.Arrivals, // own-channel devices that acknowledged the push
		"tasks":          n.Tasks,
		"tasksDone":      n.TasksDone,
	}
	for _, key := range successKey {
		m[key] = int64(0)
	}
	byType := map[string]push.Tally{}
	channels := map[string]push.Funnel{}
	pending := int64(0)
	for ch, t := range n.Counts {
		if k, ok := successKey[ch]; ok {
			m[k] = t.Sent
		}
		dt := push.DeviceAndroid
		if ch == push.ChannelAPNs {
			dt = push.DeviceIOS
		}
		cur := byType[dt]
		cur.Add(t)
		byType[dt] = cur
		f := push.FunnelOf(t, n.ExpiresAt, now)
		channels[ch] = f
		pending += f.Pending
	}
	types := make(map[string]push.Funnel, len(byType))
	for dt, t := range byType {
		types[dt] = push.FunnelOf(t, n.ExpiresAt, now)
	}
	m["pending"] = pending
	m["counts"] = map[string]any{"byDeviceType": types, "byChannel": channels}
	if len(n.Where) > 0 {
		m["where"] = json.RawMessage(n.Where)
	}
	if len(n.Channels) > 0 {
		m["channels"] = n.Channels
	}
	if n.Kind == push.JobDevices {
		m["deviceType"] = n.DeviceType
		m["deviceCount"] = n.DeviceCount
	}
	if !n.PushTime.IsZero() {
		m["push-time"] = push.FormatTime(n.PushTime)
	}
	if !n.ExpiresAt.IsZero() {
		m["expiration_time"] = push.FormatTime(n.ExpiresAt)
	}
	if n.ExpirationInterval != 0 {
		m["expiration_interval"] = n.ExpirationInterval
	}
	if n.ChannelPolicy != "" {
		m["channel_policy"] = n.ChannelPolicy
	}
	if n.MessageClass != "" {
		m["message_class"] = n.MessageClass
	}
	if n.FlowControl != 0 {
		m["flow_control"] = n.FlowControl
	}
	if n.ReqID != "" {
		m["req_id"] = n.ReqID
	}
	if n.ScheduledID != 0 {
		m["scheduledId"] = n.ScheduledID
	}
	if len(n.Errors) > 0 {
		m["errors"] = n.Errors
	} else {
		m["errors"] = []string{}
	}
	if n.Stopped != "" {
		m["stopped"] = n.Stopped
	}
	return m
}

func writeObject(ctx *fasthttp.RequestCtx, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode response: %w", err)
	}
	api.WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

func notFound(what, id string) *push.Error {
	return push.Errorf(push.CodeObjectNotFound, "%s %q not found", what, id)
}

// GET /1.1/tables/Notifications/<objectId>
func (s *Service) getByObjectID(ctx *fasthttp.RequestCtx, c *api.Call) error {
	n, err := s.st.GetNotification(ctx, c.App.ID, c.Params[0])
	if errors.Is(err, store.ErrNotFound) {
		return notFound("push record", c.Params[0])
	}
	if err != nil {
		return fmt.Errorf("cannot read push record of app %s: %w", c.App.ID, err)
	}
	return writeObject(ctx, recordJSON(&n, c.Now))
}

// GET /1.1/notifications/<notification_id>. Several pushes may share a notification_id
// (the spec counts them together): the answer is the newest record's fields with the counts
// of all of them summed, its status the least advanced of theirs, and `pushes` and
// `objectIds` naming them.
func (s *Service) getByNID(ctx *fasthttp.RequestCtx, c *api.Call) error {
	recs, err := s.st.NotificationsByNID(ctx, c.App.ID, c.Params[0])
	if err != nil {
		return fmt.Errorf("cannot read push records of app %s: %w", c.App.ID, err)
	}
	if len(recs) == 0 {
		return notFound("notification", c.Params[0])
	}
	return writeObject(ctx, aggregate(recs, c.Now))
}

var statusRank = map[string]int{push.StatusScheduled: 0, push.StatusInQueue: 1, push.StatusInProcess: 2, push.StatusDone: 3, push.StatusCancelled: 4}

func aggregate(recs []push.Notification, now time.Time) map[string]any {
	sort.Slice(recs, func(i, j int) bool { return recs[i].CreatedAt.After(recs[j].CreatedAt) })
	sum := recs[0]
	sum.Counts = push.Counts{}
	sum.Errors = nil
	sum.Tasks, sum.TasksDone = 0, 0
	ids := make([]string, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		ids = append(ids, r.ObjectID)
		sum.Counts.Add(r.Counts)
		sum.Errors = append(sum.Errors, r.Errors...)
		sum.Tasks += r.Tasks
		sum.TasksDone += r.TasksDone
		if statusRank[r.Status] < statusRank[sum.Status] {
			sum.Status = r.Status
		}
	}
	m := recordJSON(&sum, now)
	m["pushes"] = len(recs)
	m["objectIds"] = ids
	return m
}

// DELETE /1.1/notifications/<notification_id>: every push of that id that is not done is
// cancelled (fan-out stops sending within a second) and every record is removed. A pending
// scheduled push of that id is removed too.
func (s *Service) deleteByNID(ctx *fasthttp.RequestCtx, c *api.Call) error {
	app := c.App.ID
	recs, err := s.st.NotificationsByNID(ctx, app, c.Params[0])
	if err != nil {
		return fmt.Errorf("cannot read push records of app %s: %w", app, err)
	}
	if len(recs) == 0 {
		return notFound("notification", c.Params[0])
	}
	for i := range recs {
		if err := s.cancel(ctx, app, &recs[i], c); err != nil {
			return err
		}
	}
	api.WriteJSON(ctx, fasthttp.StatusOK, []byte(`{}`))
	return nil
}

// cancel stops a push that is not done and removes its record.
func (s *Service) cancel(ctx *fasthttp.RequestCtx, app string, n *push.Notification, c *api.Call) error {
	if n.ScheduledID != 0 {
		if err := s.st.DeleteScheduled(ctx, app, n.ScheduledID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("cannot cancel scheduled push %d of app %s: %w", n.ScheduledID, app, err)
		}
	}
	_, err := s.st.UpdateNotification(ctx, app, n.ObjectID, func(r *push.Notification) error {
		if r.Status != push.StatusDone {
			r.Status = push.StatusCancelled
			r.UpdatedAt = c.Now.UTC()
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot cancel push %s of app %s: %w", n.ObjectID, app, err)
	}
	if err := s.st.DeleteNotification(ctx, app, n.ObjectID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot remove push record %s of app %s: %w", n.ObjectID, app, err)
	}
	return nil
}

// newestFirst is the records' default order (the installation listing's is storage order).
var newestFirst = []api.OrderKey{{Field: "createdAt", Desc: true}}

// recordField is the field-name rule of order and keys on records: any non-empty name, since
// record fields are not installation fields (`push-time`, `from-service`).
func recordField(name string) *push.Error {
	if name == "" {
		return push.Errorf(push.CodeInvalidKeyName, "empty field name in order or keys")
	}
	return nil
}

// GET /1.1/notifications?where=&limit=&skip=&order=&keys=&count=1 — limit, skip, order, keys and
// count follow the installation query's rules (api.ParseListParams); records come newest first
// unless order says otherwise (ties keep that order); where is evaluated on the record as this
// API shows it.
func (s *Service) listRecords(ctx *fasthttp.RequestCtx, c *api.Call) error {
	p, perr := api.ParseListParams(ctx.QueryArgs(), c.Now, recordField)
	if perr != nil {
		return perr
	}
	if p.Where.NeedsResolve() {
		return push.Errorf(push.CodeInvalidQuery, "sub-queries are not supported on push records")
	}
	order := p.Order
	if len(order) == 0 {
		order = newestFirst
	}

	var matched []map[string]any
	err := s.st.ListNotifications(ctx, c.App.ID, func(n *push.Notification) error {
		m := recordJSON(n, c.Now)
		doc, derr := asDoc(m)
		if derr != nil {
			return derr
		}
		if p.Where.Match(doc) {
			matched = append(matched, doc)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot list push records of app %s: %w", c.App.ID, err)
	}
	// The store lists newest first: stable sorting keeps that order among equal keys.
	slices.SortStableFunc(matched, func(a, b map[string]any) int { return api.CompareDocs(order, a, b) })
	out := map[string]any{}
	if p.Count {
		out["count"] = len(matched)
	}
	page := matched[min(p.Skip, len(matched)):]
	page = page[:min(p.Limit, len(page))]
	if p.Keys != nil {
		for i, doc := range page {
			kept := make(map[string]any, len(p.Keys))
			for k := range p.Keys {
				if v, ok := doc[k]; ok {
					kept[k] = v
				}
			}
			page[i] = kept
		}
	}
	if page == nil {
		page = []map[string]any{}
	}
	out["results"] = page
	return writeObject(ctx, out)
}

// asDoc round-trips a record through JSON so that query sees the types a client would.
func asDoc(m map[string]any) (query.MapDoc, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cannot encode push record: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("cannot decode push record: %w", err)
	}
	return doc, nil
}
