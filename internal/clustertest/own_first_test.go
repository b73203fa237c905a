package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// TestClusterOwnFirstAsksTheOwningGateway: own_first in a cluster whose fan-out node runs no
// gateway role. Two gateway nodes share the push.direct partitions; half of the hybrid (FCM +
// installation id) devices hold an own-channel connection (real WebSockets, through the
// router of the API node) spread over both. One push: every connected device gets it on the
// own channel exactly once and nothing from FCM; every other device gets it from the FCM
// simulator exactly once; the record counts each target once, on the channel that carried it.
// Before the decision asked the owning gateways, a fan-out node without the gateway role sent
// every target to its vendor.
func TestClusterOwnFirstAsksTheOwningGateway(t *testing.T) {
	const n = 120
	c := New(t, Options{})
	c.SetChannelPolicy(push.PolicyOwnFirst)
	iids := c.SeedHybrid(n)
	fan := c.Start("fan", "api", "fanout", "scheduler")
	gw1, gw2 := c.StartGateway("gw1"), c.StartGateway("gw2")
	c.WaitGateways(60*time.Second, gw1, gw2)

	// Connect the even devices through the router; a device the router sent to a node that is
	// not (or no longer) its owner is refused (moved) and asks again, as the SDK does.
	ctx := context.Background()
	devs := make([]*sim.Device, n)
	ledgers := make([]*sim.Ledger, n)
	var mu sync.Mutex
	for i := 0; i < n; i += 2 {
		ledgers[i] = sim.NewLedger()
		waitfor.True(t, 60*time.Second, "device "+iids[i]+" connected", func() bool {
			d, _, err := sim.DialDevice(ctx, sim.DeviceConfig{API: fan.API, AppID: c.App.ID, AppKey: c.App.AppKey,
				InstallationID: iids[i], Ledger: ledgers[i]})
			var refused *sim.RefusedError
			if errors.As(err, &refused) || err != nil {
				return false
			}
			mu.Lock()
			devs[i] = d
			mu.Unlock()
			return true
		})
	}
	t.Cleanup(func() {
		for _, d := range devs {
			if d != nil {
				d.Close()
			}
		}
	})
	// Both gateway nodes hold some of them, and each connection is recorded.
	waitfor.True(t, 60*time.Second, "every connection recorded by its gateway", func() bool {
		nodes := make([]string, n)
		if err := c.Store.ConnectedNodes(ctx, c.App.ID, iids, nodes); err != nil {
			return false
		}
		seen := map[string]bool{}
		for i, nd := range nodes {
			if (i%2 == 0) != (nd != "") {
				return false
			}
			if nd != "" {
				seen[nd] = true
			}
		}
		return len(seen) == 2
	})

	// The presence endpoint of the API node (no gateway role) answers from what the owning
	// gateways recorded through the shared store.
	for i, want := range map[int]bool{0: true, 1: false} {
		p := c.presence(fan, fmt.Sprintf("hyb%07d", i))
		if p.Connected != want || (want && p.Node == "") {
			t.Errorf("presence of installation %d = %+v, want connected %v", i, p, want)
		}
	}

	status, oid := c.Push(fan, `{"where":{},"data":{"alert":"own first"}}`)
	if status != http.StatusOK {
		t.Fatalf("push: status %d", status)
	}
	rec := c.WaitDone(oid, 60*time.Second)
	for i := 0; i < n; i += 2 {
		waitfor.True(t, 60*time.Second, "device "+iids[i]+" received the push", func() bool { return len(ledgers[i].IDs()) > 0 })
	}
	fcm := c.FCM.Stats().PerToken
	for i := range n {
		got := fcm[RegOf(i)]
		if i%2 == 0 {
			ids := ledgers[i].IDs()
			if got != 0 || len(ids) != 1 || ledgers[i].Times(ids[0]) != 1 {
				t.Errorf("connected device %s: %d from FCM, own channel %v; want the own channel once, FCM never", iids[i], got, ids)
			}
		} else if got != 1 {
			t.Errorf("offline device %s: %d from FCM, want 1", iids[i], got)
		}
	}
	// The gateways count the own channel's sends on the record as they write (or cache) them.
	waitfor.True(t, 60*time.Second, "the own channel's sends counted", func() bool {
		r, err := c.Store.GetNotification(ctx, c.App.ID, oid)
		rec = r
		return err == nil && r.Counts[push.ChannelDirect].Sent >= n/2
	})
	own, vendor := rec.Counts[push.ChannelDirect], rec.Counts[push.ChannelFCM]
	if own.Targets != n/2 || own.Sent != n/2 || vendor.Targets != n/2 || vendor.Sent != n/2 {
		t.Errorf("record counts direct %+v, fcm %+v; want %d targets and sent on each", own, vendor, n/2)
	}
	for _, nd := range []*Node{fan, gw1, gw2} {
		if m := nd.Metric(`pushd_fanout_presence_errors_total`); m != 0 {
			t.Errorf("node %s: %v presence errors", nd.Name, m)
		}
	}
	if strings.Contains(fan.Metrics(), "pushd_direct_connected") {
		t.Errorf("the fan-out node runs a gateway core: the scenario needs one without")
	}
}

// presenceView is the part of GET /1.1/installations/<id>/presence the scenario reads.
type presenceView struct {
	Connected bool   `json:"connected"`
	Node      string `json:"node"`
}

// presence asks the node's API for an installation's presence with the master key.
func (c *Cluster) presence(n *Node, objectID string) presenceView {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.API+"/1.1/installations/"+objectID+"/presence", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("X-LC-Id", c.App.ID)
	req.Header.Set("X-LC-Key", c.App.MasterKey+",master")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v presenceView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil {
		c.t.Fatalf("presence of %s: %d %s", objectID, resp.StatusCode, b)
	}
	return v
}
