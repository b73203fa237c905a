package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

// deleteRecords moves the log start of a partition to offset, as retention would.
func deleteRecords(t *testing.T, brokers []string, topic string, partition int32, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition = partition
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteRecords: error code %d", code)
	}
}

// TestQueueKafkaCommittedOffsetDeleted: when retention deleted messages past the group's
// committed offset, the partition resumes at the oldest message kept (kafka-go clamps the
// start offset) instead of stalling. The deleted messages are lost to the group.
func TestQueueKafkaCommittedOffsetDeleted(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(t, c)
	ctx := context.Background()
	if err := EnsureTopics(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 10 {
		if err := l.Append(ctx, queuetest.Topic, queue.Record{Partition: 0, Value: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(h queue.Handler) (stop func()) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- l.Consume(cctx, queuetest.Topic, "g", h) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	reached := make(chan struct{})
	var once sync.Once
	stop := run(func(_ context.Context, m queue.Message) error {
		if m.Offset == 3 {
			once.Do(func() { close(reached) })
			return errors.New("stop at 3")
		}
		return nil
	})
	<-reached
	stop()

	deleteRecords(t, c.ListenAddrs(), queuetest.Topic, 0, 6)

	var mu sync.Mutex
	var got []int64
	stop = run(func(_ context.Context, m queue.Message) error {
		mu.Lock()
		got = append(got, m.Offset)
		mu.Unlock()
		return nil
	})
	defer stop()
	waitfor.True(t, 30*time.Second, "offsets 6..9", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 4
	})
	mu.Lock()
	defer mu.Unlock()
	if got[0] != 6 || got[len(got)-1] != 9 {
		t.Fatalf("got offsets %v, want 6..9", got)
	}
}
