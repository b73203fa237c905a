//go:build unix

package oppo_test

import (
	"crypto/tls"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/sendertest/poolbench"
)

// BenchmarkSenderOppoPool measures deliveries/s through one sender pool to the OPPO
// simulator: batched requests of one rendered message under a cached auth token, as a
// fan-out sends them, measured as poolbench.Run
// does. Run with e.g. -benchtime=40000x.
func BenchmarkSenderOppoPool(b *testing.B) {
	poolbench.Run(b, poolbench.Pool{
		Channel:   push.ChannelOppo,
		Configure: func(c *sender.Config, tlsCfg *tls.Config) { c.Oppo = oppo.Config{TLS: tlsCfg} },
		Body:      `{"alert":"hi","title":"t","notificationChannel":"c"}`,
		DeviceID:  "CN_078ad8b8a137cadb14ae5b70%09d",
	})
}
