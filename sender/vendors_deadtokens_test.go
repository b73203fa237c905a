package sender

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/mi"
)

// TestSenderVendorDeadTokenBurst: for each vendor family, a burst of dead-token answers for
// every token of an app (the gateways.md §0 sign of a configuration error, not of dead
// devices) deletes InvalidGuard installations and keeps the rest, each failed with "not
// deleted"; Xiaomi names no dead regId in its send reply, so none of its installations is
// deleted at all. Each row makes every token of the app dead in its simulator.
func TestSenderVendorDeadTokenBurst(t *testing.T) {
	const n, guard = 20, 5
	guarded := func(c *Config) { c.InvalidGuard = guard }
	rows := []struct {
		name string
		// setup returns the dispatcher's env and the app's deliveries, every token dead.
		setup func(t *testing.T) (*env, []push.Delivery)
		drops bool // the vendor names dead tokens
	}{
		{"hms", func(t *testing.T) (*env, []push.Delivery) {
			e := newVendorEnv(t, guarded)
			e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("_default")}})
			ds := make([]push.Delivery, n)
			for i := range ds {
				e.hms.MarkInvalid(hmsToken(i))
				ds[i] = hmsDelivery("app1", i, "")
			}
			return e.env, ds
		}, true},
		{"mz", func(t *testing.T) (*env, []push.Delivery) {
			e, s := newMzEnv(t, guarded)
			creds, _ := mzTestCreds(s, "_default")
			e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMz: creds}})
			ds := make([]push.Delivery, n)
			for i := range ds {
				s.MarkInvalid(mzPushID(i))
				ds[i] = mzDelivery("app1", i, "")
			}
			return e, ds
		}, true},
		{"vivo", func(t *testing.T) (*env, []push.Delivery) {
			e := newVivoEnv(t, sim.VivoConfig{Knobs: sim.Knobs{InvalidTokenRate: 1}}, guarded)
			return e.env, vivoDeliveries(n, time.Time{})
		}, true},
		{"oppo", func(t *testing.T) (*env, []push.Delivery) {
			e := newOppoEnv(t, sim.OppoConfig{Knobs: sim.Knobs{InvalidTokenRate: 1}}, guarded)
			return e.env, oppoDeliveries(n, time.Time{})
		}, true},
		{"mi", func(t *testing.T) (*env, []push.Delivery) {
			e := newVendorEnv(t, guarded)
			creds, _ := json.Marshal(map[string]mi.ProfileJSON{"_default": {AppSecret: e.mi.NewApp("com.a"), PackageName: "com.a"}})
			e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMi: creds}})
			msg := &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"hi"}`)}
			ds := make([]push.Delivery, n)
			for i := range ds {
				id := fmt.Sprintf("miDeadReg%03d", i)
				e.mi.MarkInvalid(id)
				ds[i] = push.Delivery{AppID: "app1", Message: msg, Target: push.Target{ObjectID: fmt.Sprint("m", i), Channel: push.ChannelMi, DeviceID: id}}
			}
			return e.env, ds
		}, false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			e, ds := row.setup(t)
			res := send(t, e.d, ds)
			deleted, kept, sent := 0, 0, 0
			for i, r := range res {
				switch {
				case r.Outcome == push.OutcomeInvalidToken:
					deleted++
				case r.Outcome == push.OutcomeFailed && strings.Contains(r.Reason, "not deleted"):
					kept++
				case r.Outcome == push.OutcomeSent && !row.drops:
					sent++
				default:
					t.Fatalf("delivery %d: %+v", i, r)
				}
			}
			switch {
			case row.drops && (deleted != guard || kept != n-guard || len(e.inv.got()) != guard):
				t.Fatalf("deleted %d (invalidated %d), kept %d; want %d, %d", deleted, len(e.inv.got()), kept, guard, n-guard)
			case !row.drops && (sent != n || len(e.inv.got()) != 0):
				t.Fatalf("sent %d, invalidated %d: want %d sent, none deleted", sent, len(e.inv.got()), n)
			}
		})
	}
}
