package pushapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/wire"
	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/pushjson"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// writeTimeout bounds the durable writes of one push call.
const writeTimeout = 10 * time.Second

// admit applies the rules every push call passes before its body is read: the client-push
// permission, then the calls-per-minute limit (every admitted push call counts, valid or not),
// then the daily volume.
func (s *Service) admit(ctx *fasthttp.RequestCtx, c *api.Call) error {
	app := c.App
	if !c.Master && !app.Settings.ClientPush {
		return push.Errorf(push.CodeForbiddenClient, "pushing from clients is forbidden for this app: use the master key, or allow client push in the app settings")
	}
	ok, wait, err := s.lim.Allow(ctx, app.ID, app.Settings.CallsPerMinute)
	if err != nil {
		return err
	}
	if !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(secs))
		return push.Errorf(push.CodeTooManyRequests, "push calls of this app are over %d per minute: refused for the next %d seconds", app.Settings.CallsPerMinute, secs)
	}
	used, err := s.volume.get(ctx, app.ID, push.Day(c.Now), c.Now)
	if err != nil {
		return fmt.Errorf("cannot read the daily volume of app %s: %w", app.ID, err)
	}
	if used >= app.Settings.DailyVolume {
		return push.Errorf(push.CodeAppThreshold, "the daily push volume of this app (%d) is reached: no further push today (UTC)", app.Settings.DailyVolume)
	}
	return nil
}

func (s *Service) push(ctx *fasthttp.RequestCtx, c *api.Call) error {
	if err := s.admit(ctx, c); err != nil {
		return err
	}
	app := c.App
	req, perr := wire.DecodePush(ctx.PostBody(), app.Settings.Edition, api.ProdHeader(ctx), c.Now)
	if perr != nil {
		return perr
	}
	where := req.MergedWhere()
	q, err := query.ParseAt(where, c.Now) // to check it: the fan-out reads it again (push.Job.QueryAt)
	if err != nil {
		return err
	}
	if req.NeedsIOSOnly && q.Hints().DeviceType != push.DeviceIOS {
		return wire.IOSOnlyError()
	}
	n := newRecord(app.ID, &req.Common, c.Now)
	n.Kind = push.JobQuery
	n.Where = req.Where
	n.Channels = req.Channels
	n.FlowControl = req.FlowControl
	if req.PushTime != nil {
		n.PushTime = req.PushTime.UTC()
	}
	job := newJob(&n, &req.Common)
	job.Kind = push.JobQuery
	job.Where = where
	job.FlowControl = req.FlowControl
	if req.DryRun {
		var at *time.Time
		if req.Scheduled {
			at = req.PushTime
		}
		return s.dryRun(ctx, c, &job, at)
	}
	return s.accept(ctx, c, &n, &job, req.Scheduled)
}

func (s *Service) pushDevices(ctx *fasthttp.RequestCtx, c *api.Call) error {
	if err := s.admit(ctx, c); err != nil {
		return err
	}
	app := c.App
	req, perr := wire.DecodePushDevices(ctx.PostBody(), app.Settings.Edition, api.ProdHeader(ctx), c.Now)
	if perr != nil {
		return perr
	}
	if req.Vendor != "" {
		if perr := checkHybridProfile(app, req.Vendor, req.DeviceProfile); perr != nil {
			return perr
		}
	}
	n := newRecord(app.ID, &req.Common, c.Now)
	n.Kind = push.JobDevices
	n.DeviceType = req.DeviceType
	n.DeviceCount = len(req.DeviceIDs)
	job := newJob(&n, &req.Common)
	job.Kind = push.JobDevices
	job.DeviceType = req.DeviceType
	job.DeviceIDs = req.DeviceIDs
	job.Vendor = req.Vendor
	job.DeviceProfile = req.DeviceProfile
	if req.DryRun {
		return s.dryRun(ctx, c, &job, nil)
	}
	return s.accept(ctx, c, &n, &job, false)
}

// checkHybridProfile refuses a hybrid push whose configuration does not exist: the named
// device_profile, or _default when none is named. A vendor's credentials are a JSON object
// keyed by profile name.
//
// FCM is the exception: its credential is one service account (the sender's shape), which is
// the app's `_default` FCM configuration; no other profile exists.
func checkHybridProfile(app *push.App, vendor, profile string) *push.Error {
	if profile == "" {
		profile = push.DefaultProfile
	}
	raw, ok := app.Credentials[vendor]
	if vendor == push.ChannelFCM {
		if ok && len(raw) > 2 && profile == push.DefaultProfile {
			return nil
		}
		return push.Errorf(push.CodeValidation, "hybrid push configuration %q of vendor fcm is not configured for this app (upload a service account as its fcm credentials): the push is refused", profile)
	}
	var profiles map[string]json.RawMessage
	if ok && json.Unmarshal(raw, &profiles) == nil {
		if cfg, ok := profiles[profile]; ok && len(cfg) > 2 {
			return nil
		}
	}
	return push.Errorf(push.CodeValidation, "hybrid push configuration %q of vendor %s is not configured for this app: the push is refused", profile, vendor)
}

func newRecord(appID string, cm *wire.Common, now time.Time) push.Notification {
	nid := cm.NotificationID
	if nid == "" {
		nid = push.NewNotificationID()
	}
	now = now.UTC().Truncate(time.Millisecond)
	return push.Notification{
		ObjectID:           push.NewObjectID(),
		AppID:              appID,
		NotificationID:     nid,
		CreatedAt:          now,
		UpdatedAt:          now,
		Data:               cm.Data,
		Prod:               cm.Prod,
		ExpiresAt:          cm.ExpiresAt,
		ExpirationInterval: cm.ExpirationInterval,
		ReqID:              cm.ReqID,
		ChannelPolicy:      cm.ChannelPolicy,
		MessageClass:       cm.MessageClass,
	}
}

func newJob(n *push.Notification, cm *wire.Common) push.Job {
	return push.Job{
		ID:                   n.ObjectID,
		AppID:                n.AppID,
		NotificationObjectID: n.ObjectID,
		NotificationID:       n.NotificationID,
		Data:                 cm.Data,
		Prod:                 cm.Prod,
		Topic:                cm.Topic,
		APNsTeamID:           cm.APNsTeamID,
		NotificationChannel:  cm.NotificationChannel,
		ExpiresAt:            cm.ExpiresAt,
		ChannelPolicy:        cm.ChannelPolicy,
		MessageClass:         cm.MessageClass,
		CreatedAt:            n.CreatedAt,
	}
}

// The accept path's fault points (internal/faultpoint), between its durable writes: the req_id
// claim, the record holding its job (or the record and its schedule, one write), the job's
// append to the log, and the answer.
var (
	fpAfterClaim  = faultpoint.Define("accept/after-claim")
	fpAfterRecord = faultpoint.Define("accept/after-record")
	fpAfterJob    = faultpoint.Define("accept/after-job")
)

// accept makes the push durable and answers {objectId, createdAt}. Order: claim the req_id
// (so a concurrent retry cannot slip in), write the record holding the job (a scheduled push:
// the record and its schedule, in one write), then append the job. Any failure undoes what was
// written, so a failed call leaves nothing behind and a retry with the same req_id is a new
// push. Over a JointAccepter (the embedded store and log) a push that is not scheduled is
// written whole instead: claim, record and job in one write (writeJoint).
//
// A crash leaves one of: a claim without a record, which a retry takes over (it accepts the
// push under the claimed ids); or a record holding a job that may not be in the log, which a
// retry appends again before it answers, and scheduler.Redriver appends if no retry comes.
// So a 200 always stands for a push that will be sent (docs/decisions.md, "Accept is atomic
// in effect").
func (s *Service) accept(rctx *fasthttp.RequestCtx, c *api.Call, n *push.Notification, job *push.Job, scheduled bool) error {
	app := c.App
	// fasthttp cancels every request's context the moment shutdown begins; a push being
	// accepted must finish during the drain instead, bounded by writeTimeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rctx), writeTimeout)
	defer cancel()
	fresh := true // n's objectId is the one newRecord generated, not a claim's
	if n.ReqID != "" {
		// Calls of this process with one req_id go one at a time: a retry that comes while the
		// first call is still writing waits for its outcome, instead of answering 200 for a
		// push that may yet fail (and have its claim released).
		unlock, err := s.reqs.lock(ctx, app.ID+"\x00"+n.ReqID)
		if err != nil {
			return push.Errorf(push.CodeUnavailable, "a push with req_id %s is still being accepted: retry", n.ReqID)
		}
		defer unlock()
	}
	var (
		prev    store.ReqClaim
		claimed = true  // no live claim of another call holds n's req_id (or n has none)
		written = false // n and its job are written whole (JointAccepter)
		err     error
	)
	switch {
	case s.joint != nil && !scheduled:
		if prev, claimed, err = s.writeJoint(ctx, n, job); err != nil {
			return err
		}
		if !claimed && n.ReqID == "" {
			return errors.New("BUG: a push without req_id was refused as a duplicate")
		}
		written = claimed
	case n.ReqID != "":
		claim := s.st.ClaimReqID
		if s.noSync != nil && s.jobSyncsStore {
			// Durable with the record and the job (RecordNoSyncer), both written before the
			// answer; a scheduled push's record write is synced too.
			claim = s.noSync.ClaimReqIDNoSync
		}
		if prev, claimed, err = claim(ctx, app.ID, n.ReqID, store.ReqClaim{ObjectID: n.ObjectID, CreatedAt: n.CreatedAt}, ReqIDWindow); err != nil {
			return fmt.Errorf("cannot claim req_id of app %s: %w", app.ID, err)
		}
	}
	if !claimed {
		done, err := s.retried(ctx, rctx, app.ID, prev)
		if done || err != nil {
			return err
		}
		// The claim has no record: the call that claimed it died before writing one.
		// This call is that push: it is accepted under the claimed ids.
		adopt(n, job, prev)
		fresh = false
	}
	if !written {
		if n.ReqID != "" {
			fpAfterClaim.Hit()
		}
		err := s.persist(ctx, n, job, scheduled, fresh)
		if errors.Is(err, store.ErrExists) && n.ReqID != "" {
			// Another node took the claim over (or wrote the record) first: that record answers.
			done, rerr := s.retried(ctx, rctx, app.ID, store.ReqClaim{ObjectID: n.ObjectID, CreatedAt: n.CreatedAt})
			if done || rerr != nil {
				return rerr
			}
			return push.Errorf(push.CodeUnavailable, "the push with req_id %s is being accepted elsewhere: retry", n.ReqID)
		}
		if err != nil {
			s.releaseClaim(n)
			return err
		}
	}
	if scheduled {
		s.scheduled.Inc()
	} else {
		s.accepted.Inc()
	}
	writeAccepted(rctx, n.ObjectID, n.CreatedAt)
	return nil
}

// writeJoint writes n and its job whole (JointAccepter), claimed true; or returns the live
// claim another call holds on n's req_id, claimed false and nothing written, for accept to
// answer or take over.
func (s *Service) writeJoint(ctx context.Context, n *push.Notification, job *push.Job) (prev store.ReqClaim, claimed bool, err error) {
	n.Status = push.StatusInQueue // its job is in the log with it: no copy to hold
	rec, err := s.jobRecord(job)
	if err != nil {
		return store.ReqClaim{}, false, err
	}
	prev, claimed, err = s.joint.AcceptJoint(ctx, *n, ReqIDWindow, queue.TopicJobs, rec)
	if err != nil {
		return store.ReqClaim{}, false, fmt.Errorf("cannot store the push and its job of app %s: %w", n.AppID, err)
	}
	if claimed {
		fpAfterJob.Hit()
	}
	return prev, claimed, nil
}

// releaseClaim undoes the req_id claim of a push that failed (none without a req_id), with a
// context of its own: the request's may be what failed.
func (s *Service) releaseClaim(n *push.Notification) {
	if n.ReqID == "" {
		return
	}
	undo, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.st.ReleaseReqID(undo, n.AppID, n.ReqID, n.ObjectID); err != nil {
		s.zl.Warn("cannot release req_id after a failed push", zap.String("app_id", n.AppID), zap.Error(err))
	}
}

// retried answers a call whose req_id is claimed by prev, if prev's record exists: 200 with
// prev's ids, after appending its job again if the record still holds it and another process
// wrote it (that call may have died before its append; if it did not, the planner plans the job
// once and redelivers its tasks, see fanout.Planner.Plan). done is false when the record does
// not exist.
func (s *Service) retried(ctx context.Context, rctx *fasthttp.RequestCtx, app string, prev store.ReqClaim) (done bool, err error) {
	rec, err := s.st.GetNotification(ctx, app, prev.ObjectID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot read the push record of a retried req_id of app %s: %w", app, err)
	}
	// A record this Service wrote had its append finished (or undone) before the retry got the
	// req_id's lock; one written by another process, maybe dead before its append, is
	// appended again.
	if rec.Status == push.StatusInQueue && rec.PendingJob != nil && rec.PendingBy != s.incarnation {
		if err := s.appendJob(ctx, rec.PendingJob); err != nil {
			return false, err
		}
		s.reappended.Inc()
	}
	s.dupes.Inc()
	writeAccepted(rctx, prev.ObjectID, prev.CreatedAt)
	return true, nil
}

// adopt gives a push the ids of the claim it takes over.
func adopt(n *push.Notification, job *push.Job, claim store.ReqClaim) {
	n.ObjectID = claim.ObjectID
	n.CreatedAt = claim.CreatedAt.UTC()
	n.UpdatedAt = n.CreatedAt
	job.ID = n.ObjectID
	job.NotificationObjectID = n.ObjectID
	job.CreatedAt = n.CreatedAt
}

// MaxPendingScheduled is how many scheduled pushes an app may have waiting: the original
// service's cap for paid apps. It also bounds GET /1.1/scheduledPushMessages.
const MaxPendingScheduled = 1000

func errScheduledCap(n int) error {
	return push.Errorf(push.CodeAppThreshold, "this app has %d scheduled pushes waiting, the most it may have: cancel one or wait until one is sent", n)
}

// checkScheduledCap counts the app's scheduled pushes again once schedule id is written, and
// takes it back when they are over the cap. The lock in persist orders this process's
// calls only: two API nodes can both count one place left and both write. Counting after
// the write settles it through the store: the last write that stays saw every other one that
// stays, so at most the cap stay. A push taken back was racing another for the last places
// and is answered 503 "retry" (both racers may give up; a retry counts afresh and is
// accepted or refused with 154). A crash between the write and this check can leave one
// schedule over the cap.
func (s *Service) checkScheduledCap(ctx context.Context, n *push.Notification, id int64) error {
	app := n.AppID
	pending, err := s.st.ListScheduled(ctx, app)
	if err != nil {
		return fmt.Errorf("cannot count the scheduled pushes of app %s: %w", app, err)
	}
	if len(pending) <= s.maxScheduled {
		return nil
	}
	switch err := s.st.DeleteScheduled(ctx, app, id); {
	case errors.Is(err, store.ErrNotFound):
		return nil // fired meanwhile: it was sent, so it is accepted
	case err != nil:
		return fmt.Errorf("cannot take back scheduled push %d of app %s over the cap: %w", id, app, err)
	}
	if err := s.st.DeleteNotification(ctx, app, n.ObjectID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot remove the record of scheduled push %d of app %s over the cap: %w", id, app, err)
	}
	return push.Errorf(push.CodeUnavailable, "other scheduled pushes of this app were accepted at the same time for its last places: retry")
}

// persist writes the record holding the job and appends the job, or writes the record and the
// schedule. A record that exists already (a claim taken over elsewhere) is store.ErrExists;
// fresh says n's objectId was generated by this call (push.NewObjectID), so none can exist.
func (s *Service) persist(ctx context.Context, n *push.Notification, job *push.Job, scheduled, fresh bool) error {
	app := n.AppID
	if scheduled {
		// The app's scheduled pushes are counted and added one at a time in this process, so
		// two at once cannot both take the last place.
		unlock, err := s.reqs.lock(ctx, "scheduled\x00"+app)
		if err != nil {
			return push.Errorf(push.CodeUnavailable, "other scheduled pushes of this app are being accepted: retry")
		}
		defer unlock()
		pending, err := s.st.ListScheduled(ctx, app)
		if err != nil {
			return fmt.Errorf("cannot count the scheduled pushes of app %s: %w", app, err)
		}
		if len(pending) >= s.maxScheduled {
			return errScheduledCap(len(pending))
		}
		if s.afterScheduledCount != nil {
			s.afterScheduledCount()
		}
		id, err := s.st.NextID(ctx, "scheduled")
		if err != nil {
			return fmt.Errorf("cannot number a scheduled push of app %s: %w", app, err)
		}
		n.Status = push.StatusScheduled
		n.ScheduledID = id
		sp := push.Scheduled{ID: id, AppID: app, DueAt: n.PushTime, Job: *job, CreatedAt: n.CreatedAt}
		if err := s.st.CreateScheduledNotification(ctx, *n, sp); err != nil {
			return fmt.Errorf("cannot store scheduled push of app %s: %w", app, err)
		}
		fpAfterRecord.Hit()
		return s.checkScheduledCap(ctx, n, id)
	}
	n.Status = push.StatusInQueue
	pj := *job
	n.PendingJob, n.PendingBy = &pj, s.incarnation
	// The record needs no fsync of its own when the job's synced append covers it
	// (RecordNoSyncer): lost with the append, it leaves a claim without a record, which a
	// retry takes over.
	var err error
	switch {
	case s.noSync != nil && s.jobSyncsStore && fresh:
		err = s.noSync.CreateNewNotificationNoSync(ctx, *n)
	case s.noSync != nil && s.jobSyncsStore:
		err = s.noSync.CreateNotificationNoSync(ctx, *n)
	default:
		err = s.st.CreateNotification(ctx, *n)
	}
	if err != nil {
		return fmt.Errorf("cannot store push record of app %s: %w", app, err)
	}
	fpAfterRecord.Hit()
	if err := s.appendJob(ctx, job); err != nil {
		undo, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if derr := s.st.DeleteNotification(undo, app, n.ObjectID); derr != nil && !errors.Is(derr, store.ErrNotFound) {
			s.zl.Warn("cannot remove the record of a push that failed", zap.String("app_id", app), zap.Error(derr))
		}
		return err
	}
	fpAfterJob.Hit()
	return nil
}

// jobRecord is job as the jobs topic carries it: keyed, and so partitioned, by its app.
func (s *Service) jobRecord(job *push.Job) (queue.Record, error) {
	body, err := pushjson.AppendJob(nil, job)
	if err != nil {
		return queue.Record{}, fmt.Errorf("BUG: cannot encode job: %w", err)
	}
	return queue.Record{
		Partition: queue.PartitionForKey([]byte(job.AppID), s.log.Partitions(queue.TopicJobs)),
		Key:       []byte(job.AppID),
		Value:     body,
	}, nil
}

func (s *Service) appendJob(ctx context.Context, job *push.Job) error {
	rec, err := s.jobRecord(job)
	if err != nil {
		return err
	}
	if err := s.log.Append(ctx, queue.TopicJobs, rec); err != nil {
		return fmt.Errorf("cannot append the job of app %s to the log: %w", job.AppID, err)
	}
	return nil
}

func writeAccepted(ctx *fasthttp.RequestCtx, objectID string, createdAt time.Time) {
	api.WriteJSON(ctx, fasthttp.StatusOK, appendAccepted(make([]byte, 0, 80), objectID, createdAt))
}

// appendAccepted appends {"objectId":...,"createdAt":...} as encoding/json writes it.
func appendAccepted(b []byte, objectID string, createdAt time.Time) []byte {
	for i := 0; i < len(objectID); i++ {
		if c := objectID[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(struct {
				ObjectID  string `json:"objectId"`
				CreatedAt string `json:"createdAt"`
			}{objectID, push.FormatTime(createdAt)})
			return append(b, q...)
		}
	}
	b = append(b, `{"objectId":"`...)
	b = append(b, objectID...)
	b = append(b, `","createdAt":"`...)
	b = push.AppendTime(b, createdAt) // digits and -:.TZ only
	return append(b, `"}`...)
}

// ParseHybridCredentials checks a vendor's credentials as uploaded: a JSON object of named
// configurations (`_default` and any deviceProfile names), each a non-empty object.
func ParseHybridCredentials(raw []byte) error {
	var profiles map[string]json.RawMessage
	if err := json.Unmarshal(raw, &profiles); err != nil || profiles == nil {
		return errors.New("hybrid push credentials must be a JSON object of named configurations, e.g. {\"_default\": {...}}")
	}
	for name, cfg := range profiles {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cfg, &obj) != nil || len(obj) == 0 {
			return fmt.Errorf("hybrid push configuration %q must be a non-empty JSON object", name)
		}
		if name != push.DefaultProfile && (name == "" || !push.ValidProfile(name)) {
			return fmt.Errorf("hybrid push configuration name %q must start with a letter and hold only letters, digits and underscores", name)
		}
	}
	return nil
}
