package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/segmentio/kafka-go"
)

// EnsureTopics creates the configured topics (Config.Partitions, Config.ReplicationFactor)
// that do not exist yet. An existing topic is left as it is, whatever its partition count.
// deploy/kafka/topics.sh is the same list for operators.
func EnsureTopics(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("cannot create topics: %w", err)
	}
	names := make([]string, 0, len(cfg.Partitions))
	for t := range cfg.Partitions {
		names = append(names, t)
	}
	sort.Strings(names)
	req := &kafka.CreateTopicsRequest{}
	for _, t := range names {
		req.Topics = append(req.Topics, kafka.TopicConfig{
			Topic:             t,
			NumPartitions:     cfg.Partitions[t],
			ReplicationFactor: cfg.ReplicationFactor,
		})
	}
	c := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cfg.WriteTimeout}
	if cfg.Dial != nil {
		tr := &kafka.Transport{ClientID: cfg.ClientID, Dial: cfg.Dial}
		defer tr.CloseIdleConnections()
		c.Transport = tr
	}
	res, err := c.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("cannot create topics %v: %w", names, err)
	}
	for _, t := range names {
		if err := res.Errors[t]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			return fmt.Errorf("cannot create topic %s: %w", t, err)
		}
	}
	return nil
}
