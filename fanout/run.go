package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/webhook"
)

// batchDrain bounds how long a stopping worker waits for the batch it is sending.
const batchDrain = 5 * time.Second

// drainAfter returns a context that outlives ctx's cancellation by grace: it ends grace after
// ctx ends, or when the returned cancel is called.
func drainAfter(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })
	return out, func() {
		stop()
		cancel()
	}
}

// ReasonDailyVolume is the Stopped reason (and the failure reason of the targets not sent)
// once an app's daily volume is used up.
const ReasonDailyVolume = "daily volume reached"

// run is one execution of one task. The scan goroutine owns the filter and the batch being
// filled; every other field belongs to the send goroutine (the caller of run).
type run struct {
	w    *Worker
	t    *push.Task
	js   *jobState
	prog *push.TaskProgress
	tmpl push.Delivery // every delivery starts as a copy of it
	size int           // batch size

	// send side
	tl     tally
	cursor []byte // the task cursor after the last final batch
	since  int    // deliveries since the last checkpoint
	// unsynced are the deliveries since the last synced checkpoint, those of the checkpoints
	// written without an fsync included (SyncEvery).
	unsynced int
	pace     *pacer
	reasons  []string
	stopped  string
	expires  time.Time
	recAt    time.Time

	day string // the UTC day whose volume the task counts
	ev  Events // nil unless the app has a webhook
	// hold is the task goroutine's place at the worker's gate (nil: no gate); the scan
	// goroutine has its own.
	hold *gateHold
	// dead are the dead tokens of final batches not yet deleted (noteDead, dropDead).
	dead []deadToken
}

// newRun starts a run of t; rec is the task's push record as read at recAt.
func (w *Worker) newRun(t *push.Task, js *jobState, prog *push.TaskProgress, rec *push.Notification, recAt time.Time) *run {
	now := w.clock.Now()
	r := &run{
		w:    w,
		t:    t,
		js:   js,
		prog: prog,
		tmpl: push.Delivery{
			AppID:                t.Job.AppID,
			NotificationObjectID: t.Job.NotificationObjectID,
			NotificationID:       t.Job.NotificationID,
			Prod:                 t.Job.Prod != "dev",
			InvalidateLater:      w.inv != nil,
		},
		size:    batchFor(w.cfg.BatchSize, t.Rate),
		tl:      tallyFrom(prog.Counts),
		cursor:  append([]byte(nil), prog.Cursor...),
		pace:    newPacer(w.clock, t.Rate),
		stopped: rec.Stopped,
		expires: t.Job.ExpiresAt,
		recAt:   recAt,
		day:     now.UTC().Format(time.DateOnly),
		ev:      w.eventsFor(t.Job.AppID),
	}
	return r
}

// run scans and sends until the task is done, the push is cancelled (errCancelled), or an
// error ends it (the task is then retried from r.cursor).
func (r *run) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := r.w.cfg.QueueBatches + 1 + r.w.cfg.SendAhead // queued, the one being filled and those being sent
	all := make([]*batch, n)
	free := make(chan *batch, n)
	full := make(chan *batch, n)
	for i := range all {
		all[i] = r.w.pool.Get().(*batch)
		all[i].reset()
		free <- all[i]
	}
	var scanErr error
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(full)
		s := scanner{r: r, st: r.w.st, clock: r.w.clock, free: free, full: full, hold: r.hold.sibling()}
		scanErr = s.scan(ctx)
	}()
	err := r.send(ctx, full, free)
	cancel()
	for range full { //nolint:revive // drain so the scanner can finish
	}
	<-scanned
	if err != nil {
		// A sender that gave up on a batch (ctx ended, closed) may still hold pointers into
		// its deliveries: leave this run's batches to the garbage collector.
		return err
	}
	for _, b := range all {
		r.w.pool.Put(b)
	}
	if scanErr != nil && !errors.Is(scanErr, context.Canceled) {
		return scanErr
	}
	if scanErr != nil {
		return ctx.Err()
	}
	return nil
}

// inflight is a batch handed to the send side, in scan order: done delivers the sender's
// answer to its n deliveries (at once when none went to the sender).
type inflight struct {
	b    *batch
	ds   []push.Delivery // what went to the sender: b.res[:n] are their results
	n    int
	done chan error
}

// send sends the scanned batches in order. While the scan is ahead of the sender (a gateway's
// latency: batches are ready before the answers to those sent), it hands the next batch over
// without waiting, up to SendAhead batches at the sender at once; when the scan is what the
// task waits on, fewer are in flight. Batches are made final
// (counted, checkpointed) in scan order, so the cursor and the counts never pass a batch
// whose answers are not all in.
//
// Once something ends the task (ctx ended: a stop or a rebalance; a failed launch), no batch
// is launched, but those already at the sender are still made final as they answer, in order,
// with a context that outlives ctx by batchDrain: the cursor the task leaves covers every
// batch the gateway accepted, so whoever resumes the task sends none of them again. Only a
// batch that failed, or one after a batch that could not be made final, is given back.
func (r *run) send(ctx context.Context, full <-chan *batch, free chan<- *batch) error {
	fctx := ctx
	if !r.w.cfg.abrupt { // a simulated kill -9 finishes nothing after its end
		var cancel context.CancelFunc
		fctx, cancel = drainAfter(ctx, batchDrain)
		defer cancel()
	}
	var q []inflight // at the sender, oldest first
	var err error    // the task's end: no more launches
	final := true    // every batch answered so far was made final
	closed := false  // the scan ended (failed): no more batches
	for {
		_ = r.hold.enter(fctx) // an error (the drain's end) only means working without a token
		if len(q) == 0 && (err != nil || closed) {
			return err // every batch handed to the sender has answered; a failed scan is run's to report
		}
		var next <-chan *batch
		if err == nil && !closed && len(q) < r.w.cfg.SendAhead {
			next = full
		}
		var oldest chan error
		if len(q) > 0 {
			oldest = q[0].done
		}
		r.hold.leave() // waiting on the scan or the gateway
		select {
		case b, ok := <-next:
			if !ok {
				closed = true
				continue
			}
			f, lerr := r.launch(ctx, b, len(q) > 0)
			if lerr != nil {
				err = lerr
				continue
			}
			q = append(q, f)
			r.w.m.inflight.Update(float64(len(q)))
		case serr := <-oldest:
			f := q[0]
			q = q[1:]
			if !final {
				r.release(fctx, f.n) // not final: the retry sends (and counts) it again
				continue
			}
			if ferr := r.finish(fctx, f, serr); ferr != nil {
				final = false
				if err == nil {
					err = ferr
				}
				continue
			}
			if f.b.last {
				return err
			}
			f.b.reset()
			free <- f.b
		}
	}
}

// launch does what comes before sending b (record check, checkpoint, volume, pacing, badges)
// and hands its deliveries to the sender in the background. ahead says batches before b are
// still in flight. What b's targets count before the sender answers (pre-final targets,
// stopped, expired, over the volume) is kept in b.pre until b is final, so a checkpoint of an
// earlier batch never counts b's targets with a cursor before them.
func (r *run) launch(ctx context.Context, b *batch, ahead bool) (inflight, error) {
	w := r.w
	f := inflight{b: b, done: make(chan error, 1)}
	if err := ctx.Err(); err != nil {
		return f, err // ended: nothing more goes to the sender
	}
	if err := r.checkRecord(ctx); err != nil {
		return f, err
	}
	n := len(b.ds)
	w.m.batches.Inc()
	// Checkpoint before a batch that could take the unrecorded deliveries past the
	// interval: a crash then repeats at most CheckpointEvery deliveries of this task, plus
	// the batches in flight.
	if !ahead && n > 0 && r.since > 0 && r.since+n > w.cfg.CheckpointEvery {
		if err := r.checkpoint(ctx, false); err != nil {
			return f, err
		}
	}
	if !b.pre.isZero() {
		r.addReason(b.preReason)
		pt := b.pre.total()
		w.m.failed.Add(int(pt.Failed))
		w.m.expired.Add(int(pt.Expired))
		w.m.invalidTokens.Add(int(pt.InvalidTokens))
	}
	if n == 0 {
		f.done <- nil
		return f, nil
	}
	final := r.tl
	r.tl = b.pre // prepare counts into b.pre
	ds, err := r.prepare(ctx, b)
	b.pre, r.tl = r.tl, final
	if err != nil {
		return f, err
	}
	if len(ds) == 0 {
		f.done <- nil
		return f, nil
	}
	f.n, f.ds = len(ds), ds
	res := b.res[:len(ds)]
	clear(res)
	// A batch handed to the sender is finished even when ctx ends (SIGTERM, a rebalance):
	// the gateway may already have accepted part of it, and a batch given up is sent again
	// after the restart. batchDrain bounds how long a stop waits for it; while ctx lives, the
	// sender's own retry budget is the only bound.
	sctx, cancel := drainAfter(ctx, batchDrain)
	go func() {
		err := w.snd.Send(sctx, ds, res)
		cancel()
		f.done <- err
	}()
	return f, nil
}

// finish makes f's batch final once the sender answered (serr): its outcomes are counted,
// the cursor moves past it, and a checkpoint is written when one is due.
func (r *run) finish(ctx context.Context, f inflight, serr error) error {
	w := r.w
	b := f.b
	if serr != nil {
		// Not final: the retry sends (and counts) the batch again.
		r.release(ctx, f.n)
		return fmt.Errorf("cannot send a batch of task %s: %w", r.t.ID, serr)
	}
	if f.n > 0 {
		// Before anything of b is counted: a target its vendor deferred is durable first.
		if err := r.deferReplies(ctx, b, b.res[:f.n]); err != nil {
			r.release(ctx, f.n)
			return err
		}
	}
	r.tl.add(&b.pre)
	if f.n > 0 {
		fpWorkerAfterSend.Hit()
		r.since += f.n
		r.tallyBatch(b, b.res[:f.n])
		r.noteDead(f.ds, b.res[:f.n])
	}
	r.cursor = append(r.cursor[:0], b.cursor...)
	// Checkpoint as soon as the next batch could take the unrecorded deliveries past the
	// interval, not once that batch is ready: a crash while the scan fills it then repeats
	// nothing, and with the default interval (one batch) a crash repeats at most the batches
	// being sent.
	if !b.last && r.since > 0 && r.since+r.size > w.cfg.CheckpointEvery {
		if err := r.checkpoint(ctx, false); err != nil {
			return err
		}
	}
	return nil
}

// prepare returns the deliveries of b to send, having counted those it does not send
// (stopped, expired, over the daily volume).
func (r *run) prepare(ctx context.Context, b *batch) ([]push.Delivery, error) {
	w := r.w
	ds := b.ds
	if r.stopped != "" {
		r.countAll(b.ch, push.OutcomeFailed, r.stopped)
		if r.ev != nil {
			r.emitAll(ds, webhook.Failed, r.stopped, w.clock.Now())
		}
		return nil, nil
	}
	if !r.expires.IsZero() && !w.clock.Now().Before(r.expires) {
		r.countExpired(ctx, b)
		return nil, nil
	}
	// Marketing rules first (a held target uses neither vendor budget nor volume), then the
	// vendor budgets (quota.go): a target deferred or moved to the own channel takes no unit of
	// the day's volume here.
	if err := r.marketing(ctx, b); err != nil {
		return nil, err
	}
	ds, err := r.admitQuotas(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, nil
	}
	allowed, err := r.reserve(ctx, len(ds))
	if err != nil {
		return nil, err
	}
	fpWorkerAfterReserve.Hit()
	if allowed < len(ds) {
		// The day's volume is used up: what this task was granted is the last of it.
		r.countAll(b.ch[allowed:], push.OutcomeFailed, ReasonDailyVolume)
		if r.ev != nil {
			r.emitAll(ds[allowed:], webhook.Failed, ReasonDailyVolume, w.clock.Now())
		}
		if err := r.stop(ctx, ReasonDailyVolume); err != nil {
			r.release(ctx, allowed)
			return nil, err
		}
		ds = ds[:allowed]
		if allowed == 0 {
			return nil, nil
		}
	}
	if err := r.pace.wait(ctx, len(ds)); err != nil {
		r.release(ctx, len(ds))
		return nil, err
	}
	if r.js.badged() != nil {
		if err := r.badges(ctx, b, ds); err != nil {
			r.release(ctx, len(ds)) // not sent: the retry reserves (and counts) the batch again
			return nil, err
		}
	}
	return ds, nil
}

// tallyBatch counts the sender's outcomes of b's first len(res) deliveries.
func (r *run) tallyBatch(b *batch, res []push.Result) {
	var sent, failed, expired, invalid int
	for i := range res {
		o := res[i].Outcome
		ci := b.ch[i]
		if res[i].Channel != "" { // carried by another channel (a vendor_first fallback)
			ci = channelIndex(res[i].Channel)
		}
		r.tl.count(ci, o, res[i].Reason)
		switch o {
		case push.OutcomeSent:
			sent++
		case push.OutcomeInvalidToken:
			invalid++
		case push.OutcomeExpired:
			expired++
		case push.OutcomeQueued: // handed to the own-channel gateway, which counts it
		case push.OutcomeDeferred: // written by deferReplies; the re-driver ends it
		default:
			failed++
			reason := res[i].Reason
			if reason == "" {
				reason = "failed without a reason"
			}
			r.addReason(reason)
		}
	}
	w := r.w
	if r.ev != nil {
		r.emit(b.ds[:len(res)], res, w.clock.Now())
	}
	w.m.sent.Add(sent)
	w.m.failed.Add(failed)
	w.m.expired.Add(expired)
	w.m.invalidTokens.Add(invalid)
}

// asksHeld says whether the targets of an expired push are counted by asking the Sender
// (heldReasons): only then may a batch hold deliveries without a message, and only while
// the push is expired, so they are never handed to Send.
func (r *run) asksHeld() bool {
	if r.w == nil || r.expires.IsZero() || r.w.clock.Now().Before(r.expires) {
		return false
	}
	_, ok := r.w.snd.(heldReasons)
	return ok
}

// countExpired counts b's deliveries of a push that expired before they were sent: expired,
// or failed with the reason when the Sender says a gateway's quota held them back.
func (r *run) countExpired(ctx context.Context, b *batch) {
	hr, ok := r.w.snd.(heldReasons)
	if !ok {
		r.countAll(b.ch, push.OutcomeExpired, "")
		if r.ev != nil {
			r.emitAll(b.ds, webhook.Expired, "", r.w.clock.Now())
		}
		return
	}
	failed := 0
	for i := range b.ds {
		if reason, held := hr.HeldReason(ctx, &b.ds[i]); held {
			r.tl.count(b.ch[i], push.OutcomeFailed, reason)
			r.addReason(reason)
			failed++
			if r.ev != nil {
				r.emitOne(&b.ds[i], webhook.Event{Type: webhook.Failed, Reason: reason}, r.w.clock.Now())
			}
		} else {
			r.tl.count(b.ch[i], push.OutcomeExpired, "")
			if r.ev != nil {
				r.emitOne(&b.ds[i], webhook.Event{Type: webhook.Expired}, r.w.clock.Now())
			}
		}
	}
	r.w.m.failed.Add(failed)
	r.w.m.expired.Add(len(b.ds) - failed)
}

func (r *run) countAll(chs []uint8, o push.Outcome, reason string) {
	for _, ch := range chs {
		r.tl.count(ch, o, reason)
	}
	if o == push.OutcomeExpired {
		r.w.m.expired.Add(len(chs))
	} else {
		r.w.m.failed.Add(len(chs))
	}
	r.addReason(reason)
}

func (r *run) addReason(reason string) {
	r.reasons = appendReason(r.reasons, reason, r.w.cfg.MaxErrors)
}

// checkRecord re-reads the push record when the last read is older than RecordCheck: a
// deleted or cancelled record ends the task, a Stopped one stops its sending.
func (r *run) checkRecord(ctx context.Context) error {
	now := r.w.clock.Now()
	if now.Sub(r.recAt) < r.w.cfg.RecordCheck {
		return nil
	}
	job := &r.t.Job
	n, err := r.w.st.GetNotification(ctx, job.AppID, job.NotificationObjectID)
	if errors.Is(err, store.ErrNotFound) {
		return errCancelled
	}
	if err != nil {
		return fmt.Errorf("cannot read record %s of task %s: %w", job.NotificationObjectID, r.t.ID, err)
	}
	r.recAt = now
	if n.Status == push.StatusCancelled {
		return errCancelled
	}
	if n.Stopped != "" && r.stopped == "" {
		r.stopped = n.Stopped
	}
	return nil
}

// reserve takes up to n units of the app's daily volume for a batch of n targets and says how
// many it got. It reserves only what the batch needs, never a chunk ahead: a unit one task
// holds and does not use is a unit another push is refused, so a task that asked in vain would
// stop its push while the day still had volume left. The store's counter is added to
// atomically; whatever the addition took beyond the limit is given back at once, so the grants
// of concurrent tasks (of this push and of others) never sum past the limit, and a task gets
// less than it asked only when the rest of the day's volume is sent or in other tasks' batches
// being sent.
func (r *run) reserve(ctx context.Context, n int) (int, error) {
	limit := r.js.app.Settings.DailyVolume
	if limit <= 0 {
		return n, nil
	}
	job := &r.t.Job
	ask := int64(n)
	total, err := r.addVolume(ctx, ask)
	if err != nil {
		return 0, fmt.Errorf("cannot count daily volume of app %s: %w", job.AppID, err)
	}
	granted := ask
	if over := total - limit; over > 0 {
		granted = max(ask-over, 0)
		r.release(ctx, int(ask-granted))
	}
	return int(granted), nil
}

// addVolume adds n to the app's volume of the day. With SyncEvery it is not synced on its own
// (VolumeNoSync): a reservation is then durable with the batch's checkpoint or an earlier
// synced write, and one a crash loses belongs to a batch after the last durable checkpoint,
// which the task sends again, reserving it again.
func (r *run) addVolume(ctx context.Context, n int64) (int64, error) {
	appID := r.t.Job.AppID
	if ns := r.w.volumeNoSync; ns != nil {
		return ns.AddDailyVolumeNoSync(ctx, appID, r.day, n)
	}
	return r.w.st.AddDailyVolume(ctx, appID, r.day, n)
}

// release gives back k units reserved for targets that were not handed to a gateway for good
// (a batch given up, a stop), so that the day's volume counts exactly the targets whose
// delivery was final: sent, invalid token, or failed at the gateway.
func (r *run) release(ctx context.Context, k int) {
	if k <= 0 || r.js.app.Settings.DailyVolume <= 0 {
		return
	}
	job := &r.t.Job
	// Also when ctx has ended (a stop): the units are ours to give back, and the write is short.
	if _, err := r.addVolume(context.WithoutCancel(ctx), -int64(k)); err != nil {
		r.w.logger.Warn("cannot return unused daily volume", zap.String(telemetry.KeyAppID, job.AppID), zap.Error(err))
	}
}

// stop stops the push's sending for reason: this task counts its remaining targets as not
// sent, and the record tells the other tasks (they notice within RecordCheck).
func (r *run) stop(ctx context.Context, reason string) error {
	r.stopped = reason
	job := &r.t.Job
	_, err := r.w.st.UpdateNotification(ctx, job.AppID, job.NotificationObjectID, func(n *push.Notification) error {
		if n.Stopped != "" {
			return errApplied
		}
		n.Stopped = reason
		n.Errors = appendReason(n.Errors, reason, r.w.cfg.MaxErrors)
		n.UpdatedAt = time.Now()
		return nil
	})
	if err != nil && !errors.Is(err, errApplied) && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot mark record %s stopped: %w", job.NotificationObjectID, err)
	}
	r.w.logger.Info("push stopped", zap.String(telemetry.KeyAppID, job.AppID),
		zap.String(telemetry.KeyJobID, job.ID), zap.String("reason", reason))
	return nil
}

// checkpoint writes the cursor and counts of every final batch so far. The write is synced
// when durable is set, when the store cannot write it without (ProgressNoSync), or when the
// next batch could take the deliveries since the last synced checkpoint past
// SyncEvery; otherwise it is durable with the next synced write of the store.
func (r *run) checkpoint(ctx context.Context, durable bool) error {
	p := *r.prog
	p.Cursor = r.cursor
	p.Counts = r.tl.counts()
	p.Done = false
	p.Epoch++
	unsynced := r.unsynced + r.since
	put, synced := r.w.st.PutTaskProgress, true
	if ns := r.w.progressNoSync; ns != nil && !durable && unsynced+r.size <= r.w.cfg.SyncEvery {
		put, synced = ns.PutTaskProgressNoSync, false
	}
	if err := put(ctx, p); err != nil {
		return fmt.Errorf("cannot checkpoint task %s: %w", r.t.ID, err)
	}
	fpWorkerAfterCheckpt.Hit()
	r.prog.Epoch = p.Epoch
	r.since, r.unsynced = 0, unsynced
	if synced {
		r.unsynced = 0
		r.w.m.checkpointSyncs.Inc()
	}
	r.w.m.checkpoints.Inc()
	// The deletions are synced writes of the same store, after the checkpoint: one that is
	// durable makes the checkpoint durable first (ProgressNoSync).
	r.dropDead(ctx)
	return nil
}

// deadToken is a target a gateway reported dead, whose installation the run deletes.
type deadToken struct {
	objectID, deviceID string
	since              time.Time
}

// noteDead keeps the dead tokens among a final batch's results whose deletion the sender left
// to the run (push.Delivery.InvalidateLater), for dropDead.
func (r *run) noteDead(ds []push.Delivery, res []push.Result) {
	if !r.tmpl.InvalidateLater {
		return
	}
	for i := range res {
		if res[i].Outcome == push.OutcomeInvalidToken && ds[i].CallerInvalidates() {
			r.dead = append(r.dead, deadToken{objectID: ds[i].Target.ObjectID, deviceID: ds[i].Target.DeviceID, since: res[i].Since})
		}
	}
}

// dropDeadTimeout bounds the deletions after one checkpoint; those left (and those that fail)
// keep their installation until a later push finds the token dead again.
const dropDeadTimeout = 30 * time.Second

// dropDeadParallel is how many deletions run at once: each is a synced write, and the store
// commits concurrent ones with one fsync (one at a time, the invalid scenario of
// scripts/loadtest.sh took twice as long).
const dropDeadParallel = 16

// dropDead deletes the installations of the dead tokens noted so far. Call it once what
// counted them is durable (a checkpoint, the task's final progress): a crash before then sends
// their batch again, and the scan must still find them for the record to count them. A crash
// after it and before the deletions leaves them in place until a later push to them.
func (r *run) dropDead(ctx context.Context) {
	if len(r.dead) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropDeadTimeout)
	defer cancel()
	var g errgroup.Group // no shared context: one failure does not stop the others
	g.SetLimit(dropDeadParallel)
	var failed atomic.Int64
	for _, d := range r.dead {
		g.Go(func() error {
			err := r.w.inv.InvalidateToken(ctx, r.t.Job.AppID, d.objectID, d.deviceID, d.since)
			if err != nil {
				failed.Add(1)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil { // the first failure
		r.w.m.deadTokenErrors.Add(int(failed.Load()))
		r.w.logger.Warn("cannot delete the installations of dead tokens: they stay until a later push finds them dead",
			zap.String(telemetry.KeyTaskID, r.t.ID), zap.Int64("failed", failed.Load()), zap.Int("of", len(r.dead)), zap.Error(err))
	}
	clear(r.dead)
	r.dead = r.dead[:0]
}
