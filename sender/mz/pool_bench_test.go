//go:build unix

package mz_test

import (
	"crypto/tls"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/sendertest/poolbench"
)

// BenchmarkSenderMzPool measures deliveries/s through one sender pool to the Meizu
// simulator: signed requests of up to 100 pushIds, batched by group commit from the pool's
// workers, measured as poolbench.Run
// does. Run with e.g. -benchtime=40000x.
func BenchmarkSenderMzPool(b *testing.B) {
	poolbench.Run(b, poolbench.Pool{
		Channel:   push.ChannelMz,
		Configure: func(c *sender.Config, tlsCfg *tls.Config) { c.Mz = mz.Config{TLS: tlsCfg} },
		Body:      `{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`,
		DeviceID:  "RFAKEmz%010d",
	})
}
