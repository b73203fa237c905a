package kafka

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/VictoriaMetrics/metrics"
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
	// Metrics receives the consumer lag gauges (pushd_kafka_consumer_lag); nil means none.
	Metrics *metrics.Set
	// Dial, when set, opens every connection of the Log to the brokers (producer, group
	// coordinator, partition readers) instead of net.Dialer; tests cut a node off with it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Defaults of the consumer group timings (kafka-go's).
const (
	DefaultHeartbeatInterval = 3 * time.Second
	DefaultSessionTimeout    = 30 * time.Second
	DefaultRebalanceTimeout  = 30 * time.Second
)

// RegisterFlags registers the consumer group timings as prefix+"heartbeat-interval",
// prefix+"session-timeout" and prefix+"rebalance-timeout" with their defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.DurationVar(&c.HeartbeatInterval, prefix+"heartbeat-interval", DefaultHeartbeatInterval, "how often a consumer tells the Kafka group coordinator it is alive; at most a third of the session timeout")
	fs.DurationVar(&c.SessionTimeout, prefix+"session-timeout", DefaultSessionTimeout, "how long the Kafka group coordinator waits for a silent consumer before moving its partitions to the others: the stall after a node dies (within the brokers' group.min/max.session.timeout.ms)")
	fs.DurationVar(&c.RebalanceTimeout, prefix+"rebalance-timeout", DefaultRebalanceTimeout, "how long a rebalance waits for every consumer to rejoin the group")
}

// ValidateTimings refuses consumer group timings that cannot work: each positive, and a
// heartbeat that fits three times in the session (Kafka's rule of thumb: one lost heartbeat
// must not end the session).
func (c Config) ValidateTimings() error {
	if c.HeartbeatInterval <= 0 || c.SessionTimeout <= 0 || c.RebalanceTimeout <= 0 {
		return fmt.Errorf("kafka group timings must be positive, got heartbeat %v, session %v, rebalance %v",
			c.HeartbeatInterval, c.SessionTimeout, c.RebalanceTimeout)
	}
	if c.HeartbeatInterval*3 > c.SessionTimeout {
		return fmt.Errorf("kafka heartbeat interval %v is more than a third of the session timeout %v", c.HeartbeatInterval, c.SessionTimeout)
	}
	return nil
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
	def(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&c.SessionTimeout, DefaultSessionTimeout)
	def(&c.RebalanceTimeout, DefaultRebalanceTimeout)
	def(&c.JoinGroupBackoff, 5*time.Second)
	def(&c.MaxWait, 500*time.Millisecond)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}
