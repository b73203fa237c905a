package clustertest

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/node"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// The scenarios of issue 15 item 4. Each checks the simulators' per-token ledger.

const pushTimeout = 120 * time.Second

// timeoutFor is how long a push to audience may take on a loaded machine: pushTimeout, or
// a second per 500 targets for larger audiences.
func timeoutFor(audience int) time.Duration {
	return max(pushTimeout, time.Duration(audience/500)*time.Second)
}

// paceFor is the per-node, per-channel delivery rate at which a push to audience lasts about
// five seconds on one node: long enough to kill or add a node in its middle.
func paceFor(audience int) float64 { return float64(audience) / 5 }

// paced caps each node's APNs and FCM pools at perSecond deliveries, so that a push lasts long
// enough for a node to die or join in its middle.
func paced(perSecond float64) func(*node.Config) {
	return func(c *node.Config) {
		c.Sender.Rates = map[string]float64{push.ChannelAPNs: perSecond, push.ChannelFCM: perSecond}
	}
}

// sent is how many deliveries a node's workers made.
func sent(n *Node) float64 { return n.Metric(`pushd_fanout_deliveries_total{outcome="sent"}`) }

// checkRecord checks that the push record counts every token once, sent.
func checkRecord(t *testing.T, rec push.Notification, audience int) {
	t.Helper()
	tot := rec.Counts.Total()
	if tot.Targets != int64(audience) || tot.Sent != int64(audience) || tot.Failed != 0 {
		t.Errorf("record counts %+v (errors %q), want %d targets all sent", rec.Counts, rec.Errors, audience)
	}
}

// a. Three nodes share a push: every token exactly once, the record's counts exact, and every
// node took a share of the work.
func TestClusterThreeNodesShareAPush(t *testing.T) {
	if testing.Short() {
		t.Skip("three nodes on kfake take seconds to settle")
	}
	audience := Audience(t, 2000)
	c := New(t, Options{})
	tokens := c.Seed(audience)
	nodes := []*Node{c.Start("n1"), c.Start("n2"), c.Start("n3")}
	status, oid := c.Push(nodes[0], `{"where":{},"data":{"alert":"to all"},"prod":"prod"}`)
	if status != http.StatusOK {
		t.Fatalf("push: status %d", status)
	}
	rec := c.WaitDone(oid, timeoutFor(audience))
	checkRecord(t, rec, audience)
	lost, dups := c.Tally(tokens, 1)
	if lost != 0 || dups != 0 {
		t.Errorf("%d tokens: %d lost, %d duplicates; want every token exactly once", audience, lost, dups)
	}
	for _, n := range nodes {
		t.Logf("node %s sent %.0f", n.Name, sent(n))
	}
}

// b. A node is stopped abruptly mid-push (Kafka connections cut, store calls failing, no
// drain): the other two finish the push with nothing lost. What the dead node sent after its
// last checkpoint is sent again, and only that: every token delivered twice was delivered
// once by the dead node. The survivors' tasks, moved by the rebalance, make the batches they
// had at the sender final before they let their partitions go, so none of those is repeated.
func TestClusterNodeKilledMidPush(t *testing.T) {
	if testing.Short() {
		t.Skip("a dead member's session must time out")
	}
	audience := Audience(t, 2000)
	pace := paced(paceFor(audience))
	c := New(t, Options{Configure: pace, Record: 4 * audience})
	tokens := c.Seed(audience)
	n1, n2, victim := c.Start("n1"), c.Start("n2"), c.Start("victim")
	status, oid := c.Push(n1, `{"where":{},"data":{"alert":"kill one"},"prod":"prod"}`)
	if status != http.StatusOK {
		t.Fatalf("push: status %d", status)
	}
	waitfor.True(t, timeoutFor(audience), "the victim sending", func() bool { return sent(victim) >= 50 })
	if rec, _ := c.Store.GetNotification(t.Context(), c.App.ID, oid); rec.Status == push.StatusDone {
		t.Fatal("the push finished before the kill: pace it slower")
	}
	victim.Kill()
	rec := c.WaitDone(oid, timeoutFor(audience))
	lost, dups := c.Tally(tokens, 1)
	byVictim := c.SentBy(victim)
	var victimSent int64
	for _, n := range byVictim {
		victimSent += n
	}
	t.Logf("%d tokens, the victim delivered %d (%.0f answered); n1 %.0f, n2 %.0f; %d lost, %d duplicates",
		audience, victimSent, sent(victim), sent(n1), sent(n2), lost, dups)
	if lost != 0 {
		t.Errorf("%d deliveries lost after a node was killed", lost)
	}
	if victimSent == 0 {
		t.Fatal("the simulators recorded nothing from the victim: the ledger per node is broken")
	}
	for tok, n := range c.Delivered() {
		switch {
		case n > 2:
			t.Errorf("token %.12s… delivered %d times: only the dead node's batches may go twice", tok, n)
		case n == 2 && byVictim[tok] == 0:
			t.Errorf("token %.12s… delivered twice, neither time by the dead node: a survivor repeated its own work", tok)
		}
	}
	// The record counts each target once: the redone batches replace the dead node's.
	checkRecord(t, rec, audience)
}

// c. A node joins mid-push: the group rebalances, the running tasks move with their
// checkpoints, nothing is lost.
func TestClusterNodeJoinsMidPush(t *testing.T) {
	if testing.Short() {
		t.Skip("rebalances on kfake take seconds")
	}
	audience := Audience(t, 2000)
	c := New(t, Options{Configure: paced(paceFor(audience))})
	tokens := c.Seed(audience)
	n1 := c.Start("n1")
	status, oid := c.Push(n1, `{"where":{},"data":{"alert":"join"},"prod":"prod"}`)
	if status != http.StatusOK {
		t.Fatalf("push: status %d", status)
	}
	waitfor.True(t, timeoutFor(audience), "n1 sending", func() bool { return sent(n1) >= 50 })
	n2 := c.Start("n2", "fanout")
	rec := c.WaitDone(oid, timeoutFor(audience))
	lost, dups := c.Tally(tokens, 1)
	t.Logf("%d tokens: n1 sent %.0f, n2 (joined) %.0f; %d lost, %d duplicates", audience, sent(n1), sent(n2), lost, dups)
	if lost != 0 {
		t.Errorf("%d deliveries lost when a node joined", lost)
	}
	checkRecord(t, rec, audience)
}

// d. Scheduled pushes fire once across three scheduler nodes while the lease holder pauses
// at the worst moment: inside its claim of a due push (every store call it makes stalls),
// long enough to lose its lease. Another node takes the lease over and fires it and the pushes
// due after it; the paused node wakes up with the push in hand and must not fire it again. The
// exact interleavings at the claim (a claim of an earlier epoch refused) are pinned down by
// scheduler.TestSchedulerClusterFiresOnceWhileHolderPauses; this runs real nodes on the wall
// clock.
func TestClusterScheduledPushFiresOnceWhileHolderPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("leases expire in seconds")
	}
	const audience = 200
	c := New(t, Options{Configure: func(cfg *node.Config) {
		cfg.Lease.TTL, cfg.Lease.Renew = 2*time.Second, 300*time.Millisecond
	}})
	tokens := c.Seed(audience)
	nodes := []*Node{c.Start("n1"), c.Start("n2"), c.Start("n3")}
	const held = `pushd_lease_held{lease="scheduler"}`
	holder := func() *Node {
		for _, n := range nodes {
			if n.Metric(held) == 1 {
				return n
			}
		}
		return nil
	}
	waitfor.True(t, 30*time.Second, "a scheduler lease holder", func() bool { return holder() != nil })
	first := holder()
	paused := first.PauseAt("ClaimScheduled")
	var oids []string
	oid, firstID := c.Schedule(time.Now().Add(500 * time.Millisecond))
	oids = append(oids, oid)
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s never claimed the due push", first.Name)
	}
	// More pushes fall due while the holder is stalled.
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		oid, _ := c.Schedule(time.Now().Add(d))
		oids = append(oids, oid)
	}
	waitfor.True(t, 30*time.Second, "another node taking the lease over", func() bool {
		h := holder()
		return h != nil && h != first
	})
	// The new holder fires the first push too (its fan-out may wait for the paused node: a
	// node stalled against the store keeps its Kafka partitions while its heartbeats go on);
	// then the old holder wakes, its claim of that push still under way, and must not fire it
	// again.
	waitfor.True(t, 30*time.Second, "the new holder firing the first push", func() bool {
		_, err := c.Store.GetScheduled(t.Context(), c.App.ID, firstID)
		return errors.Is(err, store.ErrNotFound)
	})
	first.Resume()
	for _, oid := range oids {
		c.WaitDone(oid, pushTimeout)
	}
	var fired float64
	for _, n := range nodes {
		f := n.Metric(`pushd_scheduler_fired_total`)
		fired += f
		t.Logf("node %s: fired %.0f, fenced %.0f, lease acquisitions %.0f, lost %.0f", n.Name, f,
			n.Metric(`pushd_scheduler_fenced_total`), n.Metric(`pushd_lease_acquisitions_total{lease="scheduler"}`),
			n.Metric(`pushd_lease_lost_total{lease="scheduler"}`))
	}
	if int(fired) != len(oids) {
		t.Errorf("the nodes fired %.0f times, want %d (once per scheduled push)", fired, len(oids))
	}
	if f := first.Metric(`pushd_scheduler_fired_total`); f != 0 {
		t.Errorf("the node paused in its claim fired %.0f pushes, want none", f)
	}
	lost, dups := c.Tally(tokens, int64(len(oids)))
	if lost != 0 || dups != 0 {
		t.Errorf("%d tokens × %d pushes: %d lost, %d duplicates; want each push once to each token", audience, len(oids), lost, dups)
	}
}

// e. Three API nodes at twice the app's per-minute limit: the spec's limit is per app, so
// exactly the calls over it are refused with 429, whichever node they reach.
func TestClusterCallsPerMinuteAcrossAPINodes(t *testing.T) {
	const limit = 12
	c := New(t, Options{})
	c.SetCallsPerMinute(limit)
	nodes := []*Node{c.Start("n1", "api"), c.Start("n2", "api"), c.Start("n3", "api")}
	var ok, refused int
	for i := range 2 * limit {
		status, _ := c.Push(nodes[i%len(nodes)], fmt.Sprintf(`{"where":{"deviceType":"none"},"data":{"alert":"%d"},"prod":"prod"}`, i))
		switch status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Errorf("call %d: status %d", i, status)
		}
	}
	if ok != limit || refused != limit {
		t.Errorf("%d calls over 3 API nodes at a limit of %d/min: %d accepted, %d refused with 429; want %d and %d",
			2*limit, limit, ok, refused, limit, limit)
	}
}
