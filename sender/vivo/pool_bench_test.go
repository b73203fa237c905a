//go:build unix

package vivo_test

import (
	"crypto/tls"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/sendertest/poolbench"
	"github.com/pushd/pushd/sender/vivo"
)

// BenchmarkSenderVivoPool measures deliveries/s through one sender pool to the vivo
// simulator: task pushes of one rendered message under a cached auth token, as a fan-out
// sends them, measured as poolbench.Run
// does. Run with e.g. -benchtime=40000x.
func BenchmarkSenderVivoPool(b *testing.B) {
	poolbench.Run(b, poolbench.Pool{
		Channel:   push.ChannelVivo,
		Configure: func(c *sender.Config, tlsCfg *tls.Config) { c.Vivo = vivo.Config{TLS: tlsCfg} },
		Body:      `{"alert":"hi","title":"t"}`,
		DeviceID:  "15638535410301%09d",
	})
}
