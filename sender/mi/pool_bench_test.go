//go:build unix

package mi_test

import (
	"crypto/tls"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/sendertest/poolbench"
)

// BenchmarkSenderMiPool measures deliveries/s through one sender pool to the Xiaomi
// simulator: batched requests of ≤ 1000 comma-joined regIds of one rendered message, as a
// fan-out sends them, measured as poolbench.Run
// does. Run with e.g. -benchtime=40000x.
func BenchmarkSenderMiPool(b *testing.B) {
	poolbench.Run(b, poolbench.Pool{
		Channel:   push.ChannelMi,
		Configure: func(c *sender.Config, tlsCfg *tls.Config) { c.Mi = mi.Config{TLS: tlsCfg} },
		Body:      `{"alert":"hi","title":"t"}`,
		DeviceID:  "fakeRegIdBench%09d",
	})
}
