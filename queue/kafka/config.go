package kafka

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/queue"
)

// Config configures a Log. Zero durations take the defaults noted.
type Config struct {
	// Brokers are seed broker addresses (host:port).
	Brokers []string
	// Partitions per topic; nil means queue.DefaultPartitions. The topics must exist with these
	// counts (EnsureTopics creates them; deploy/kafka/topics.sh lists them).
	Partitions map[string]int
	// ReplicationFactor used by EnsureTopics (default 3, as CLUSTER.md requires).
	ReplicationFactor int
	// ClientID sent to the brokers (default "pushd").
	ClientID string

	// BatchTimeout is how long a synchronous Append may wait for concurrent Appends to the same
	// partition to share its produce request (default 1ms). kafka-go's own default (1s) would
	// make every single-record Append take a second.
	BatchTimeout time.Duration
	// WriteTimeout bounds one produce request (default 10s).
	WriteTimeout time.Duration

	// Consumer group tuning (kafka-go defaults: heartbeat 3s, session 30s, rebalance 30s,
	// join backoff 5s). Tests shorten them so rebalances settle quickly.
	HeartbeatInterval, SessionTimeout, RebalanceTimeout, JoinGroupBackoff time.Duration
	// MaxWait is how long a fetch waits on the broker for new messages (default 500ms).
	MaxWait time.Duration

	// MinBackoff and MaxBackoff bound the wait before a failed message is handed again
	// (defaults 50ms and 5s).
	MinBackoff, MaxBackoff time.Duration

	// Logger for consumer errors; nil means no logging.
	Logger *zap.Logger
}

// Validate checks the config and fills defaults.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("kafka brokers are not set")
	}
	if c.Partitions == nil {
		c.Partitions = queue.DefaultPartitions
	}
	for t, n := range c.Partitions {
		if t == "" || n <= 0 {
			return fmt.Errorf("topic %q has %d partitions: need a name and at least 1", t, n)
		}
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 3
	}
	if c.ClientID == "" {
		c.ClientID = "pushd"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.BatchTimeout, time.Millisecond)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.HeartbeatInterval, 3*time.Second)
	def(&c.SessionTimeout, 30*time.Second)
	def(&c.RebalanceTimeout, 30*time.Second)
	def(&c.JoinGroupBackoff, 5*time.Second)
	def(&c.MaxWait, 500*time.Millisecond)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}
