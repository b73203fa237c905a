package main

import (
	"testing"
	"time"

	"github.com/pushd/pushd/queue/kafka"
)

// TestServeKafkaGroupFlags: the Kafka consumer group's session timeout, heartbeat and
// rebalance timeout come from flags or the environment, and timings a group cannot keep are
// refused before the node starts.
func TestServeKafkaGroupFlags(t *testing.T) {
	checkRefused(t,
		refusal{[]string{"--kafka-session-timeout", "0"}, "--kafka-session-timeout"},
		refusal{[]string{"--kafka-heartbeat-interval", "-1s"}, "--kafka-heartbeat-interval"},
		refusal{[]string{"--kafka-session-timeout", "6s", "--kafka-heartbeat-interval", "3s"}, "third"},
	)
	cfg, err := parseServe()
	if err != nil || cfg.Kafka.SessionTimeout != kafka.DefaultSessionTimeout || cfg.Kafka.HeartbeatInterval != kafka.DefaultHeartbeatInterval ||
		cfg.Kafka.RebalanceTimeout != kafka.DefaultRebalanceTimeout {
		t.Errorf("defaults: %+v, %v", cfg.Kafka, err)
	}
	t.Setenv("PUSHD_KAFKA_SESSION_TIMEOUT", "10s")
	cfg, err = parseServe("--kafka-heartbeat-interval", "1s", "--kafka-rebalance-timeout", "20s")
	if err != nil || cfg.Kafka.SessionTimeout != 10*time.Second || cfg.Kafka.HeartbeatInterval != time.Second || cfg.Kafka.RebalanceTimeout != 20*time.Second {
		t.Errorf("PUSHD_KAFKA_SESSION_TIMEOUT=10s --kafka-heartbeat-interval 1s --kafka-rebalance-timeout 20s: %+v, %v", cfg.Kafka, err)
	}
}
