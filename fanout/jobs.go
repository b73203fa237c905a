package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store"
)

// jobState is what every task of one job shares on a worker: the app's settings, the parsed
// (and resolved) where, and the rendered messages. Immutable once built, but for the
// messages, each rendered on its channel's first target (message): a push that reaches
// nobody, or only iOS devices, renders nothing, or one payload, instead of ten.
type jobState struct {
	app     push.App
	buckets int
	q       *query.Query // nil for devices jobs
	hints   query.Hints

	render  Messages             // the job's renderer, for message
	once    [nChannels]sync.Once // each channel's message is rendered once
	msgs    [nChannels]*push.Message
	msgErrs [nChannels]string       // why a channel's message could not be rendered
	msgOut  [nChannels]push.Outcome // and how its targets end: failed, or expired
	// badge is the APNs payload template of a push whose badge is "Increment": each iOS
	// target gets its own payload (see badges.go). nil for every other push. Set with the
	// APNs message (message).
	badge *render.Badged
	// policy is the push's channel policy for hybrid Android installations (push/policy.go):
	// its channel_policy, else the app's, else push.PolicyVendor.
	policy string
	// class is the push's message class (push.MessageClassOf); marketing is the class the
	// app's marketing rules apply to (class.go).
	class string
}

// buildJob reads the app, parses and resolves the where, and renders the messages.
func (w *Worker) buildJob(ctx context.Context, job *push.Job) (*jobState, error) {
	app, err := w.st.GetApp(ctx, job.AppID)
	if err != nil {
		return nil, fmt.Errorf("cannot read app %s of job %s: %w", job.AppID, job.ID, err)
	}
	js := &jobState{app: app, buckets: app.Settings.Buckets, policy: channelPolicy(job, &app), class: push.MessageClassOf(job, &app)}
	if js.buckets <= 0 {
		js.buckets = push.DefaultBuckets
	}
	if job.Kind != push.JobDevices {
		q, err := jobQuery(ctx, w.st, job, js.buckets)
		if err != nil {
			return nil, err
		}
		js.q = q
		js.hints = q.Hints()
	}
	classed := *job // rendered as its resolved class: the vendors' classification fields
	classed.MessageClass = js.class
	js.render = w.newMessages(&classed)
	return js, nil
}

// message is the job's message on channel ci, rendered on first use; nil when the channel has
// none, msgOut[ci] and msgErrs[ci] then say how its targets end and why.
func (js *jobState) message(ci uint8) *push.Message {
	js.once[ci].Do(func() {
		ch := channelNames[ci]
		// A vendor of the other edition (an installation stored before its app changed
		// edition) fails with the reason rather than reaching that vendor.
		if ed := js.app.Settings.Edition; !ed.HasChannel(ch) {
			js.msgErrs[ci] = ed.NotInEdition(ch)
			js.msgOut[ci] = push.OutcomeFailed
			return
		}
		m, err := js.render.Get(ch)
		if err != nil {
			js.msgErrs[ci] = err.Error()
			js.msgOut[ci] = push.OutcomeFailed
			if errors.Is(err, render.ErrExpired) {
				js.msgOut[ci] = push.OutcomeExpired
			}
			return
		}
		js.msgs[ci] = m
		if bm, ok := js.render.(badgedMessages); ok && ci == apnsIndex {
			js.badge = bm.Badged()
		}
	})
	return js.msgs[ci]
}

// badged is the per-target APNs template of a push whose badge is "Increment" (nil for any
// other push, or one whose APNs message cannot be rendered).
func (js *jobState) badged() *render.Badged {
	js.message(apnsIndex)
	return js.badge
}

// jobQuery parses a query job's where at the job's query time and resolves its sub-queries
// over the app's buckets (a worker's and a dry run's query).
func jobQuery(ctx context.Context, st Scanner, job *push.Job, buckets int) (*query.Query, error) {
	q, err := query.ParseAt(job.Where, job.QueryTime())
	if err != nil {
		return nil, fmt.Errorf("cannot parse where of job %s: %w", job.ID, err)
	}
	if q.NeedsResolve() {
		if err := q.Resolve(ctx, resolver(st, job.AppID, buckets)); err != nil {
			return nil, fmt.Errorf("cannot resolve sub-queries of job %s: %w", job.ID, err)
		}
	}
	return q, nil
}

// resolver runs a sub-query over an app's installations (every bucket, by_channel when the
// sub-query pins a channel) and hands each match, fully decoded, to visit.
func resolver(s Scanner, appID string, buckets int) func(context.Context, *query.Query, func(query.Doc) error) error {
	return func(ctx context.Context, sub *query.Query, visit func(query.Doc) error) error {
		h := sub.Hints()
		channel := ""
		if len(h.Channels) > 0 {
			channel = h.Channels[0]
		}
		for b := 0; b < buckets; b++ {
			r := store.ScanRange{AppID: appID, Channel: channel, Bucket: b, DeviceType: h.DeviceType}
			err := s.Scan(ctx, r, func(row *store.Row) error {
				var m map[string]any
				if json.Unmarshal(row.Doc, &m) != nil {
					return nil
				}
				d := query.MapDoc(m)
				if !sub.Match(d) {
					return nil
				}
				return visit(d)
			})
			if err != nil {
				return fmt.Errorf("cannot scan bucket %d of app %s for a sub-query: %w", b, appID, err)
			}
		}
		return nil
	}
}

// jobCache keeps the jobState of recent jobs, built once per job even when several of its
// tasks start together. Bounded: the oldest entry is dropped past max.
type jobCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]*jobEntry
	order []string
}

type jobEntry struct {
	ready chan struct{} // closed once js or err is set
	js    *jobState
	err   error
}

func newJobCache(max int) *jobCache {
	return &jobCache{max: max, m: make(map[string]*jobEntry)}
}

func (c *jobCache) get(ctx context.Context, jobID string, build func() (*jobState, error)) (*jobState, error) {
	c.mu.Lock()
	e, ok := c.m[jobID]
	if !ok {
		e = &jobEntry{ready: make(chan struct{})}
		c.m[jobID] = e
		c.order = append(c.order, jobID)
		if len(c.order) > c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return e.js, e.err
	}
	e.js, e.err = build()
	if e.err != nil {
		// Do not cache a failure: the next task of this job tries again.
		c.mu.Lock()
		if c.m[jobID] == e {
			delete(c.m, jobID)
		}
		c.mu.Unlock()
	}
	close(e.ready)
	return e.js, e.err
}

// channelPolicy is job's channel policy: its channel_policy, else its app's, else vendor.
func channelPolicy(job *push.Job, app *push.App) string {
	switch {
	case job.ChannelPolicy != "":
		return job.ChannelPolicy
	case app.Settings.ChannelPolicy != "":
		return app.Settings.ChannelPolicy
	}
	return push.PolicyVendor
}
