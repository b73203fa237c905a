package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/VictoriaMetrics/metrics"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/internal/backoff"
)

// Consume joins group on topic and hands the messages of the partitions assigned to this
// member to h until ctx is cancelled or the Log is closed; it then leaves the group and
// returns nil once its partition goroutines exited.
func (l *Log) Consume(ctx context.Context, topic, group string, h queue.Handler) error {
	return l.ConsumeAssigned(ctx, topic, group, h, nil)
}

// ConsumeAssigned is Consume that also tells assigned, when not nil, the partitions of topic
// this member owns (ascending) at the start of each generation, before any of their messages
// is handed to h. Between generations the member consumes nothing; a partition missing from
// a generation's list has moved to another member (the gateway role closes its devices).
func (l *Log) ConsumeAssigned(ctx context.Context, topic, group string, h queue.Handler, assigned func(partitions []int)) error {
	if l.Partitions(topic) == 0 {
		return fmt.Errorf("cannot consume unknown topic %s", topic)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("cannot consume topic %s: %w", topic, ErrClosed)
	}
	l.wg.Add(1)
	defer l.wg.Done()
	l.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()

	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                group,
		Brokers:           l.cfg.Brokers,
		Dialer:            l.dialer(),
		Topics:            []string{topic},
		HeartbeatInterval: l.cfg.HeartbeatInterval,
		SessionTimeout:    l.cfg.SessionTimeout,
		RebalanceTimeout:  l.cfg.RebalanceTimeout,
		JoinGroupBackoff:  l.cfg.JoinGroupBackoff,
		StartOffset:       kafka.FirstOffset,
		ErrorLogger:       kafka.LoggerFunc(l.log.Named("group").Sugar().Debugf),
	})
	if err != nil {
		return fmt.Errorf("cannot join group %s on topic %s: %w", group, topic, err)
	}
	// Close leaves the group after the current generation's goroutines exited.
	defer func() { _ = cg.Close() }()

	log := l.log.With(zap.String("topic", topic), zap.String("group", group))
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return nil
			}
			// Join/sync errors: the group loop already backs off before the next attempt.
			log.Warn("cannot join consumer group generation", zap.Error(err))
			continue
		}
		if assigned != nil {
			ids := make([]int, 0, len(gen.Assignments[topic]))
			for _, a := range gen.Assignments[topic] {
				ids = append(ids, a.ID)
			}
			slices.Sort(ids)
			assigned(ids)
		}
		var commitMu sync.Mutex // one OffsetCommit at a time on the generation's connection
		for _, a := range gen.Assignments[topic] {
			gen.Start(func(genCtx context.Context) {
				pctx, pcancel := context.WithCancel(ctx)
				defer pcancel()
				stop := context.AfterFunc(genCtx, pcancel)
				defer stop()
				l.consumePartition(pctx, gen, &commitMu, topic, group, a, h, log.With(zap.Int(telemetry.KeyPartition, a.ID)))
			})
		}
	}
}

func (l *Log) dialer() *kafka.Dialer {
	return &kafka.Dialer{ClientID: l.cfg.ClientID, Timeout: l.cfg.WriteTimeout, DualStack: true, DialFunc: l.cfg.Dial}
}

// consumePartition runs one assigned partition for one generation: fetch, handle (retrying),
// commit, in offset order, until ctx ends (consumer stopped or generation over).
func (l *Log) consumePartition(ctx context.Context, gen *kafka.Generation, commitMu *sync.Mutex,
	topic, group string, a kafka.PartitionAssignment, h queue.Handler, log *zap.Logger) {
	lag := l.lagGauge(group, topic, a.ID)
	defer lag.drop()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   l.cfg.Brokers,
		Dialer:    l.dialer(),
		Topic:     topic,
		Partition: a.ID,
		MinBytes:  1,
		MaxBytes:  10 << 20,
		MaxWait:   l.cfg.MaxWait,
		// kafka-go starts at the log start when the committed offset was deleted by
		// retention; an offset past the end (topic recreated) would be retried forever
		// without this: it is reported and handled below.
		OffsetOutOfRangeError: true,
	})
	defer r.Close()
	if err := r.SetOffset(a.Offset); err != nil {
		log.Warn("cannot set the start offset", zap.Int64(telemetry.KeyOffset, a.Offset), zap.Error(err))
		return
	}
	for {
		km, err := r.FetchMessage(ctx)
		if errors.Is(err, kafka.OffsetOutOfRange) && ctx.Err() == nil {
			// The committed offset is past the partition's end (the topic was recreated):
			// resume at the oldest message rather than stall the partition.
			log.Error("committed offset is past the partition's log; resuming at the oldest message",
				zap.Int64(telemetry.KeyOffset, r.Offset()), zap.Error(err))
			if err := r.SetOffset(kafka.FirstOffset); err != nil {
				return
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("cannot fetch", zap.Error(err))
				// Ending this goroutine ends the generation: the group rejoins and the
				// partition restarts from its committed offset.
			}
			return
		}
		lag.set(km.HighWaterMark - km.Offset) // this message is not handled yet
		m := queue.Message{Topic: km.Topic, Partition: km.Partition, Offset: km.Offset, Key: km.Key, Value: km.Value}
		if err := backoff.Retry(ctx, l.retry, func() error { return h(ctx, m) }, func(attempt int, err error) {
			log.Warn("handler failed; will retry", zap.Int64(telemetry.KeyOffset, m.Offset), zap.Int(telemetry.KeyAttempt, attempt), zap.Error(err))
		}); err != nil {
			return // stopped: the message stays uncommitted
		}
		commit := map[string]map[int]int64{topic: {a.ID: km.Offset + 1}}
		if err := backoff.Retry(ctx, l.retry, func() error {
			commitMu.Lock()
			err := gen.CommitOffsets(commit)
			commitMu.Unlock()
			if isGenerationOver(err) {
				// This member no longer owns the partition: stop; the new owner gets the
				// message again (at least once).
				return backoff.Permanent(err)
			}
			return err
		}, func(attempt int, err error) {
			log.Warn("cannot commit offset", zap.Int64(telemetry.KeyOffset, km.Offset+1), zap.Int(telemetry.KeyAttempt, attempt), zap.Error(err))
		}); err != nil {
			return
		}
		lag.set(km.HighWaterMark - (km.Offset + 1))
	}
}

// partitionLag is the gauge pushd_kafka_consumer_lag{group,topic,partition}: how many messages
// of an owned partition were not handled yet, by the high watermark of the last fetch. It lives
// while this member owns the partition (a rebalance hands it to the new owner's gauge), so the
// sum over the nodes' /metrics is the group's lag; a partition no member owns shows none.
type partitionLag struct {
	ms   *metrics.Set
	name string
	g    *metrics.Gauge
}

func (l *Log) lagGauge(group, topic string, partition int) partitionLag {
	if l.cfg.Metrics == nil {
		return partitionLag{}
	}
	name := fmt.Sprintf(`pushd_kafka_consumer_lag{group=%q,topic=%q,partition="%d"}`, group, topic, partition)
	return partitionLag{ms: l.cfg.Metrics, name: name, g: l.cfg.Metrics.GetOrCreateGauge(name, nil)}
}

func (p partitionLag) set(v int64) {
	if p.g != nil {
		p.g.Set(float64(max(v, 0)))
	}
}

func (p partitionLag) drop() {
	if p.ms != nil {
		p.ms.UnregisterMetric(p.name)
	}
}

// isGenerationOver tells whether a commit failed because the group moved on.
func isGenerationOver(err error) bool {
	return errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.RebalanceInProgress) ||
		errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.ErrGenerationEnded)
}
