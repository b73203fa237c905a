package kafka

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/pushd/pushd/queue"
)

// TestQueueKafkaTopicsScript keeps deploy/kafka/topics.sh and queue.DefaultPartitions equal.
func TestQueueKafkaTopicsScript(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kafka/topics.sh")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^create (\S+)\s+(\d+)`).FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		got[m[1]] = n
	}
	if len(got) != len(queue.DefaultPartitions) {
		t.Fatalf("topics.sh creates %v, want %v", got, queue.DefaultPartitions)
	}
	for topic, n := range queue.DefaultPartitions {
		if got[topic] != n {
			t.Errorf("topics.sh: %s has %d partitions, want %d", topic, got[topic], n)
		}
	}
}

// TestQueueKafkaEnsureTopics creates the default topics with their partition counts and is
// idempotent.
func TestQueueKafkaEnsureTopics(t *testing.T) {
	c := newCluster(t)
	cfg := Config{Brokers: c.ListenAddrs(), ReplicationFactor: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if err := EnsureTopics(ctx, cfg); err != nil {
			t.Fatalf("EnsureTopics: %v", err)
		}
	}
	conn, err := kafkago.DialContext(ctx, "tcp", c.ListenAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for topic, n := range queue.DefaultPartitions {
		parts, err := conn.ReadPartitions(topic)
		if err != nil {
			t.Fatalf("ReadPartitions(%s): %v", topic, err)
		}
		if len(parts) != n {
			t.Errorf("%s has %d partitions, want %d", topic, len(parts), n)
		}
	}
}
