package fanout

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/push"
)

// BenchmarkFanoutSmallPush is what fan-out costs per push for an app of 300 installations
// (256 buckets) and a where that matches none of them, as in the intake load test: plan
// (count, record update, task append) and run every task (progress, record check, scan,
// completion). "split" is the plan of 32 tasks, "one" the plan sized by MinTaskRows, its task
// handed to a worker, "inline" the same task run by the planner itself (the default wiring),
// "nobody" a push to a channel nobody is in (the source counted empty: no task).
// cpu-µs/push is the process's CPU (the test's synced writes make ns/op mostly fsync waits).
func BenchmarkFanoutSmallPush(b *testing.B) {
	for _, c := range []struct {
		name    string
		minRows int
		inline  bool
		where   string
	}{
		{"split", 0, false, `{"age":{"$gt":1000}}`}, {"one", 2000, false, `{"age":{"$gt":1000}}`},
		{"inline", 2000, true, `{"age":{"$gt":1000}}`}, {"nobody", 2000, true, `{"channels":"nobody"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			e.createApp(push.DefaultBuckets, nil)
			e.seed(push.DefaultBuckets, 300)
			pcfg := DefaultPlannerConfig()
			pcfg.MinTaskRows = c.minRows
			p, err := NewPlanner(pcfg, e.st, e.lg, zap.NewNop(), metrics.NewSet())
			if err != nil {
				b.Fatal(err)
			}
			w := e.worker(DefaultWorkerConfig(), newRecSender())
			if c.inline {
				p.SetRunner(w)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := procstat.CPU(b)
			for range b.N {
				job := e.submitRecordOnly(push.Job{Where: json.RawMessage(c.where)})
				if err := p.Plan(ctx, &job); err != nil {
					b.Fatal(err)
				}
				if !c.inline {
					tp, err := splitPlan(pcfg, &job, push.DefaultBuckets)
					if err != nil {
						b.Fatal(err)
					}
					tasks := tp.tasks(&job, e.record(job.NotificationObjectID).Tasks)
					for i := range tasks {
						if err := w.RunTask(ctx, &tasks[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
				if r := e.record(job.NotificationObjectID); r.Status != push.StatusDone {
					b.Fatalf("status %s after every task ran", r.Status)
				}
			}
			b.ReportMetric(float64((procstat.CPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/push")
		})
	}
}
