package embedded

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

// BenchmarkEmbeddedAppend measures synced Appends of one 200-byte record by 1 to 64
// concurrent appenders. Pebble's commit pipeline shares one WAL fsync among the synced
// batches waiting for it (group commit), so appends/s grows with concurrency while each
// Append stays durable when it returns.
func BenchmarkEmbeddedAppend(b *testing.B) {
	for _, appenders := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			o := open(b, b.TempDir(), testOptions())
			defer o.close(b)
			val := make([]byte, 200)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range appenders {
				wg.Go(func() {
					ctx := context.Background()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						r := queue.Record{Partition: int(i) % queuetest.Topics[queuetest.Topic], Value: val}
						if err := o.Append(ctx, queuetest.Topic, r); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkEmbeddedAppendBatch measures one synced Append carrying 100 records.
func BenchmarkEmbeddedAppendBatch(b *testing.B) {
	o := open(b, b.TempDir(), testOptions())
	defer o.close(b)
	recs := make([]queue.Record, 100)
	for i := range recs {
		recs[i] = queue.Record{Partition: i % 4, Value: make([]byte, 200)}
	}
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		if err := o.Append(ctx, queuetest.Topic, recs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkEmbeddedConsume measures handing appended messages to a no-op handler (one
// synced offset commit per message) across 4 partitions.
func BenchmarkEmbeddedConsume(b *testing.B) {
	o := open(b, b.TempDir(), testOptions())
	defer o.close(b)
	ctx := context.Background()
	recs := make([]queue.Record, 0, 1000)
	for i := 0; i < b.N; i++ {
		recs = append(recs, queue.Record{Partition: i % 4, Value: make([]byte, 200)})
		if len(recs) == cap(recs) || i == b.N-1 {
			if err := o.Append(ctx, queuetest.Topic, recs...); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	var handled atomic.Int64
	done := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		_ = o.Consume(cctx, queuetest.Topic, "bench", func(context.Context, queue.Message) error {
			if handled.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		})
	}()
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
