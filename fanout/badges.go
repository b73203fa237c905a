package fanout

import (
	"context"
	"errors"
	"fmt"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/store"
)

// badgedMessages is the optional capability of a job's Messages that knows the per-target
// APNs template of a push whose badge is "Increment" (render.Cache).
type badgedMessages interface {
	Badged() *render.Badged
}

// apnsIndex is the channel index of iOS targets.
var apnsIndex = channelIndex(push.ChannelAPNs)

// badgeScratch holds one batch's per-target APNs messages of an "Increment" push, reused from
// batch to batch: each iOS target's Message is a copy of the shared one whose Body, in bodies,
// carries its own badge.
type badgeScratch struct {
	idx    []int // ds indexes of the iOS targets
	oids   []string
	got    []int64 // the badges IncrementBadges gave oids
	msgs   []push.Message
	bodies []byte
}

// badges gives each iOS target of ds its installation's stored badge + 1, storing it (once per
// installation per push: a batch sent again after a crash gets the same badges), and points its
// delivery at a payload carrying it. A listed device id with no installation gets badge 1.
// It runs right before the batch is handed to the sender, so only targets that are sent are
// counted up.
func (r *run) badges(ctx context.Context, b *batch, ds []push.Delivery) error {
	sc := &b.bd
	sc.idx, sc.oids = sc.idx[:0], sc.oids[:0]
	for i := range ds {
		if b.ch[i] != apnsIndex {
			continue
		}
		sc.idx = append(sc.idx, i)
		if oid := ds[i].Target.ObjectID; oid != "" {
			sc.oids = append(sc.oids, oid)
		}
	}
	n := len(sc.idx)
	if n == 0 {
		return nil
	}
	if cap(sc.got) < len(sc.oids) {
		sc.got = make([]int64, len(sc.oids))
	}
	sc.got = sc.got[:len(sc.oids)]
	if len(sc.oids) > 0 {
		job := &r.t.Job
		err := r.w.st.IncrementBadges(ctx, job.AppID, r.js.buckets, job.NotificationObjectID, sc.oids, sc.got)
		if err != nil {
			return fmt.Errorf("cannot increment badges of task %s: %w", r.t.ID, err)
		}
	}
	// Sized once for the batch, so no append below moves the bodies already pointed at.
	if need := n * r.js.badged().Len(); cap(sc.bodies) < need {
		sc.bodies = make([]byte, 0, need)
	}
	sc.bodies = sc.bodies[:0]
	if cap(sc.msgs) < n {
		sc.msgs = make([]push.Message, n)
	}
	sc.msgs = sc.msgs[:n]
	j := 0
	for k, i := range sc.idx {
		d := &ds[i]
		badge := int64(1)
		if d.Target.ObjectID != "" {
			badge = sc.got[j]
			j++
		}
		start := len(sc.bodies)
		sc.bodies = r.js.badged().AppendBody(sc.bodies, badge)
		m := &sc.msgs[k]
		*m = *d.Message
		m.Body = sc.bodies[start:len(sc.bodies):len(sc.bodies)]
		d.Message = m
	}
	return nil
}

// dead says whether a listed device id with no installation carries a live dead-token mark.
// Only gateway tokens (deviceToken, registrationId) are ever marked.
func (s *scanner) dead(ctx context.Context, kind push.IDKind, id string) (bool, error) {
	if kind != push.KindToken && kind != push.KindRegID {
		return false, nil
	}
	r := s.r
	appID := r.t.Job.AppID
	since, err := s.st.DeadToken(ctx, appID, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot read a dead-token mark of app %s: %w", appID, err)
	}
	return push.DeadTokenLive(since, s.clock.Now()), nil
}

// deadTarget counts a target whose token is known dead as an invalid token, without sending.
func (s *scanner) deadTarget(rt *push.Route) {
	ci := channelIndex(deliveryChannel(rt, &s.r.js.app))
	s.hits++
	if s.counts != nil {
		s.counts.count(ci, push.OutcomeInvalidToken, "")
		return
	}
	s.b.pre.count(ci, push.OutcomeInvalidToken, "")
	s.b.npre++
}
