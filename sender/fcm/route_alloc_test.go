package fcm

import (
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
)

// TestFCMRouteAllocatesNothing: the dispatcher asks Route for every delivery, so it answers
// with the string built when the credentials load, not one per call.
func TestFCMRouteAllocatesNothing(t *testing.T) {
	sa, err := sim.NewServiceAccount("demo-chat", "https://127.0.0.1:1/token")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(sa)
	if err != nil {
		t.Fatal(err)
	}
	d := delivery(regToken(1))
	var got string
	allocs := testing.AllocsPerRun(100, func() { got, err = c.Route(d) })
	if err != nil || got != "project/demo-chat" {
		t.Fatalf("Route = %q, %v; want project/demo-chat", got, err)
	}
	if allocs != 0 {
		t.Errorf("Route allocates %.0f times per call, want 0", allocs)
	}
}

// TestFCMConfigDefaults: FCM's pool may open enough connections of 100 streams to keep all of
// fan-out's deliveries in flight at a slow gateway (its defaults: 4 tasks × 8 batches × 100 =
// 3,200); a configured MaxConns stays.
func TestFCMConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.MaxConns != DefaultMaxConns || c.StreamsPerConn != 100 || c.MaxConns*c.StreamsPerConn < 3200 {
		t.Errorf("defaults: %d connections × %d streams, want %d × 100, at least 3,200 in flight", c.MaxConns, c.StreamsPerConn, DefaultMaxConns)
	}
	c = Config{}
	c.MaxConns = 3
	if got := c.WithDefaults().MaxConns; got != 3 {
		t.Errorf("configured MaxConns 3 became %d", got)
	}
}
