//go:build linux

package direct_test

import (
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/sender/direct"
)

// TestDirectNoTCPKeepAlive: the gateway's connections carry no TCP keep-alive probes (the
// heartbeat is the liveness check). With Go's default, a probe every 15 s to 100,000 idle
// devices overflowed the loopback backlog of BenchmarkGatewayIdle and aborted connections.
func TestDirectNoTCPKeepAlive(t *testing.T) {
	r := newRig(t, direct.Config{ConnectRate: 1e6})
	r.seedDevices(t, 2)
	a := rawDial(t, r.srv.Addr().String(), "dev0")
	defer a.Close()
	b := rawDialLC(t, r.srv.Addr().String(), "dev1")
	defer b.Close()
	waitfor.True(t, 10*time.Second, "both attached", func() bool { return r.core.Connected() == 2 })
	ka, err := direct.KeepAlives(r.srv)
	if err != nil {
		t.Fatal(err)
	}
	if len(ka) != 2 {
		t.Fatalf("server holds %d connections, want 2", len(ka))
	}
	for _, v := range ka {
		if v != 0 {
			t.Errorf("SO_KEEPALIVE %d on a device connection, want 0", v)
		}
	}
}
