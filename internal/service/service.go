// Package service owns the lifecycle contract every long-running part of pushd follows:
// a Service's Run(ctx) returns after draining once ctx is cancelled. Group runs services
// in order and stops them in reverse order, one at a time, so a part is stopped only after
// every part that depends on it (started later) has returned.
//
// Concurrency: Group.Run is called once; Add must not be called after Run starts.
package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Service is a long-running part. Run blocks until ctx is cancelled (then drains and
// returns nil) or until it fails (then returns the error).
type Service interface {
	Run(ctx context.Context) error
}

// Func adapts a function to Service.
type Func func(ctx context.Context) error

// Run calls f.
func (f Func) Run(ctx context.Context) error { return f(ctx) }

// Starter is an optional second capability: a service whose Start must finish (e.g. bind a
// listener, open a file) before the services added after it are started. Start errors stop
// the group before Run is called.
type Starter interface {
	Start(ctx context.Context) error
}

type entry struct {
	name string
	svc  Service
}

// Group is an ordered set of services.
type Group struct {
	entries []entry
}

// Add appends a service. Services start in the order added and stop in reverse.
func (g *Group) Add(name string, s Service) {
	g.entries = append(g.entries, entry{name: name, svc: s})
}

// Names lists the services in start order.
func (g *Group) Names() []string {
	names := make([]string, len(g.entries))
	for i, e := range g.entries {
		names[i] = e.name
	}
	return names
}

// Run starts every service in order and blocks until ctx is cancelled or a service returns
// (an error, or nil before it was asked to stop). Then it cancels the services in reverse
// order, waiting for each to return before cancelling the previous one. It returns the first
// failure (wrapped with the service name), or nil when the stop was asked for by ctx.
func (g *Group) Run(ctx context.Context) error {
	type running struct {
		name   string
		cancel context.CancelFunc
		done   chan struct{}
		err    error
	}
	runs := make([]*running, 0, len(g.entries))
	exited := make(chan *running, len(g.entries))
	var (
		firstErr error
		errOnce  sync.Once
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }

	stopAll := func() {
		for i := len(runs) - 1; i >= 0; i-- {
			r := runs[i]
			r.cancel()
			<-r.done
			if r.err != nil && !errors.Is(r.err, context.Canceled) {
				fail(fmt.Errorf("service %s: %w", r.name, r.err))
			}
		}
	}

	for _, e := range g.entries {
		if st, ok := e.svc.(Starter); ok {
			if err := st.Start(ctx); err != nil {
				fail(fmt.Errorf("cannot start service %s: %w", e.name, err))
				stopAll()
				return firstErr
			}
		}
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r := &running{name: e.name, cancel: cancel, done: make(chan struct{})}
		runs = append(runs, r)
		go func(svc Service) {
			defer close(r.done)
			r.err = svc.Run(sctx)
			exited <- r
		}(e.svc)
	}

	select {
	case <-ctx.Done():
	case r := <-exited:
		if r.err != nil {
			fail(fmt.Errorf("service %s: %w", r.name, r.err))
		} else {
			fail(fmt.Errorf("service %s stopped unexpectedly", r.name))
		}
	}
	stopAll()
	return firstErr
}
