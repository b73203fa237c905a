package pushapi

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// recordFunnel reads a record's funnel of channel ch and its pending.
func (e *env) recordFunnel(t *testing.T, app push.App, oid, ch string) (push.Funnel, int64) {
	t.Helper()
	r := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oid, "")
	if r.Status != 200 {
		t.Fatalf("record: %d %s", r.Status, r.Body)
	}
	var rec struct {
		Pending int64 `json:"pending"`
		Counts  struct {
			ByChannel map[string]push.Funnel `json:"byChannel"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(r.Body, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Counts.ByChannel[ch], rec.Pending
}

// TestPushRecordPendingEndsAtExpiryPlusGrace: own-channel targets fan-out handed to the gateway
// that the gateway never cached (no gateway consumed them: a stopped gateway role, a lost
// log) stay pending until the push's expiry plus push.FunnelGrace, and are expired from then
// on; messages the gateway caches meanwhile count sent (never acked: still sent), and the
// invariant holds at every instant. The record is real (Pebble), the gateway's counting is
// the store's CacheDirect, the clock is the API's.
func TestPushRecordPendingEndsAtExpiryPlusGrace(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	r := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"a"},"expiration_interval":60}`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	oid := r.JSON(t)["objectId"].(string)
	ctx := context.Background()
	rec, err := e.st.UpdateNotification(ctx, app.ID, oid, func(n *push.Notification) error {
		n.Tasks, n.TasksDone, n.Status = 1, 1, push.StatusDone
		n.Counts = push.Counts{push.ChannelDirect: {Targets: 5}} // five handed to the gateway
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cache := func(i int) {
		t.Helper()
		msg := push.DirectMessage{AppID: app.ID, InstallationID: fmt.Sprintf("iid%d", i), ID: oid, NotificationID: rec.NotificationID,
			Data: json.RawMessage(`{"alert":"a"}`), Expires: rec.ExpiresAt.UnixMilli()}
		if out, _, err := e.st.CacheDirect(ctx, msg, e.clock(), 100); err != nil || out != push.CacheStored {
			t.Fatalf("cache message %d: %v %v", i, out, err)
		}
	}
	check := func(when string, want push.Funnel) {
		t.Helper()
		got, pending := e.recordFunnel(t, app, oid, push.ChannelDirect)
		if got.Targets != want.Targets || got.Sent != want.Sent || got.Expired != want.Expired || got.Pending != want.Pending || pending != want.Pending {
			t.Errorf("%s: funnel %+v (record pending %d), want %+v", when, got, pending, want)
		}
		if got.Targets != got.Sent+got.Failed+got.Expired+got.Deferred+got.Pending {
			t.Errorf("%s: invariant broken: %+v", when, got)
		}
	}
	check("handed over", push.Funnel{Targets: 5, Pending: 5})
	cache(0)
	cache(1)
	check("two cached", push.Funnel{Targets: 5, Sent: 2, Pending: 3})
	e.advance(time.Minute + push.FunnelGrace - time.Second)
	check("just before expiry plus the grace", push.Funnel{Targets: 5, Sent: 2, Pending: 3})
	e.advance(time.Second)
	check("at expiry plus the grace", push.Funnel{Targets: 5, Sent: 2, Expired: 3})
	e.advance(time.Hour)
	check("an hour later", push.Funnel{Targets: 5, Sent: 2, Expired: 3})
}
