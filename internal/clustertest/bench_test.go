package clustertest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
)

// BenchmarkClusterFanout pushes to the whole audience through 1, 2 and 3 fan-out nodes
// (plus one api node) sharing one kfake cluster and one store, and reports deliveries per
// second, checked against the simulators' ledger (nothing lost). All nodes share the
// machine's cores: on a small machine the ratio between the node counts shows the cost of
// coordination (consumer groups, more clients), not a speed-up.
//
//	CLUSTERTEST_AUDIENCE=100000 go test -run '^$' -bench BenchmarkClusterFanout -benchtime 1x ./internal/clustertest/
func BenchmarkClusterFanout(b *testing.B) {
	audience := Audience(b, 20000)
	for _, workers := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", workers), func(b *testing.B) {
			c := New(b, Options{})
			tokens := c.Seed(audience)
			api := c.Start("api", "api")
			var nodes []*Node
			for i := range workers {
				nodes = append(nodes, c.Start(fmt.Sprintf("w%d", i+1), "fanout"))
			}
			parts := c.opts.Partitions[queue.TopicTasks]
			waitfor.True(b, 60*time.Second, "every fan-out node owning task partitions", func() bool {
				total := 0
				for _, n := range nodes {
					o := n.Owned(queue.GroupFanout, queue.TopicTasks)
					if o == 0 {
						return false
					}
					total += o
				}
				return total == parts
			})
			push := func() {
				status, oid := c.Push(api, `{"where":{},"data":{"alert":"bench"},"prod":"prod"}`)
				if status != http.StatusOK {
					b.Fatalf("push: status %d", status)
				}
				c.WaitDone(oid, 10*time.Minute)
			}
			push() // warm-up: connections to the simulators, credentials, group settled
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				push()
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(audience*b.N)/elapsed.Seconds(), "deliveries/s")
			lost, dups := c.Tally(tokens, int64(1+b.N))
			if lost != 0 || dups != 0 {
				b.Errorf("%d tokens × %d pushes: %d lost, %d duplicates", audience, 1+b.N, lost, dups)
			}
		})
	}
}
