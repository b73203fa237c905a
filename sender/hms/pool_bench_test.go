//go:build unix

package hms_test

import (
	"crypto/tls"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/sendertest/poolbench"
)

// BenchmarkSenderHMSPool measures deliveries/s through one sender pool to the HMS
// simulator: OAuth2-authorized batched requests of ≤ 1000 tokens of one rendered message, as
// a fan-out sends them, measured as poolbench.Run
// does. Run with e.g. -benchtime=40000x.
func BenchmarkSenderHMSPool(b *testing.B) {
	poolbench.Run(b, poolbench.Pool{
		Channel:   push.ChannelHMS,
		Configure: func(c *sender.Config, tlsCfg *tls.Config) { c.HMS = hms.Config{TLS: tlsCfg} },
		Body:      `{"alert":"hi","title":"t"}`,
		DeviceID:  "IQAAAACy0bench%09d",
	})
}
