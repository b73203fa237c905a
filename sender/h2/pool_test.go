package h2

import (
	"context"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

func TestNewPoolEndpoint(t *testing.T) {
	if _, err := NewPool("fcm", "https:///no-host", Config{}, 1, 1); err == nil {
		t.Fatal("an endpoint with no host was accepted")
	}
	p, err := NewPool("fcm", "https://fcm.example/v1/projects/p%2F1/messages:send", Config{}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Authority != "fcm.example" || p.Path != "/v1/projects/p%2F1/messages:send" {
		t.Fatalf("authority %q path %q", p.Authority, p.Path)
	}
	if slot := newSlot(t, p); slot.addr != "fcm.example:443" {
		t.Fatalf("dial address %q, want the default port", slot.addr)
	}
}

// newSlot takes one connection slot of p (not dialled: conn dials), to see its address.
func newSlot(t *testing.T, p *Pool) *poolSlot {
	t.Helper()
	c, err := p.conns.AcquireContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	return c.C
}

func TestPoolClosedReply(t *testing.T) {
	p, err := NewPool("apns", "https://127.0.0.1:1", Config{}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	var res Response
	err = p.Do(context.Background(), &Request{Path: "/"}, &res)
	want := gateway.Reply{Kind: gateway.KindRetry, Reason: "apns client closed"}
	if got := p.Reply(context.Background(), err); got != want {
		t.Fatalf("Reply(%v) = %+v, want %+v", err, got, want)
	}
}
