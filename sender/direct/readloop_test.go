package direct_test

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/sender/direct"
)

// rigReadLoop is the read loop newRig gives a config without one ("": the default, epoll on
// Linux); TestDirectGoroutineReadLoop sets it to run the connection tests on the other.
var rigReadLoop string

// TestDirectGoroutineReadLoop runs the connection tests of both protocols again on the
// goroutine read loop (the others run on the default).
func TestDirectGoroutineReadLoop(t *testing.T) {
	rigReadLoop = direct.ReadLoopGoroutine
	t.Cleanup(func() { rigReadLoop = "" })
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"online", TestDirectOnlineDeliveryAndArrival},
		{"offline", TestDirectOfflineFlushInOrder},
		{"replaced", TestDirectNewerConnectionReplacesOlder},
		{"refusals", TestDirectRefusals},
		{"heartbeat", TestDirectHeartbeatAndLimits},
		{"pings", TestDirectConnectionPings},
		{"stop", TestDirectStopClosesGoingAway},
		{"race", TestDirectNoDuplicateWhenConnectRacesDelivery},
		{"lc", TestDirectLCDeliveryAckAndOffline},
		{"lc-refusals", TestDirectLCRefusals},
		{"lc-other", TestDirectLCOtherCommandsKeepTheConnection},
		{"lc-both", TestDirectLCOneConnectionAcrossProtocols},
		{"lc-heartbeat", TestDirectLCHeartbeat},
	} {
		t.Run(tc.name, tc.f)
	}
}

// TestDirectEpollIdleConnectionsHoldNoGoroutine: on the epoll read loop, idle connections of
// both protocols cost no goroutine each (the goroutine loop's cost, and what the epoll loop
// is for); they are still read (a device that leaves is detached).
func TestDirectEpollIdleConnectionsHoldNoGoroutine(t *testing.T) {
	const n = 200
	for _, loop := range readLoops {
		t.Run(loop, func(t *testing.T) {
			r := newRig(t, direct.Config{ConnectRate: 1e6, ReadLoop: loop})
			r.seedDevices(t, n)
			before := runtime.NumGoroutine()
			open := make([]net.Conn, 0, n)
			for i := range n {
				dial := rawDial
				if i%2 == 1 {
					dial = rawDialLC
				}
				open = append(open, dial(t, r.srv.Addr().String(), "dev"+strconv.Itoa(i)))
			}
			waitfor.True(t, 10*time.Second, "every device attached", func() bool { return r.core.Connected() == n })
			if loop == direct.ReadLoopEpoll {
				// The handshakes' goroutines end once the connections are on the loop.
				waitfor.True(t, 10*time.Second, "no goroutine per idle connection", func() bool {
					return runtime.NumGoroutine()-before < n/10
				})
			} else {
				// One goroutine each; the margin is for goroutines counted in before that
				// end meanwhile (the rig's own start-up), which made an exact count flaky.
				waitfor.True(t, 10*time.Second, "a goroutine per connection on the goroutine loop", func() bool {
					return runtime.NumGoroutine()-before >= n-n/10
				})
			}
			for _, c := range open {
				_ = c.Close()
			}
			waitfor.True(t, 10*time.Second, "every device detached", func() bool { return r.core.Connected() == 0 })
		})
	}
}

// TestDirectReadLoopFramesInOneWrite: frames that arrive together are all read (the epoll
// loop reads one frame per event: the next must fire without new data), and a connection
// closed by a newer one of its installation is let go by the loop, not kept.
func TestDirectReadLoopFramesInOneWrite(t *testing.T) {
	for _, loop := range readLoops {
		t.Run(loop, func(t *testing.T) {
			r := newRig(t, direct.Config{ConnectRate: 1e6, ReadLoop: loop})
			r.seedDevices(t, 1)
			c := rawDial(t, r.srv.Addr().String(), "dev0")
			defer c.Close()
			var batch bytes.Buffer
			for range 3 {
				if err := ws.WriteFrame(&batch, ws.MaskFrame(ws.NewTextFrame([]byte(`{"op":"ping"}`)))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Write(batch.Bytes()); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for i := range 3 {
				h, err := ws.ReadHeader(c)
				if err != nil {
					t.Fatalf("pong %d: %v", i+1, err)
				}
				p := make([]byte, h.Length)
				if _, err := io.ReadFull(c, p); err != nil || string(p) != `{"op":"pong"}` {
					t.Fatalf("pong %d: %q %v", i+1, p, err)
				}
			}
			newer := rawDial(t, r.srv.Addr().String(), "dev0")
			defer newer.Close()
			waitfor.True(t, 10*time.Second, "the older connection let go", func() bool { return direct.OpenConns(r.srv) == 1 })
			if n := r.core.Connected(); n != 1 {
				t.Errorf("%d connected, want 1", n)
			}
		})
	}
}
