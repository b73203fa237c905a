package fanout

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// TestMarketingCapAndQuietHours: an app's marketing rules apply to its marketing pushes on
// every channel, on the worker's (injected) clock in the rules' time zone: each device takes
// dailyCap marketing pushes a day, a further one fails with daily_cap; inside the quiet hours
// every marketing target fails with quiet_hours and nothing is counted; a new day starts the
// counts afresh; system pushes (the default class) are never held. The record counts the held
// targets failed and names the reason.
func TestMarketingCapAndQuietHours(t *testing.T) {
	const buckets, n = 4, 250
	e := newEnv(t)
	e.createApp(buckets, func(s *push.AppSettings) {
		s.Marketing = push.MarketingRules{DailyCap: 2, QuietHours: push.QuietHours{From: "22:00", To: "08:00", TZ: "Asia/Shanghai"}}
	})
	e.seed(buckets, n)
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{now: time.Date(2026, 11, 25, 12, 0, 0, 0, shanghai)} // noon in Shanghai
	wcfg := DefaultWorkerConfig()
	wcfg.BatchSize = 32 // several batches (and store calls) per task
	wcfg.clock = clk
	snd := newRecSender()
	snd.keep = true
	e.start(wcfg, snd, 1)

	// pushOf sends one push and returns its record and the devices the sender got.
	pushOf := func(class string) (push.Notification, []string) {
		t.Helper()
		snd.mu.Lock()
		snd.ds = nil
		snd.mu.Unlock()
		job := e.submit(push.Job{MessageClass: class})
		rec := e.waitDone(job.NotificationObjectID)
		snd.mu.Lock()
		defer snd.mu.Unlock()
		var got []string
		for _, d := range snd.ds {
			got = append(got, d.Target.ObjectID)
		}
		slices.Sort(got)
		return rec, got
	}
	first, sent := pushOf(push.ClassMarketing)
	total := first.Counts.Total()
	if total.Targets == 0 || total.Failed != 0 || len(sent) != int(total.Targets-total.InvalidTokens-total.Failed) {
		t.Fatalf("first marketing push: %+v, %d sent", total, len(sent))
	}
	reached := sent
	if second, sent := pushOf(push.ClassMarketing); !slices.Equal(sent, reached) || second.Counts.Total().Failed != 0 {
		t.Fatalf("second marketing push: %+v, sent %d, want the %d of the first", second.Counts.Total(), len(sent), len(reached))
	}
	third, sent := pushOf(push.ClassMarketing)
	if tt := third.Counts.Total(); len(sent) != 0 || tt.Failed != int64(len(reached)) || !slices.Contains(third.Errors, push.ReasonDailyCap) {
		t.Fatalf("third marketing push: %+v errors %v, sent %d; want every target failed with %s", tt, third.Errors, len(sent), push.ReasonDailyCap)
	}
	// Over APNs, FCM-less Android (own channel) and Xiaomi alike.
	if by := third.Counts; by[push.ChannelAPNs].Failed == 0 || by[push.ChannelDirect].Failed == 0 || by[push.ChannelMi].Failed == 0 {
		t.Fatalf("third marketing push by channel: %+v, want held on apns, direct and mi", by)
	}
	if sys, sent := pushOf(""); !slices.Equal(sent, reached) || sys.Counts.Total().Failed != 0 {
		t.Fatalf("system push after the cap: %+v, sent %d, want %d", sys.Counts.Total(), len(sent), len(reached))
	}

	clk.advance(11 * time.Hour) // 23:00 in Shanghai: quiet
	// (Reached is taken again at each clock reading: the seeded population's inactive rows
	// depend on it.)
	sys, reached := pushOf(push.ClassSystem)
	if len(reached) == 0 || sys.Counts.Total().Failed != 0 {
		t.Fatalf("system push in quiet hours: %+v, sent %d", sys.Counts.Total(), len(reached))
	}
	quiet, sent := pushOf(push.ClassMarketing)
	if qt := quiet.Counts.Total(); len(sent) != 0 || qt.Failed != int64(len(reached)) || !slices.Contains(quiet.Errors, push.ReasonQuietHours) {
		t.Fatalf("marketing push in quiet hours: %+v errors %v, sent %d, want %d failed", qt, quiet.Errors, len(sent), len(reached))
	}

	clk.advance(8 * time.Hour) // 07:00 the next day: a new day, still quiet
	_, reached = pushOf(push.ClassSystem)
	if early, sent := pushOf(push.ClassMarketing); len(sent) != 0 || !slices.Contains(early.Errors, push.ReasonQuietHours) {
		t.Fatalf("marketing push at 07:00: %+v errors %v, sent %d", early.Counts.Total(), early.Errors, len(sent))
	}
	clk.advance(2 * time.Hour) // 09:00: out of the quiet hours
	if next, sent := pushOf(push.ClassMarketing); !slices.Equal(sent, reached) || next.Counts.Total().Failed != 0 {
		t.Fatalf("marketing push the next day: %+v, sent %d, want %d", next.Counts.Total(), len(sent), len(reached))
	}
	// The 07:00 push counted nothing: one more fits the day's cap of 2, then none.
	if _, sent := pushOf(push.ClassMarketing); !slices.Equal(sent, reached) {
		t.Fatalf("second marketing push the next day: sent %d, want %d", len(sent), len(reached))
	}
	if _, sent := pushOf(push.ClassMarketing); len(sent) != 0 {
		t.Fatalf("third marketing push the next day: sent %d, want 0", len(sent))
	}
}

// TestMarketingAppDefaultClass: a push without message_class takes the app's messageClass,
// so the marketing rules hold it; message_class system on the push overrides the app's.
func TestMarketingAppDefaultClass(t *testing.T) {
	const buckets = 2
	e := newEnv(t)
	e.createApp(buckets, func(s *push.AppSettings) {
		s.MessageClass = push.ClassMarketing
		s.Marketing = push.MarketingRules{QuietHours: push.QuietHours{From: "00:00", To: "23:59"}}
	})
	e.seed(buckets, 40)
	wcfg := DefaultWorkerConfig()
	wcfg.clock = &fakeClock{now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	snd := newRecSender()
	r := e.start(wcfg, snd, 1)
	rec := e.waitDone(e.submit(push.Job{}).NotificationObjectID)
	if tt := rec.Counts.Total(); tt.Targets == 0 || tt.Failed != tt.Targets-tt.InvalidTokens || snd.count() != 0 {
		t.Fatalf("push of an app whose default class is marketing, in quiet hours: %+v, %d sent", tt, snd.count())
	}
	if held := r.metric(`pushd_fanout_marketing_held_total{reason="quiet_hours"}`); held != float64(rec.Counts.Total().Failed) {
		t.Errorf("quiet_hours metric %v, want %d", held, rec.Counts.Total().Failed)
	}
	rec = e.waitDone(e.submit(push.Job{MessageClass: push.ClassSystem}).NotificationObjectID)
	if tt := rec.Counts.Total(); tt.Failed != 0 || snd.count() == 0 {
		t.Fatalf("system push: %+v, %d sent", tt, snd.count())
	}
}

// countingStore counts the CountMarketing calls a worker makes and the devices they carry.
type countingStore struct {
	*pebble.Store
	calls, devices atomic.Int64
}

func (s *countingStore) CountMarketing(ctx context.Context, appID, day, pushID string, limit int, devices []string, allowed []bool) error {
	s.calls.Add(1)
	s.devices.Add(int64(len(devices)))
	return s.Store.CountMarketing(ctx, appID, day, pushID, limit, devices, allowed)
}

// TestMarketingOneStoreCallPerBatch: the daily cap costs one store call per batch, never one
// per target.
func TestMarketingOneStoreCallPerBatch(t *testing.T) {
	const buckets = 4
	e := newEnv(t)
	e.createApp(buckets, func(s *push.AppSettings) { s.Marketing = push.MarketingRules{DailyCap: 1} })
	e.seed(buckets, 300)
	cs := &countingStore{Store: e.st}
	wcfg := DefaultWorkerConfig()
	wcfg.BatchSize = 50
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	pl, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	wms := metrics.NewSet()
	w, err := NewWorker(wcfg, cs, e.lg, newRecSender(), zap.NewNop(), wms)
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return pl.Run(ctx) })
	g.Go(func() error { return w.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	})
	rec := e.waitDone(e.submit(push.Job{MessageClass: push.ClassMarketing}).NotificationObjectID)
	tt := rec.Counts.Total()
	batches := int64((&roles{wms: []*metrics.Set{wms}}).metric("pushd_fanout_batches_total"))
	t.Logf("%d calls, %d devices, %d targets, %d batches", cs.calls.Load(), cs.devices.Load(), tt.Targets, batches)
	if held := (&roles{wms: []*metrics.Set{wms}}).metric(`pushd_fanout_marketing_held_total{reason="daily_cap"}`); held != 0 {
		t.Errorf("daily_cap held %v of a first push, want 0", held)
	}
	if cs.devices.Load() != tt.Targets || cs.calls.Load() == 0 || cs.calls.Load() > batches {
		t.Fatalf("%d CountMarketing calls carrying %d devices for %d targets in %d batches; want one call per batch carrying every target",
			cs.calls.Load(), cs.devices.Load(), tt.Targets, batches)
	}
}
