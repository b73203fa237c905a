package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store"
)

// filter is the residual filter of a query job: a row is a target when its installation is
// valid, was refreshed within push.InactiveAfter, and matches the full where. The index a
// task scans only narrows the rows; the filter decides. One per goroutine (it reuses a doc).
type filter struct {
	q      *query.Query
	cutoff int64 // unix ms: rows last refreshed before it are inactive
	doc    rowDoc
}

func newFilter(q *query.Query, now time.Time) *filter {
	return &filter{q: q, cutoff: now.Add(-push.InactiveAfter).UnixMilli()}
}

func (f *filter) keep(r *push.Route, raw []byte) bool {
	if r.Invalid || r.UpdatedAt != 0 && r.UpdatedAt < f.cutoff {
		return false
	}
	f.doc.reset(r, raw)
	return f.q.Match(&f.doc)
}

// scanStore is what a task's scan reads.
type scanStore interface {
	Scanner
	Lookup
	DeadTokens
}

// scanner is a task's scan goroutine: it reads the task's rows from its checkpoint on, keeps
// the targets, and fills batches, blocking while the send side is QueueBatches behind.
//
// A scanner with counts set is a dry run (Audience): it walks the same rows with the same
// filter and routing, and counts each target on its delivery channel instead of batching it.
type scanner struct {
	r     *run
	st    scanStore
	clock Clock
	free  <-chan *batch
	full  chan<- *batch
	b     *batch
	f     *filter
	rows  int
	hits  int
	match bool // rows need the filter (query jobs)
	// counts, when set, receives every target (Targets; InvalidTokens for listed ids known
	// dead) and no batch is ever filled or handed on.
	counts *tally
	// hold is the scan goroutine's place at the worker's gate (nil: none).
	hold *gateHold
	// iids and online are resolveOwnFirst's scratch.
	iids   []string
	online []bool
}

func (s *scanner) scan(ctx context.Context) error {
	if err := s.hold.enter(ctx); err != nil {
		return err
	}
	defer s.hold.leave()
	if err := s.take(ctx); err != nil {
		return err
	}
	err := s.walk(ctx)
	s.flushMetrics()
	if err != nil {
		return err
	}
	s.b.last = true
	s.seal(ctx)
	return s.emit(ctx)
}

// walk visits the task's targets from its checkpoint on: a point task's ids, or a range
// task's rows bucket by bucket, each kept by the residual filter (query jobs).
func (s *scanner) walk(ctx context.Context) error {
	r := s.r
	if r.js.q != nil {
		s.f = newFilter(r.js.q, s.clock.Now())
		s.match = true
	}
	if r.t.Source == push.SourcePoint {
		return s.scanPoints(ctx)
	}
	return s.scanRange(ctx)
}

// take waits for a free batch. A scan that waits for the sender gives its token at the
// worker's gate back meanwhile; one that runs on without a token looks whether it must wait
// for one (the API got busy).
func (s *scanner) take(ctx context.Context) error {
	h := s.hold
	select {
	case s.b = <-s.free:
		return h.yield(ctx)
	default:
	}
	h.leave()
	select {
	case s.b = <-s.free:
		return h.enter(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *scanner) emit(ctx context.Context) error {
	select {
	case s.full <- s.b:
		s.b = nil
		return nil
	default:
	}
	s.hold.leave() // the send side is behind: no CPU meanwhile
	select {
	case s.full <- s.b:
		s.b = nil
		return s.hold.enter(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// target adds one target to the batch (or, when its channel has no message, counts it failed).
func (s *scanner) target(ctx context.Context, rt *push.Route) {
	r := s.r
	ch := deliveryChannel(rt, &r.js.app)
	own, ownFirst, hybrid, fallback := false, false, false, (*push.Message)(nil)
	if r.js.policy != push.PolicyVendor && ch != push.ChannelDirect && rt.DeviceType == push.DeviceAndroid && rt.InstallationID != "" {
		// A hybrid installation (one with a vendor): its channel policy decides.
		switch r.js.policy {
		case push.PolicyOwnOnly:
			own = true
		case push.PolicyOwnFirst:
			hybrid = true
			switch {
			case s.counts != nil || r.w.presence == nil:
			case r.js.message(channelIndex(ch)) != nil && r.js.message(channelIndex(push.ChannelDirect)) != nil:
				// Queued for its vendor; the batch's presence query may move it (resolveOwnFirst).
				ownFirst = true
			default: // a channel without a message: ask for this one target now
				own = s.onlineNow(ctx, rt.InstallationID)
			}
		case push.PolicyVendorFirst:
			fallback = r.js.message(channelIndex(push.ChannelDirect))
		}
		if own {
			ch = push.ChannelDirect
		}
	}
	ci := channelIndex(ch)
	s.hits++
	if s.counts != nil {
		s.counts[ci].Targets++
		return
	}
	msg := r.js.message(ci)
	if msg == nil {
		o := r.js.msgOut[ci]
		if o == push.OutcomeExpired && r.asksHeld() {
			// The push expired before its message was rendered: deliver (countExpired) asks
			// the Sender whether a gateway's quota held the target back. It is never sent.
			s.b.add(&r.tmpl, nil, ci, ch, rt, own, nil, false)
			return
		}
		s.b.pre.count(ci, o, r.js.msgErrs[ci])
		s.b.npre++
		if s.b.preReason == "" && o == push.OutcomeFailed {
			s.b.preReason = r.js.msgErrs[ci]
		}
		return
	}
	s.b.add(&r.tmpl, msg, ci, ch, rt, own, fallback, hybrid && !own)
	if ownFirst {
		s.b.ownFirst = append(s.b.ownFirst, len(s.b.ds)-1)
	}
}

// seal binds the batch's strings and decides its own_first targets.
func (s *scanner) seal(ctx context.Context) {
	s.b.seal()
	s.resolveOwnFirst(ctx)
}

// resolveOwnFirst asks the presence, once for the whole batch, which of its own_first targets
// are connected to the own channel now, and moves those from their vendor to the own channel
// (the installation id is their device id there). Each target stays one delivery, counted on
// the channel that carries it. When the presence cannot answer, all stay with their vendor.
func (s *scanner) resolveOwnFirst(ctx context.Context) {
	b, r := s.b, s.r
	if len(b.ownFirst) == 0 {
		return
	}
	s.iids = s.iids[:0]
	for _, i := range b.ownFirst {
		s.iids = append(s.iids, b.ds[i].Target.InstallationID)
	}
	s.online = append(s.online[:0], make([]bool, len(s.iids))...)
	if err := r.w.presence.Online(ctx, r.js.app.ID, s.iids, s.online); err != nil {
		r.w.m.presenceErrors.Inc()
		if ctx.Err() == nil {
			r.w.logger.Warn("cannot ask the own channel's presence: own_first targets go to their vendor",
				zap.String(telemetry.KeyAppID, r.js.app.ID), zap.Int("targets", len(s.iids)), zap.Error(err))
		}
		clear(s.online)
	}
	di := channelIndex(push.ChannelDirect)
	for k, i := range b.ownFirst {
		t := &b.ds[i].Target
		if s.online[k] {
			b.ds[i].Message = r.js.message(di)
			t.Channel = push.ChannelDirect
			t.DeviceID = t.InstallationID
			t.InstallationID = ""
			b.ch[i] = di
		}
		// One left with its vendor keeps its installation id: a deferral over the vendor's
		// quota may send it on the own channel later (quota.go).
	}
}

// onlineNow asks the presence about one installation.
func (s *scanner) onlineNow(ctx context.Context, iid string) bool {
	online := []bool{false}
	if err := s.r.w.presence.Online(ctx, s.r.js.app.ID, []string{iid}, online); err != nil {
		s.r.w.m.presenceErrors.Inc()
		return false
	}
	return online[0]
}

// isFull says whether the batch should be handed on now.
func (s *scanner) isFull() bool {
	return len(s.b.ds)+s.b.npre >= s.r.size
}

func (s *scanner) flush(ctx context.Context) error {
	s.seal(ctx)
	if err := s.emit(ctx); err != nil {
		return err
	}
	s.flushMetrics()
	return s.take(ctx)
}

func (s *scanner) flushMetrics() {
	s.r.w.m.rows.Add(s.rows)
	s.r.w.m.matched.Add(s.hits)
	s.rows, s.hits = 0, 0
}

func (s *scanner) scanRange(ctx context.Context) error {
	r := s.r
	t := r.t
	first, after, err := decodeRangeCursor(r.prog.Cursor, t.BucketLo, t.BucketHi)
	if err != nil {
		return fmt.Errorf("cannot resume task %s: %w", t.ID, err)
	}
	channel := ""
	if t.Source == push.SourceChannel {
		channel = t.Channel
	}
	each := func(bucket int, row *store.Row) error {
		s.rows++
		if s.match && !s.f.keep(row.Route, row.Doc) {
			return nil
		}
		s.target(ctx, row.Route)
		if !s.isFull() {
			return nil
		}
		s.b.cursor = appendRangeCursor(s.b.cursor[:0], bucket, row.Cursor)
		return s.flush(ctx)
	}
	bs, whole := s.st.(BucketsScanner)
	switch {
	case first >= t.BucketHi: // resumed past the end
	case whole:
		sr := store.ScanRange{AppID: t.Job.AppID, Channel: channel, Bucket: first, DeviceType: r.js.hints.DeviceType, After: after}
		if err := bs.ScanBuckets(ctx, sr, t.BucketHi, each); err != nil {
			return fmt.Errorf("cannot scan buckets %d to %d of app %s: %w", first, t.BucketHi-1, t.Job.AppID, err)
		}
	default:
		for bucket := first; bucket < t.BucketHi; bucket++ {
			sr := store.ScanRange{AppID: t.Job.AppID, Channel: channel, Bucket: bucket, DeviceType: r.js.hints.DeviceType}
			if bucket == first {
				sr.After = after
			}
			if err := s.st.Scan(ctx, sr, func(row *store.Row) error { return each(bucket, row) }); err != nil {
				return fmt.Errorf("cannot scan bucket %d of app %s: %w", bucket, t.Job.AppID, err)
			}
		}
	}
	s.b.cursor = appendRangeCursor(s.b.cursor[:0], t.BucketHi, nil) // past the end
	return nil
}

func (s *scanner) scanPoints(ctx context.Context) error {
	r := s.r
	t := r.t
	job := &t.Job
	start, err := decodePointCursor(r.prog.Cursor, len(t.IDs))
	if err != nil {
		return fmt.Errorf("cannot resume task %s: %w", t.ID, err)
	}
	var synth push.Route
	for i := start; i < len(t.IDs); i++ {
		id := t.IDs[i]
		s.rows++
		inst, found, err := s.lookup(ctx, t.IDKind, id)
		if err != nil {
			return err
		}
		switch {
		case job.Kind == push.JobDevices && !found:
			// A listed id with no installation: deliver with the request's options, unless
			// the gateway said it is dead (the spec drops later messages to it).
			synth = deviceRoute(job, t.IDKind, id)
			dead, err := s.dead(ctx, t.IDKind, id)
			if err != nil {
				return err
			}
			if dead {
				s.deadTarget(&synth)
			} else {
				s.target(ctx, &synth)
			}
		case job.Kind == push.JobDevices:
			if inst.DeviceProfile == "" {
				inst.DeviceProfile = job.DeviceProfile
			}
			s.target(ctx, &inst.Route)
		case !found:
			continue
		default:
			if !s.f.keep(&inst.Route, inst.Doc) {
				continue
			}
			s.target(ctx, &inst.Route)
		}
		if s.isFull() {
			s.b.cursor = appendPointCursor(s.b.cursor[:0], i+1)
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
	}
	s.b.cursor = appendPointCursor(s.b.cursor[:0], len(t.IDs))
	return nil
}

func (s *scanner) lookup(ctx context.Context, kind push.IDKind, id string) (push.Installation, bool, error) {
	st := s.st
	appID := s.r.t.Job.AppID
	oid := id
	if kind != kindObjectID {
		var err error
		oid, err = st.LookupDevice(ctx, appID, kind, id)
		if errors.Is(err, store.ErrNotFound) {
			return push.Installation{}, false, nil
		}
		if err != nil {
			return push.Installation{}, false, fmt.Errorf("cannot look up a %s of app %s: %w", kind, appID, err)
		}
	}
	inst, err := st.GetInstallation(ctx, appID, oid)
	if errors.Is(err, store.ErrNotFound) {
		return push.Installation{}, false, nil
	}
	if err != nil {
		return push.Installation{}, false, fmt.Errorf("cannot read installation %s of app %s: %w", oid, appID, err)
	}
	return inst, true, nil
}

// deviceRoute is the route of a listed device id that has no stored installation, built
// from the devices push's own options.
func deviceRoute(job *push.Job, kind push.IDKind, id string) push.Route {
	r := push.Route{DeviceType: job.DeviceType, DeviceProfile: job.DeviceProfile}
	switch kind {
	case push.KindToken:
		r.DeviceType = push.DeviceIOS
		r.DeviceToken = id
	case push.KindRegID:
		r.RegistrationID = id
		r.Vendor = job.Vendor
	default:
		r.InstallationID = id
	}
	if r.DeviceType == "" {
		r.DeviceType = push.DeviceAndroid
	}
	return r
}
