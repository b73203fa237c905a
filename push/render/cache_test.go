package render

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

func testJob() *push.Job {
	return &push.Job{
		ID: "j1", NotificationID: "n1", Prod: "prod", Topic: "com.example.app",
		Data:      json.RawMessage(`{"alert":"hi","title":"T","k":1,"oppo":{"silent":true}}`),
		ExpiresAt: time.Now().Add(24 * time.Hour),
	}
}

func TestRenderCacheConcurrent(t *testing.T) {
	c := NewCache(testJob())
	const n = 8
	got := make([][]*push.Message, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ch := range channels {
				m, err := c.Get(ch)
				if ch == push.ChannelOppo {
					if !errors.Is(err, ErrNoPassThrough) {
						t.Errorf("oppo: got %v", err)
					}
				} else if err != nil {
					t.Errorf("%s: %v", ch, err)
				}
				got[g] = append(got[g], m)
			}
		}()
	}
	wg.Wait()
	for g := 1; g < n; g++ {
		for i := range got[g] {
			if got[g][i] != got[0][i] {
				t.Fatalf("channel %s rendered more than once", channels[i])
			}
		}
	}
	if _, err := c.Get("web"); !errors.Is(err, ErrUnknownChannel) {
		t.Errorf("unknown channel: %v", err)
	}
}

func TestRenderCacheOptions(t *testing.T) {
	c := NewCache(testJob())
	m, err := c.Get(push.ChannelAPNs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Topic != "com.example.app" || m.Expiration.IsZero() || string(m.Body) != `{"aps":{"alert":{"title":"T","body":"hi"}},"k":1}` {
		t.Errorf("got %+v %s", m, m.Body)
	}
}

func BenchmarkRenderCacheGet(b *testing.B) {
	c := NewCache(testJob())
	if _, err := c.Get(push.ChannelFCM); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Get(push.ChannelFCM); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	data := json.RawMessage(`{"alert":"See you at 8?","title":"Ana","badge":1,"sound":"default","conv":"42","ios":{"thread-id":"conv-42"}}`)
	for _, ch := range []string{push.ChannelAPNs, push.ChannelFCM, push.ChannelDirect, push.ChannelMi} {
		b.Run(ch, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(data, ch, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
