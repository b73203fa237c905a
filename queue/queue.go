// Package queue owns what every durable-log implementation shares: topic names, the record
// and message types, and (in queue/queuetest) the contract suite. queue/embedded keeps the
// log in the store's Pebble; queue/kafka uses kafka-go. Consumers declare the narrow
// interfaces they call; Log below is the whole contract, used by queuetest and cmd/pushd.
package queue

import (
	"context"
	"hash/fnv"
)

// Topics (CLUSTER.md).
const (
	TopicJobs   = "push.jobs"   // key: app id
	TopicTasks  = "push.tasks"  // key: bucket; partition = bucket mod partitions
	TopicDirect = "push.direct" // key: installationId
)

// Consumer groups.
const (
	GroupPlanner = "pushd-planner"
	GroupFanout  = "pushd-fanout"
	GroupGateway = "pushd-gateway"
)

// DefaultPartitions per topic.
var DefaultPartitions = map[string]int{TopicJobs: 16, TopicTasks: 64, TopicDirect: 64}

// Record is one message to append. Partition is chosen by the producer (see PartitionForKey).
type Record struct {
	Partition int
	Key       []byte
	Value     []byte
}

// Message is one consumed record.
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
}

// Handler processes one message. It is called in offset order within a partition, one message
// at a time per partition, concurrently across partitions. Returning nil commits the message's
// offset; returning an error leaves it uncommitted and the message is handed again (after a
// backoff) until the handler succeeds or the consumer stops.
type Handler func(ctx context.Context, m Message) error

// Log is the whole contract of a log implementation.
type Log interface {
	// Partitions tells how many partitions a topic has.
	Partitions(topic string) int
	// Append writes records durably: when it returns nil every record survives a crash.
	Append(ctx context.Context, topic string, recs ...Record) error
	// Consume joins group on topic and calls h for the messages of the partitions this member
	// owns, starting after the group's committed offset, until ctx is cancelled. Members of one
	// group split the partitions between them; when a member leaves, its partitions move.
	Consume(ctx context.Context, topic, group string, h Handler) error
	Close() error
}

// PartitionForKey is the partition of a key among n partitions (FNV-1a), used for keys that
// are not buckets.
func PartitionForKey(key []byte, n int) int {
	h := fnv.New32a()
	_, _ = h.Write(key)
	return int(h.Sum32() % uint32(n))
}
