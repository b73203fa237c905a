package clustertest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/internal/node"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
)

// fanoutCluster is one cluster of the benchmark: an api node and some fan-out nodes.
type fanoutCluster struct {
	c       *Cluster
	api     *Node
	workers []*Node
	tokens  []string
	took    time.Duration // summed over the timed pushes
}

// newFanoutCluster starts a cluster of workers fan-out nodes running concurrency tasks each
// (0: the default).
func newFanoutCluster(b *testing.B, workers, concurrency, audience int) *fanoutCluster {
	o := Options{}
	if concurrency > 0 {
		o.Configure = func(cfg *node.Config) { cfg.Worker.Concurrency = concurrency }
	}
	fc := &fanoutCluster{c: New(b, o)}
	fc.tokens = fc.c.Seed(audience)
	fc.api = fc.c.Start("api", "api")
	for i := range workers {
		fc.workers = append(fc.workers, fc.c.Start(fmt.Sprintf("w%d", i+1), "fanout"))
	}
	parts := fc.c.opts.Partitions[queue.TopicTasks]
	waitfor.True(b, 60*time.Second, "every fan-out node owning task partitions", func() bool {
		total := 0
		for _, n := range fc.workers {
			o := n.Owned(queue.GroupFanout, queue.TopicTasks)
			if o == 0 {
				return false
			}
			total += o
		}
		return total == parts
	})
	fc.push(b) // warm-up: connections to the simulators, credentials, groups settled
	fc.took = 0
	return fc
}

func (fc *fanoutCluster) push(b *testing.B) {
	start := time.Now()
	status, oid := fc.c.Push(fc.api, `{"where":{},"data":{"alert":"bench"},"prod":"prod"}`)
	if status != http.StatusOK {
		b.Fatalf("push: status %d", status)
	}
	fc.c.WaitDone(oid, 10*time.Minute)
	fc.took += time.Since(start)
}

// BenchmarkClusterFanout pushes to the whole audience through 1, 2 and 3 fan-out nodes (plus
// one api node each; each cluster its own kfake and store) and reports deliveries per second
// of each, and their ratios to one node. A fourth cluster, one node running three nodes' worth
// of tasks at once (3× --fanout-concurrency), is the control: 3 nodes against it is the cost
// of coordination (consumer groups, more clients) with the same task slots. The clusters take
// turns push by push, so that they meet the same moments of a shared machine's load. The
// simulators' ledger is checked (nothing lost, nothing twice). All nodes share the machine's
// cores: no ratio here is a speed-up from more machines.
//
//	CLUSTERTEST_AUDIENCE=100000 go test -run '^$' -bench BenchmarkClusterFanout -benchtime 3x ./internal/clustertest/
func BenchmarkClusterFanout(b *testing.B) {
	audience := Audience(b, 20000)
	wide := 3 * fanout.DefaultWorkerConfig().Concurrency
	clusters := []*fanoutCluster{
		newFanoutCluster(b, 1, 0, audience), newFanoutCluster(b, 2, 0, audience), newFanoutCluster(b, 3, 0, audience),
		newFanoutCluster(b, 1, wide, audience),
	}
	b.ResetTimer()
	for range b.N {
		for _, fc := range clusters {
			fc.push(b)
		}
	}
	b.StopTimer()
	rate := func(fc *fanoutCluster) float64 { return float64(audience*b.N) / fc.took.Seconds() }
	for i, name := range []string{"nodes1", "nodes2", "nodes3", "nodes1wide"} {
		fc := clusters[i]
		b.ReportMetric(rate(fc), name+"-deliveries/s")
		lost, dups := fc.c.Tally(fc.tokens, int64(1+b.N))
		if lost != 0 || dups != 0 {
			b.Errorf("%s, %d tokens × %d pushes: %d lost, %d duplicates", name, audience, 1+b.N, lost, dups)
		}
	}
	b.ReportMetric(rate(clusters[1])/rate(clusters[0]), "ratio-2/1")
	b.ReportMetric(rate(clusters[2])/rate(clusters[0]), "ratio-3/1")
	b.ReportMetric(rate(clusters[2])/rate(clusters[3]), "ratio-3/1wide")
}
