//go:build unix

// Package sendertest holds what the gateway packages' sender benchmarks and tests share: app
// sources (one app, or a store's apps with a simulator's credentials), a gateway simulator in a child process (so the benchmark's CPU is the
// sender's), and driving a dispatcher the way fan-out does (a few workers, each sending
// batches). It is imported by tests and benchmarks only.
package sendertest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/push"
)

// Apps is an app source (sender.AppSource) of one app.
type Apps struct{ App push.App }

// GetApp returns the one app, whatever the id.
func (a Apps) GetApp(context.Context, string) (push.App, error) { return a.App, nil }

// StoredApps is an app source (sender.AppSource) of the apps of a real store, each served
// with Channel's credentials set to Creds: a stored app sending to a simulator.
type StoredApps struct {
	Store interface {
		GetApp(ctx context.Context, id string) (push.App, error)
	}
	Channel string
	Creds   json.RawMessage
}

// GetApp returns the stored app with a.Channel's credentials only.
func (a StoredApps) GetApp(ctx context.Context, id string) (push.App, error) {
	app, err := a.Store.GetApp(ctx, id)
	if err != nil {
		return app, err
	}
	app.Credentials = map[string]json.RawMessage{a.Channel: a.Creds}
	return app, nil
}

// Sender is the dispatcher as Drive uses it.
type Sender interface {
	Send(ctx context.Context, ds []push.Delivery, res []push.Result) error
}

// Like fan-out: a few workers, each handing the dispatcher batches.
const (
	batch   = 500
	senders = 4
)

// Drive warms d with ds[0] (connections, auth tokens), then sends every delivery of ds in
// batches from several goroutines with b's timer running, and fails b if any delivery is not
// sent. It returns the wall time and this process's CPU µs per delivery (the sender's alone
// when the simulator runs in a child process, StartSim); the timer is stopped when it returns.
func Drive(b *testing.B, d Sender, ds []push.Delivery) (elapsed time.Duration, cpuPerDelivery float64) {
	b.Helper()
	res := make([]push.Result, len(ds))
	if err := d.Send(context.Background(), ds[:1], res[:1]); err != nil || res[0].Outcome != push.OutcomeSent {
		b.Fatalf("warm-up: %v %+v", err, res[0])
	}
	var next, failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := procstat.CPU(b)
	r0, w0, io0 := procstat.Syscalls()
	start := time.Now()
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(batch)) - batch
				if lo >= len(ds) {
					return
				}
				hi := min(lo+batch, len(ds))
				if err := d.Send(context.Background(), ds[lo:hi], res[lo:hi]); err != nil {
					b.Error(err)
					return
				}
				for _, r := range res[lo:hi] {
					if r.Outcome != push.OutcomeSent {
						failed.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed = time.Since(start)
	cpuPerDelivery = float64((procstat.CPU(b) - cpu0).Microseconds()) / float64(len(ds))
	if r1, w1, io1 := procstat.Syscalls(); io0 && io1 {
		// How many answers a read brings and how many requests a write carries.
		b.ReportMetric(float64(r1-r0)/float64(len(ds)), "reads/delivery")
		b.ReportMetric(float64(w1-w0)/float64(len(ds)), "writes/delivery")
	}
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d deliveries not sent", n)
	}
	return elapsed, cpuPerDelivery
}
