package direct

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
)

// Sender is what Handoff passes the other channels' deliveries to (sender.Dispatcher).
type Sender interface {
	Send(ctx context.Context, ds []push.Delivery, res []push.Result) error
}

// Appender appends to the log (queue/embedded, queue/kafka).
type Appender interface {
	Partitions(topic string) int
	Append(ctx context.Context, topic string, recs ...queue.Record) error
}

// Handoff is the fan-out side of the own channel: it appends own-channel deliveries to
// push.direct, keyed by installation id, and passes every other delivery to next. It has
// fan-out's Sender contract: an own-channel delivery's result is push.OutcomeQueued once its
// record is durable (the gateway counts it sent or expired), or push.OutcomeExpired when it
// expired already; an append error fails the batch (nothing counted, the task retried).
type Handoff struct {
	next Sender
	log  Appender
	now  func() time.Time
}

// NewHandoff builds the hand-off in front of next.
func NewHandoff(next Sender, log Appender) *Handoff {
	return &Handoff{next: next, log: log, now: time.Now}
}

// HeldReason passes fan-out's question (why was a delivery of an expired push held back?) to
// next when it can answer it (sender.Dispatcher: a vendor's spent daily quota). The own
// channel holds nothing back.
func (h *Handoff) HeldReason(ctx context.Context, d *push.Delivery) (string, bool) {
	hr, ok := h.next.(interface {
		HeldReason(ctx context.Context, d *push.Delivery) (string, bool)
	})
	if !ok || d.Target.Channel == push.ChannelDirect {
		return "", false
	}
	return hr.HeldReason(ctx, d)
}

// Send implements fan-out's Sender.
func (h *Handoff) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	nDirect := 0
	for i := range ds {
		if ds[i].Target.Channel == push.ChannelDirect {
			nDirect++
		}
	}
	if nDirect == 0 {
		if err := h.next.Send(ctx, ds, res); err != nil {
			return err
		}
		return h.fallBack(ctx, ds, res)
	}
	now := h.now()
	parts := h.log.Partitions(queue.TopicDirect)
	recs := make([]queue.Record, 0, nDirect)
	var (
		others   []push.Delivery
		otherRes []push.Result
		otherIdx []int
	)
	for i := range ds {
		d := &ds[i]
		if d.Target.Channel != push.ChannelDirect {
			others = append(others, *d)
			otherIdx = append(otherIdx, i)
			continue
		}
		m := push.DirectMessage{
			AppID:          d.AppID,
			InstallationID: d.Target.DeviceID,
			ID:             d.NotificationObjectID,
			NotificationID: d.NotificationID,
			Data:           d.Message.Body,
		}
		if exp := d.Message.Expiration; !exp.IsZero() {
			m.Expires = exp.UnixMilli()
		}
		if m.Expired(now) {
			res[i] = push.Result{Outcome: push.OutcomeExpired}
			continue
		}
		v, err := json.Marshal(&m)
		if err != nil {
			return fmt.Errorf("BUG: cannot encode a push.direct record: %w", err)
		}
		key := []byte(m.InstallationID)
		recs = append(recs, queue.Record{Partition: queue.PartitionForKey(key, parts), Key: key, Value: v})
		res[i] = push.Result{Outcome: push.OutcomeQueued}
	}
	if len(recs) > 0 {
		if err := h.log.Append(ctx, queue.TopicDirect, recs...); err != nil {
			return fmt.Errorf("cannot hand %d own-channel deliveries to the gateway: %w", len(recs), err)
		}
	}
	if len(others) == 0 {
		return nil
	}
	otherRes = make([]push.Result, len(others))
	if err := h.next.Send(ctx, others, otherRes); err != nil {
		return err
	}
	for j, i := range otherIdx {
		res[i] = otherRes[j]
	}
	return h.fallBack(ctx, ds, res)
}

// fallBack hands the vendor_first deliveries their vendor refused (Result.Refused) to the own
// channel: a push.direct record each, counted on the own channel (Result.Channel) as the
// gateway will count it. An append error fails the batch like any other: the retry sends
// the batch again (at least once).
func (h *Handoff) fallBack(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	var (
		recs  []queue.Record
		moved []int
	)
	now := h.now()
	for i := range ds {
		d := &ds[i]
		if d.Fallback == nil || !res[i].Refused || d.Target.InstallationID == "" {
			continue
		}
		m := directMessage(d, d.Fallback, d.Target.InstallationID)
		if m.Expired(now) {
			res[i] = push.Result{Outcome: push.OutcomeExpired, Channel: push.ChannelDirect}
			continue
		}
		rec, err := directRecord(&m, h.log.Partitions(queue.TopicDirect))
		if err != nil {
			return err
		}
		recs = append(recs, rec)
		moved = append(moved, i)
	}
	if len(recs) == 0 {
		return nil
	}
	if err := h.log.Append(ctx, queue.TopicDirect, recs...); err != nil {
		return fmt.Errorf("cannot hand %d vendor-refused deliveries to the own channel: %w", len(recs), err)
	}
	for _, i := range moved {
		res[i] = push.Result{Outcome: push.OutcomeQueued, Channel: push.ChannelDirect}
	}
	return nil
}

// directMessage is the push.direct message of d with the own-channel message msg for
// installation iid.
func directMessage(d *push.Delivery, msg *push.Message, iid string) push.DirectMessage {
	m := push.DirectMessage{
		AppID:          d.AppID,
		InstallationID: iid,
		ID:             d.NotificationObjectID,
		NotificationID: d.NotificationID,
		Data:           msg.Body,
	}
	if exp := msg.Expiration; !exp.IsZero() {
		m.Expires = exp.UnixMilli()
	}
	return m
}

// directRecord encodes m as a push.direct record keyed by its installation id.
func directRecord(m *push.DirectMessage, parts int) (queue.Record, error) {
	v, err := json.Marshal(m)
	if err != nil {
		return queue.Record{}, fmt.Errorf("BUG: cannot encode a push.direct record: %w", err)
	}
	key := []byte(m.InstallationID)
	return queue.Record{Partition: queue.PartitionForKey(key, parts), Key: key, Value: v}, nil
}
