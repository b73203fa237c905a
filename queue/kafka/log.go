// Package kafka owns the cluster-mode queue.Log over Kafka (github.com/segmentio/kafka-go).
//
// Append is one synchronous kafka-go Writer call with RequiredAcks=all; every record goes to
// the partition the producer chose (Record.Partition) through a balancer that returns it.
//
// Consume joins a Kafka consumer group through kafka-go's ConsumerGroup/Generation API (not a
// Reader with GroupID, which serializes all partitions of a member in one fetch loop): for
// every partition assigned to this member in a generation it starts one goroutine with its own
// partition Reader at the committed offset. That goroutine calls FetchMessage, hands the
// message to the handler (retrying it with backoff while the handler fails) and commits the
// next offset with the generation (OffsetCommit) before fetching the next message. A
// rebalance ends the generation: the partition goroutines stop (their handlers see ctx
// cancelled), uncommitted messages are handed to the partition's next owner. Delivery is at
// least once; offsets are committed synchronously, one per handled message.
//
// All methods are safe for concurrent use.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/internal/backoff"
)

// ErrClosed is returned by Append and Consume after Close.
var ErrClosed = errors.New("queue log is closed")

// Log is the Kafka queue.Log.
type Log struct {
	cfg   Config
	w     *kafka.Writer
	log   *zap.Logger
	retry backoff.Policy

	mu     sync.Mutex // guards closed and wg.Add
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// New validates cfg and builds the writer. It does not contact the brokers.
func New(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cannot configure the kafka log: %w", err)
	}
	l := &Log{
		cfg:   cfg,
		log:   cfg.Logger.Named("queue"),
		retry: backoff.Policy{Min: cfg.MinBackoff, Max: cfg.MaxBackoff},
		done:  make(chan struct{}),
	}
	l.w = &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Balancer:     producerChosen{},
		RequiredAcks: kafka.RequireAll,
		Async:        false,
		BatchTimeout: cfg.BatchTimeout,
		BatchSize:    1000,
		WriteTimeout: cfg.WriteTimeout,
		Transport:    &kafka.Transport{ClientID: cfg.ClientID, Dial: cfg.Dial},
	}
	return l, nil
}

// producerChosen is the Writer's balancer: the partition is the one Append put in the
// message (Record.Partition), never a hash the writer computes.
type producerChosen struct{}

func (producerChosen) Balance(m kafka.Message, _ ...int) int { return m.Partition }

// Partitions returns the configured partition count of topic, 0 for an unknown topic.
func (l *Log) Partitions(topic string) int { return l.cfg.Partitions[topic] }

// Append produces recs synchronously with acks from all in-sync replicas; when it returns nil
// every record is committed to the Kafka log. On error some records may have been written
// (kafka-go has no idempotent producer): callers retry and consumers de-duplicate by id.
func (l *Log) Append(ctx context.Context, topic string, recs ...queue.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if l.isClosed() {
		return fmt.Errorf("cannot append to topic %s: %w", topic, ErrClosed)
	}
	n := l.Partitions(topic)
	if n == 0 {
		return fmt.Errorf("cannot append to unknown topic %s", topic)
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		if r.Partition < 0 || r.Partition >= n {
			return fmt.Errorf("cannot append to partition %d of topic %s: it has %d partitions", r.Partition, topic, n)
		}
		msgs[i] = kafka.Message{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
	}
	if err := l.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("cannot append %d records to topic %s: %w", len(recs), topic, err)
	}
	return nil
}

func (l *Log) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Close stops every consumer (each leaves its group; Consume returns nil) and closes the
// writer.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	l.wg.Wait()
	if err := l.w.Close(); err != nil {
		return fmt.Errorf("cannot close the kafka writer: %w", err)
	}
	return nil
}
