package fanout

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// pushSender answers every delivery (sent, or outcome's answer) and counts what it was handed
// per push record.
type pushSender struct {
	mu      sync.Mutex
	perPush map[string]int // record objectId → deliveries
	sent    map[string]int // record objectId → answered sent
	outcome func(*push.Delivery) push.Outcome
}

func newPushSender() *pushSender {
	return &pushSender{perPush: map[string]int{}, sent: map[string]int{}}
}

func (s *pushSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range ds {
		o := push.OutcomeSent
		if s.outcome != nil {
			o = s.outcome(&ds[i])
		}
		res[i] = push.Result{Outcome: o}
		s.perPush[ds[i].NotificationObjectID]++
		if o == push.OutcomeSent {
			s.sent[ds[i].NotificationObjectID]++
		}
	}
	return nil
}

func (s *pushSender) counts(oid string) (handed, sent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perPush[oid], s.sent[oid]
}

// volumeRun seeds n installations, runs `pushes` pushes to all of them at once on two workers
// of four tasks each, and returns the records, the sender, and the day's volume when all are
// done.
func volumeRun(t *testing.T, limit int64, n, pushes int, cfg WorkerConfig, snd *pushSender) ([]push.Notification, int64) {
	t.Helper()
	e := newEnv(t)
	e.createApp(64, func(s *push.AppSettings) { s.DailyVolume = limit })
	e.seed(64, n)
	e.start(cfg, snd, 2)
	jobs := make([]push.Job, pushes)
	for i := range jobs {
		jobs[i] = e.submit(push.Job{})
	}
	recs := make([]push.Notification, pushes)
	for i, j := range jobs {
		recs[i] = e.waitDone(j.NotificationObjectID)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	v, err := e.st.DailyVolume(context.Background(), testApp, day)
	if err != nil {
		t.Fatal(err)
	}
	return recs, v
}

// checkVolumeRecords checks each record against the sender: every target counted once, sent
// as the sender answered, the rest failed for the daily volume (and only then stopped). It
// returns how many targets the sender was handed: what the daily volume counts.
func checkVolumeRecords(t *testing.T, recs []push.Notification, snd *pushSender, targets int) (handedTotal int64) {
	t.Helper()
	for _, rec := range recs {
		tot := rec.Counts.Total()
		handed, sent := snd.counts(rec.ObjectID)
		if tot.Targets != int64(targets) || tot.Sent != int64(sent) || tot.Sent+tot.InvalidTokens != int64(handed) ||
			tot.Sent+tot.InvalidTokens+tot.Failed != int64(targets) {
			t.Errorf("push %s: counts %+v; the sender was handed %d and answered %d sent, of %d targets",
				rec.ObjectID, tot, handed, sent, targets)
		}
		cut := tot.Failed > 0
		if stopped := rec.Stopped == ReasonDailyVolume; stopped != cut {
			t.Errorf("push %s: stopped %q with %d targets failed", rec.ObjectID, rec.Stopped, tot.Failed)
		}
		handedTotal += int64(handed)
	}
	return handedTotal
}

// The first case: a limit of 100 and five pushes of a handful of devices, all at once.
// Each push must reach every device: the day never runs out. (Reserving 4,096 per task, the
// first task took the whole day's volume and the others stopped their pushes.)
func TestFanoutDailyVolumeSmallPushesAllSent(t *testing.T) {
	const n, pushes = 6, 5
	targets := len(expected(t, n, `{}`))
	snd := newPushSender()
	cfg := DefaultWorkerConfig()
	recs, day := volumeRun(t, 100, n, pushes, cfg, snd)
	sent := checkVolumeRecords(t, recs, snd, targets)
	if want := int64(pushes * targets); sent != want || day != want {
		t.Errorf("sent %d, day's volume %d; want both %d (no push may be cut below the limit)", sent, day, want)
	}
}

// The second case, and larger: the limit is below what the pushes want. Several pushes
// of eight tasks each run on two workers at once; together they send exactly the limit, the
// day's volume says exactly that, and each record's sent count is what its push sent. A target
// answered invalid was handed to the gateway: it uses the volume as a sent one does.
func TestFanoutDailyVolumeExactUnderContention(t *testing.T) {
	for _, c := range []struct {
		name           string
		limit          int64
		n, pushes, bsz int
		invalid        bool
	}{
		{name: "limit 12, five pushes of 5", limit: 12, n: 6, pushes: 5, bsz: 256},
		{name: "limit 1000, four pushes of 1.9k", limit: 1000, n: 2000, pushes: 4, bsz: 16},
		{name: "limit 700 with invalid tokens", limit: 700, n: 1000, pushes: 3, bsz: 8, invalid: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			targets := len(expected(t, c.n, `{}`))
			if int64(c.pushes*targets) <= c.limit {
				t.Fatalf("BUG: %d pushes of %d targets do not reach the limit %d", c.pushes, targets, c.limit)
			}
			snd := newPushSender()
			if c.invalid {
				snd.outcome = func(d *push.Delivery) push.Outcome {
					if strings.HasSuffix(d.Target.ObjectID, "3") {
						return push.OutcomeInvalidToken
					}
					return push.OutcomeSent
				}
			}
			cfg := DefaultWorkerConfig()
			cfg.BatchSize = c.bsz
			cfg.CheckpointEvery = c.bsz
			recs, day := volumeRun(t, c.limit, c.n, c.pushes, cfg, snd)
			handed := checkVolumeRecords(t, recs, snd, targets)
			if handed != c.limit || day != c.limit {
				t.Errorf("handed to the gateway %d, day's volume %d; want both the limit %d", handed, day, c.limit)
			}
			var parts []string
			for _, r := range recs {
				parts = append(parts, fmt.Sprint(r.Counts.Total().Sent))
			}
			t.Logf("sent per push: %s of %d targets each", strings.Join(parts, ", "), targets)
		})
	}
}
