package fanout

import (
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/push"
)

// An app of 100,000 installations (seeded through the store's bulk loader) gets a channel push
// and an arbitrary-where push through the embedded log, the planner and two workers, with
// exact counts at done and every target delivered once.
func TestFanoutEndToEnd100k(t *testing.T) {
	const n = 100_000
	e := newEnv(t)
	e.createApp(push.DefaultBuckets, nil)
	e.seed(push.DefaultBuckets, n)
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 2)
	for _, where := range []string{
		`{"channels":"news"}`,
		`{"deviceType":"android","age":{"$gte":50},"channels":{"$ne":"sports"}}`,
	} {
		t.Run(where, func(t *testing.T) {
			snd.mu.Lock()
			clear(snd.got)
			snd.mu.Unlock()
			want := expected(t, n, where)
			job := e.submit(push.Job{Where: json.RawMessage(where)})
			rec := e.waitDone(job.NotificationObjectID)
			checkCounts(t, rec.Counts, countsOf(want))
			checkDelivered(t, snd, want)
			// The where's source is every installation: the full split. The channel holds a
			// third of them: fewer tasks of at least MinTaskRows each.
			if full := push.DefaultBuckets / DefaultPlannerConfig().BucketsPerTask; rec.Tasks < full/4 || rec.Tasks > full || rec.TasksDone != rec.Tasks {
				t.Errorf("tasks %d done %d", rec.Tasks, rec.TasksDone)
			}
			t.Logf("%s: %d targets", where, rec.Counts.Total().Targets)
		})
	}
}
