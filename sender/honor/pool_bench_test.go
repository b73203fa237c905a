//go:build unix

package honor_test

import (
	"crypto/tls"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/sendertest/poolbench"
)

// BenchmarkSenderHonorPool measures deliveries/s through one sender pool to the Honor
// simulator: OAuth2-authorized requests of up to 1000 tokens, batched by group commit from
// the pool's workers, measured as poolbench.Run
// does. Run with e.g. -benchtime=40000x.
func BenchmarkSenderHonorPool(b *testing.B) {
	poolbench.Run(b, poolbench.Pool{
		Channel:   push.ChannelHonor,
		Configure: func(c *sender.Config, tlsCfg *tls.Config) { c.Honor = honor.Config{TLS: tlsCfg} },
		Body:      `{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`,
		DeviceID:  "AQAAAACy0bench%010d",
	})
}
