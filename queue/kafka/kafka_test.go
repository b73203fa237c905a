package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zaptest"

	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

var _ queue.Log = (*Log)(nil)

// newCluster starts an in-process kfake broker on loopback.
func newCluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("kfake.NewCluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func testConfig(t testing.TB, c *kfake.Cluster) Config {
	return Config{
		Brokers:           c.ListenAddrs(),
		Partitions:        queuetest.Topics,
		ReplicationFactor: 1,
		HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout:    2 * time.Second,
		RebalanceTimeout:  2 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		MaxWait:           100 * time.Millisecond,
		MinBackoff:        time.Millisecond,
		MaxBackoff:        10 * time.Millisecond,
		Logger:            zaptest.NewLogger(t),
	}
}

func newLog(t *testing.T) queue.Log {
	c := newCluster(t)
	cfg := testConfig(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := EnsureTopics(ctx, cfg); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	var cur *Log
	var openIt func() queue.Log
	openIt = func() queue.Log {
		l, err := New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		cur = l
		return queuetest.With(l, queuetest.Hooks{
			Reopen: func(t *testing.T) queue.Log {
				if err := cur.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				return openIt()
			},
			Trim: func(t *testing.T) {
				// Retention: delete every partition up to its end (offset -1).
				for p := range queuetest.Topics[queuetest.Topic] {
					deleteRecords(t, c.ListenAddrs(), queuetest.Topic, int32(p), -1)
				}
			},
		})
	}
	l := openIt()
	t.Cleanup(func() { _ = cur.Close() })
	return l
}

func TestQueueKafkaContract(t *testing.T) {
	queuetest.Run(t, newLog)
}
