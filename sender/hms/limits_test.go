package hms

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

// TestHMSIntakeLimitHoldsAtTheGateway: the largest data render accepts for HMS (its intake
// estimate of the 4096-byte request) is accepted by the simulator, which measures the request
// as HMS does; one byte more is refused at intake.
func TestHMSIntakeLimitHoldsAtTheGateway(t *testing.T) {
	s := newSim(t, sim.HMSConfig{})
	cl := newClient(t, s, "104455667", Config{})
	opts := render.Options{Now: time.Now(), Expiry: time.Now().Add(15 * 24 * time.Hour), NotificationChannel: "chat"}
	data := func(n int) json.RawMessage {
		return json.RawMessage(`{"title":"Deals","alert":"Half price","k":"` + strings.Repeat(`\"<x`, n) + `"}`)
	}
	n := 0
	for ; ; n++ { // the largest n render accepts
		if _, err := render.Render(data(n+1), push.ChannelHMS, opts); err != nil {
			break
		}
		if n > 4096 {
			t.Fatal("render takes HMS data of any size")
		}
	}
	m, err := render.Render(data(n), push.ChannelHMS, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := cl.Send(context.Background(), delivery(m, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("largest payload render accepts (n=%d): %+v", n, r)
	}
}
