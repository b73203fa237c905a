package mi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/gateway"
)

// TestMiIntakeLimitHoldsAtTheGateway: the largest custom data render accepts for Xiaomi, as a
// notification and as a silent push, is accepted by the simulator (payload under 4 KB).
func TestMiIntakeLimitHoldsAtTheGateway(t *testing.T) {
	s := newSim(t, sim.MiConfig{})
	cl := newClient(t, s, s.NewApp(pkg), Config{})
	opts := render.Options{Now: time.Now()}
	for _, silent := range []string{"false", "true"} {
		data := func(n int) json.RawMessage {
			return json.RawMessage(`{"title":"T","alert":"A<b>","silent":` + silent + `,"k":"` + strings.Repeat(`<x`, n) + `"}`)
		}
		n := 0
		for ; ; n++ {
			if _, err := render.Render(data(n+1), push.ChannelMi, opts); err != nil {
				break
			}
			if n > 4096 {
				t.Fatal("render takes Xiaomi data of any size")
			}
		}
		m, err := render.Render(data(n), push.ChannelMi, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r := cl.Send(context.Background(), delivery(m, regID(0))); r.Kind != gateway.KindSent {
			t.Fatalf("silent %s: largest payload render accepts (n=%d): %+v", silent, n, r)
		}
	}
}
