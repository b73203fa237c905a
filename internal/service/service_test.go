package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

func (r *recorder) svc(name string, started chan<- struct{}) Service {
	return Func(func(ctx context.Context) error {
		r.add("run " + name)
		if started != nil {
			close(started)
		}
		<-ctx.Done()
		r.add("stop " + name)
		return nil
	})
}

func TestServiceGroupStopsInReverse(t *testing.T) {
	var rec recorder
	var g Group
	startedC := make(chan struct{})
	g.Add("a", rec.svc("a", nil))
	g.Add("b", rec.svc("b", nil))
	g.Add("c", rec.svc("c", startedC))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	<-startedC
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	var stops []string
	for _, e := range rec.events {
		if strings.HasPrefix(e, "stop ") {
			stops = append(stops, e)
		}
	}
	if want := []string{"stop c", "stop b", "stop a"}; !slices.Equal(stops, want) {
		t.Fatalf("stops = %v, want %v", stops, want)
	}
	if got := g.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Names = %v", got)
	}
}

func TestServiceGroupFailureStopsOthers(t *testing.T) {
	var rec recorder
	var g Group
	boom := errors.New("boom")
	g.Add("a", rec.svc("a", nil))
	g.Add("bad", Func(func(ctx context.Context) error { return boom }))
	err := g.Run(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "service bad") {
		t.Fatalf("err = %v, want boom from service bad", err)
	}
	if !slices.Contains(rec.events, "stop a") {
		t.Fatalf("a was not stopped: %v", rec.events)
	}
}

type startFail struct{ err error }

func (s startFail) Start(context.Context) error   { return s.err }
func (s startFail) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func TestServiceGroupStartErrorStopsEarlierOnes(t *testing.T) {
	var rec recorder
	var g Group
	g.Add("a", rec.svc("a", nil))
	g.Add("s", startFail{err: errors.New("no port")})
	g.Add("never", Func(func(ctx context.Context) error { t.Error("never must not run"); return nil }))
	err := g.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot start service s") {
		t.Fatalf("err = %v", err)
	}
	if !slices.Contains(rec.events, "stop a") {
		t.Fatalf("a was not stopped: %v", rec.events)
	}
}

func TestServiceGroupUnexpectedNilReturn(t *testing.T) {
	var g Group
	g.Add("quitter", Func(func(ctx context.Context) error { return nil }))
	if err := g.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "stopped unexpectedly") {
		t.Fatalf("err = %v", err)
	}
}
