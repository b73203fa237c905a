package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store/pebble"
)

// env is a real store in a temp dir with the embedded log in the same Pebble.
type env struct {
	t   testing.TB
	dir string
	st  *pebble.Store
	lg  *embedded.Log
	// pcfg, when set, is the config of the planner start runs (default DefaultPlannerConfig).
	pcfg *PlannerConfig
	// inv, when set, is given to the workers start runs (Worker.SetInvalidator).
	inv TokenInvalidator
	// fs, when set, is the store's file system (default the OS's, in dir).
	fs vfs.FS
}

var testParts = map[string]int{queue.TopicJobs: 2, queue.TopicTasks: 8, queue.TopicDirect: 2}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *env) open() {
	e.t.Helper()
	st, err := pebble.Open(e.dir, pebble.Options{FS: e.fs})
	if err != nil {
		e.t.Fatal(err)
	}
	lg, err := embedded.Open(st.DB(), embedded.Options{Partitions: testParts, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, TrimInterval: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.st, e.lg = st, lg
}

func (e *env) close() {
	if e.lg != nil {
		_ = e.lg.Close()
		_ = e.st.Close()
		e.lg, e.st = nil, nil
	}
}

const testApp = "app1"

func (e *env) createApp(buckets int, mod func(*push.AppSettings)) {
	e.t.Helper()
	s := push.DefaultSettings()
	s.Buckets = buckets
	s.DailyVolume = 0
	if mod != nil {
		mod(&s)
	}
	if err := e.st.CreateApp(context.Background(), push.App{ID: testApp, Name: "test", Settings: s}); err != nil {
		e.t.Fatal(err)
	}
}

// testInst is installation i of the standard test population: even i iOS, odd i Android (every
// fourth of those with a mi registration id); channels "news" for i%3==0, "sports" for i%5==0;
// a custom field "age" = i%100; updated now, except every 89th (inactive); every 97th is
// invalid.
func testInst(i int, now time.Time) push.Installation {
	r, kvs := testFields(i, now)
	doc := make([]byte, 0, 320)
	doc = append(doc, '{')
	for j, kv := range kvs {
		if j > 0 {
			doc = append(doc, ',')
		}
		doc = strconv.AppendQuote(doc, kv.k)
		doc = append(doc, ':')
		switch v := kv.v.(type) {
		case string:
			doc = strconv.AppendQuote(doc, v)
		case float64:
			doc = strconv.AppendFloat(doc, v, 'g', -1, 64)
		case bool:
			doc = strconv.AppendBool(doc, v)
		case []any:
			doc = append(doc, '[')
			for k, c := range v {
				if k > 0 {
					doc = append(doc, ',')
				}
				doc = strconv.AppendQuote(doc, c.(string))
			}
			doc = append(doc, ']')
		}
	}
	doc = append(doc, '}')
	return push.Installation{Route: r, CreatedAt: now.UnixMilli(), Doc: doc}
}

// testDoc is what decoding testInst(i, now).Doc gives, built directly (decoding 100,000
// documents under -race costs seconds); TestFanoutTestDocIsTheDecodedDoc checks they agree.
func testDoc(i int, now time.Time) (push.Route, query.MapDoc) {
	r, kvs := testFields(i, now)
	m := make(query.MapDoc, len(kvs))
	for _, kv := range kvs {
		m[kv.k] = kv.v
	}
	return r, m
}

type testKV struct {
	k string
	v any
}

func testFields(i int, now time.Time) (push.Route, []testKV) {
	oid := "o" + fmt.Sprintf("%07d", i)
	r := push.Route{ObjectID: oid, UpdatedAt: now.UnixMilli()}
	switch {
	case i%2 == 0:
		r.DeviceType = push.DeviceIOS
		r.DeviceToken = fmt.Sprintf("%064x", i)
		r.APNsTopic = "com.example.app"
	case i%8 == 1:
		r.DeviceType = push.DeviceAndroid
		r.InstallationID = "iid-" + strconv.Itoa(i)
		r.RegistrationID = "reg-" + strconv.Itoa(i)
		r.Vendor = "mi"
	default:
		r.DeviceType = push.DeviceAndroid
		r.InstallationID = "iid-" + strconv.Itoa(i)
	}
	if i%97 == 0 {
		r.Invalid = true // valid: false
	}
	if i%89 == 0 {
		r.UpdatedAt = now.Add(-push.InactiveAfter - time.Hour).UnixMilli() // not refreshed for too long
	}
	if i%3 == 0 {
		r.Channels = append(r.Channels, "news")
	}
	if i%5 == 0 {
		r.Channels = append(r.Channels, "sports")
	}
	kvs := make([]testKV, 0, 12)
	kvs = append(kvs, testKV{"objectId", r.ObjectID}, testKV{"deviceType", r.DeviceType}, testKV{"age", float64(i % 100)},
		testKV{"createdAt", now.UTC().Format(push.TimeLayout)}, testKV{"updatedAt", time.UnixMilli(r.UpdatedAt).UTC().Format(push.TimeLayout)})
	if r.Invalid {
		kvs = append(kvs, testKV{"valid", false})
	}
	if r.DeviceToken != "" {
		kvs = append(kvs, testKV{"deviceToken", r.DeviceToken}, testKV{"apnsTopic", r.APNsTopic})
	}
	if r.InstallationID != "" {
		kvs = append(kvs, testKV{"installationId", r.InstallationID})
	}
	if r.RegistrationID != "" {
		kvs = append(kvs, testKV{"registrationId", r.RegistrationID}, testKV{"vendor", r.Vendor})
	}
	if len(r.Channels) > 0 {
		chans := make([]any, len(r.Channels))
		for j, c := range r.Channels {
			chans[j] = c
		}
		kvs = append(kvs, testKV{"channels", chans})
	}
	return r, kvs
}

func (e *env) seed(buckets, n int) {
	e.t.Helper()
	now := time.Now()
	insts := make([]push.Installation, 0, min(n, 50000))
	for i := 0; i < n; i++ {
		insts = append(insts, testInst(i, now))
		if len(insts) == cap(insts) || i == n-1 {
			if err := e.st.SeedInstallations(testApp, buckets, insts); err != nil {
				e.t.Fatal(err)
			}
			insts = insts[:0]
		}
	}
}

var jobSeq int

// submit creates the push record and appends the job, as the API does.
func (e *env) submit(job push.Job) push.Job {
	e.t.Helper()
	return e.submitTo(e.lg, job)
}

func (e *env) submitTo(lg Appender, job push.Job) push.Job {
	e.t.Helper()
	jobSeq++
	if job.ID == "" {
		job.ID = fmt.Sprintf("job%d", jobSeq)
	}
	job.AppID = testApp
	if job.NotificationObjectID == "" {
		job.NotificationObjectID = "n-" + job.ID
	}
	if job.Kind == "" {
		job.Kind = push.JobQuery
	}
	if job.Data == nil {
		job.Data = json.RawMessage(`{"alert":"hello"}`)
	}
	if job.Prod == "" {
		job.Prod = "prod"
	}
	job.CreatedAt = time.Now()
	ctx := context.Background()
	n := push.Notification{ObjectID: job.NotificationObjectID, AppID: testApp, NotificationID: job.ID, JobID: job.ID,
		Status: push.StatusInQueue, CreatedAt: job.CreatedAt, UpdatedAt: job.CreatedAt, Kind: job.Kind, Data: job.Data, Prod: job.Prod}
	if err := e.st.CreateNotification(ctx, n); err != nil {
		e.t.Fatal(err)
	}
	v, _ := json.Marshal(job)
	if err := lg.Append(ctx, queue.TopicJobs, queue.Record{Partition: queue.PartitionForKey([]byte(testApp), lg.Partitions(queue.TopicJobs)), Key: []byte(testApp), Value: v}); err != nil {
		e.t.Fatal(err)
	}
	return job
}

func (e *env) record(objectID string) push.Notification {
	e.t.Helper()
	n, err := e.st.GetNotification(context.Background(), testApp, objectID)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) waitDone(objectID string) push.Notification {
	e.t.Helper()
	var n push.Notification
	waitfor.True(e.t, 60*time.Second, "push "+objectID+" done", func() bool {
		var err error
		n, err = e.st.GetNotification(context.Background(), testApp, objectID)
		return err == nil && n.Status == push.StatusDone
	})
	return n
}

// roles runs a planner and workers until the test ends.
type roles struct {
	cancel context.CancelFunc
	g      *errgroup.Group
	ms     *metrics.Set
	wms    []*metrics.Set
}

func (e *env) start(wcfg WorkerConfig, snd Sender, workers int) *roles {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	ms := metrics.NewSet()
	pcfg := DefaultPlannerConfig()
	if e.pcfg != nil {
		pcfg = *e.pcfg
	}
	p, err := NewPlanner(pcfg, e.st, e.lg, zap.NewNop(), ms)
	if err != nil {
		e.t.Fatal(err)
	}
	r := &roles{cancel: cancel, g: g, ms: ms}
	for i := 0; i < workers; i++ {
		wms := metrics.NewSet()
		w, err := NewWorker(wcfg, e.st, e.lg, snd, zap.NewNop(), wms)
		if err != nil {
			e.t.Fatal(err)
		}
		if e.inv != nil {
			w.SetInvalidator(e.inv)
		}
		if i == 0 {
			p.SetRunner(w) // as internal/node wires them: a job of one task runs in the planner
		}
		r.wms = append(r.wms, wms)
		g.Go(func() error { return w.Run(ctx) })
	}
	g.Go(func() error { return p.Run(ctx) })
	e.t.Cleanup(r.stop)
	return r
}

func (r *roles) stop() {
	r.cancel()
	if err := r.g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		panic(err)
	}
}

// recSender records every delivery it is handed, by object id (or device id when the target
// has no installation), and answers with outcome (default: sent).
type recSender struct {
	mu      sync.Mutex
	got     map[string]int
	ds      []push.Delivery
	keep    bool
	outcome func(*push.Delivery) push.Result
	hook    func(n int) // called under no lock before answering, with the batch size
}

func newRecSender() *recSender { return &recSender{got: make(map[string]int)} }

func (s *recSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	if s.hook != nil {
		s.hook(len(ds))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range ds {
		id := ds[i].Target.ObjectID
		if id == "" {
			id = ds[i].Target.DeviceID
		}
		s.got[id]++
		if s.keep {
			s.ds = append(s.ds, ds[i])
		}
		res[i] = push.Result{Outcome: push.OutcomeSent}
		if s.outcome != nil {
			res[i] = s.outcome(&ds[i])
		}
	}
	return nil
}

func (s *recSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.got {
		n += c
	}
	return n
}

func (s *recSender) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// fakeClock advances only when slept on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.slept += d
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
