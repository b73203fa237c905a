package clustertest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/pushd/pushd/internal/node"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// StartGateway starts a node running the gateway role (and roles beside it, if given) whose
// device endpoint listens on a loopback port of its own and is advertised there, so the
// routers of the API nodes send devices to it.
func (c *Cluster) StartGateway(name string, roles ...string) *Node {
	t := c.t
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot pick a port for gateway node %s: %v", name, err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	url := "ws://" + addr + "/1.1/connect"
	n := c.start(name, func(cfg *node.Config) {
		cfg.GatewayAddr, cfg.Direct.Addr = addr, addr
		cfg.GatewayAdvertise = url
	}, append([]string{"gateway"}, roles...)...)
	n.GatewayURL = url
	return n
}

// WaitGateways waits until the gateway nodes advertise themselves and together own every
// push.direct partition, each at least one.
func (c *Cluster) WaitGateways(timeout time.Duration, nodes ...*Node) []store.Gateway {
	c.t.Helper()
	var list []store.Gateway
	parts := c.opts.Partitions[queue.TopicDirect]
	waitfor.True(c.t, timeout, fmt.Sprintf("%d gateway nodes owning the %d push.direct partitions", len(nodes), parts), func() bool {
		gs, err := c.Store.Gateways(context.Background(), time.Now())
		if err != nil {
			return false
		}
		list = gs
		owned := map[int]bool{}
		for _, n := range nodes {
			i := slices.IndexFunc(gs, func(g store.Gateway) bool { return g.URL == n.GatewayURL })
			if i < 0 || len(gs[i].Partitions) == 0 {
				return false
			}
			for _, p := range gs[i].Partitions {
				owned[p] = true
			}
		}
		return len(owned) == parts
	})
	return list
}

// SetChannelPolicy sets the app's channel policy (push.PolicyOwnFirst, ...).
func (c *Cluster) SetChannelPolicy(policy string) {
	ctx := context.Background()
	app, err := c.Store.GetApp(ctx, c.App.ID)
	if err != nil {
		c.t.Fatal(err)
	}
	app.Settings.ChannelPolicy = policy
	if err := c.Store.PutApp(ctx, app); err != nil {
		c.t.Fatal(err)
	}
	c.App = app
}

// SeedHybrid writes n Android installations with the FCM vendor and an installation id each
// (hybrid: under own_first they may hold an own-channel connection too) and returns their
// installation ids; installation i has registration id RegOf(i).
func (c *Cluster) SeedHybrid(n int) []string {
	now := time.Now().UnixMilli()
	iids := make([]string, 0, n)
	insts := make([]push.Installation, 0, n)
	for i := range n {
		oid, iid, reg := fmt.Sprintf("hyb%07d", i), fmt.Sprintf("hyb-iid-%07d", i), RegOf(i)
		r := push.Route{ObjectID: oid, DeviceType: push.DeviceAndroid, Vendor: push.ChannelFCM, RegistrationID: reg, InstallationID: iid, UpdatedAt: now}
		doc := fmt.Sprintf(`{"objectId":%q,"deviceType":"android","vendor":"fcm","registrationId":%q,"installationId":%q}`, oid, reg, iid)
		insts = append(insts, push.Installation{Route: r, CreatedAt: now, Doc: []byte(doc)})
		iids = append(iids, iid)
	}
	if err := c.Store.SeedInstallations(c.App.ID, c.App.Settings.Buckets, insts); err != nil {
		c.t.Fatalf("cannot seed %d hybrid installations: %v", n, err)
	}
	return iids
}

// RegOf is the FCM registration id of SeedHybrid's installation i.
func RegOf(i int) string { return fmt.Sprintf("hyb-reg-%07d", i) }
