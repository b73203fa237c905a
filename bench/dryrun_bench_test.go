package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/push"
)

// BenchmarkDryRun is the audience count of a dry run (fanout.Audience, what POST /1.1/push
// with "dry_run": true costs beyond the checks): one goroutine, as an API call runs it, over
// the seeded app. "all" reads every row; "channel" reads the by_channel index of a fifth of
// them; "doc" reads every row and decodes a field only the JSON document has. rows/s says how
// large an app --dry-run-timeout (default 20 s) allows.
func BenchmarkDryRun(b *testing.B) {
	for _, c := range []struct{ name, where string }{
		{"all", `{}`},
		{"channel", `{"channels":{"$in":["sports"]}}`},
		{"doc", `{"deviceToken":{"$exists":true},"appVersion":{"$gte":"3.10"}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, _, _ := seededStore(b)
			aud, err := fanout.NewAudience(fanout.DefaultPlannerConfig(), st)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var rows, devices int64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				job := push.Job{ID: "dry", AppID: benchApp, Kind: push.JobQuery, Where: json.RawMessage(c.where), CreatedAt: time.Now()}
				a, err := aud.Count(ctx, &job)
				if err != nil {
					b.Fatal(err)
				}
				rows += a.Rows
				devices += a.Channels.Total().Targets
			}
			if devices == 0 {
				b.Fatal("the dry run counted no devices")
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(devices)/float64(b.N), "devices/op")
		})
	}
}
