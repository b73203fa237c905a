package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

// BenchmarkKafkaAppend measures synchronous acks=all Appends of one 200-byte record against
// an in-process kfake broker: it shows the client's cost and the effect of BatchTimeout
// (concurrent Appends to a partition share a produce request), not a real cluster's.
func BenchmarkKafkaAppend(b *testing.B) {
	for _, appenders := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			c := newCluster(b)
			cfg := Config{Brokers: c.ListenAddrs(), Partitions: queuetest.Topics, ReplicationFactor: 1}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := EnsureTopics(ctx, cfg); err != nil {
				b.Fatal(err)
			}
			l, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			val := make([]byte, 200)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range appenders {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						r := queue.Record{Partition: int(i) % queuetest.Topics[queuetest.Topic], Value: val}
						if err := l.Append(context.Background(), queuetest.Topic, r); err != nil {
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
