package kafka

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

// gauge reads one line of set's exposition: the value and whether the metric is there.
func gauge(set *metrics.Set, name string) (string, bool) {
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, l := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v, true
		}
	}
	return "", false
}

// TestQueueKafkaConsumerLagMetric: a member exports the lag of each partition it owns, from
// the high watermark of its fetches: 10 messages with offsets 0..2 handled and 3 in the
// handler are 7 behind; all handled, 0; once the member stops, the gauge is gone.
func TestQueueKafkaConsumerLagMetric(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(t, c)
	cfg.Metrics = metrics.NewSet()
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
	at3, release := make(chan struct{}), make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- l.Consume(cctx, queuetest.Topic, "g", func(ctx context.Context, m queue.Message) error {
			if m.Partition == 0 && m.Offset == 3 {
				close(at3)
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}()
	name := fmt.Sprintf(`pushd_kafka_consumer_lag{group="g",topic=%q,partition="0"}`, queuetest.Topic)
	<-at3
	if v, ok := gauge(cfg.Metrics, name); v != "7" {
		t.Errorf("lag with offset 3 in the handler: %q (present %v), want 7", v, ok)
	}
	close(release)
	waitfor.True(t, 30*time.Second, "lag 0", func() bool { v, _ := gauge(cfg.Metrics, name); return v == "0" })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v, ok := gauge(cfg.Metrics, name); ok {
		t.Errorf("a stopped member still exports lag %s", v)
	}
}

// TestQueueKafkaDialCarriesEveryConnection: Config.Dial opens the producer's, the group's and
// the readers' connections (the multi-node harness cuts a node off through it).
func TestQueueKafkaDialCarriesEveryConnection(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(t, c)
	ctx := context.Background()
	if err := EnsureTopics(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int64
	var d net.Dialer
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(ctx, queuetest.Topic, queue.Record{Partition: 0, Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	afterAppend := dials.Load()
	if afterAppend == 0 {
		t.Fatal("the producer did not dial through Config.Dial")
	}
	got := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- l.Consume(cctx, queuetest.Topic, "g", func(context.Context, queue.Message) error {
			select {
			case got <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	<-got
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if dials.Load() == afterAppend {
		t.Error("the consumer did not dial through Config.Dial")
	}
}

func TestQueueKafkaTimingFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs, "kafka-")
	if err := fs.Parse([]string{"--kafka-session-timeout", "9s", "--kafka-heartbeat-interval", "3s"}); err != nil {
		t.Fatal(err)
	}
	if c.SessionTimeout != 9*time.Second || c.HeartbeatInterval != 3*time.Second || c.RebalanceTimeout != DefaultRebalanceTimeout {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.ValidateTimings(); err != nil {
		t.Fatal(err)
	}
	c.HeartbeatInterval = 4 * time.Second
	if err := c.ValidateTimings(); err == nil {
		t.Error("a heartbeat over a third of the session was accepted")
	}
}
