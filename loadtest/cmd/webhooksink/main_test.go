package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/webhook"
)

// lineWriter hands the first line written to it to a channel.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if i := bytes.IndexByte(w.buf.Bytes(), '\n'); i >= 0 && w.line != nil {
		w.line <- string(w.buf.Bytes()[:i])
		w.line = nil
	}
	return len(p), nil
}

// TestWebhookSinkProcess: the command verifies signatures, answers 500 on demand, and shows
// its ledger.
func TestWebhookSinkProcess(t *testing.T) {
	const secret = "sink-cmd-secret-0123456"
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan string, 1)
	out := &lineWriter{line: first}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-secret", secret}, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	var base string
	select {
	case l := <-first:
		base = strings.TrimPrefix(l, "webhooksink: ")
	case err := <-done:
		t.Fatal(err)
	}
	ev := webhook.Event{Type: webhook.Sent, AppID: "a1", PushID: "p1", Channel: "apns", DeviceID: "tok", At: time.Now()}
	body, _ := json.Marshal(webhook.Batch{AppID: "a1", Events: []webhook.Wire{ev.ToWire()}})
	post := func(sig string) int {
		req, _ := http.NewRequest("POST", base+"/hook", bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if res, err := http.Post(base+"/_fail?n=1", "", nil); err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("/_fail: %v %v", res, err)
	}
	if s := post(webhook.Sign(secret, time.Now(), body)); s != 500 {
		t.Fatalf("with /_fail: %d, want 500", s)
	}
	if s := post(webhook.Sign("wrong-secret-0123456789", time.Now(), body)); s != 401 {
		t.Fatalf("a wrong signature: %d, want 401", s)
	}
	if s := post(webhook.Sign(secret, time.Now().Add(-time.Hour), body)); s != 401 {
		t.Fatalf("an old signature: %d, want 401", s)
	}
	for range 2 {
		if s := post(webhook.Sign(secret, time.Now(), body)); s != 204 {
			t.Fatalf("a good request: %d, want 204", s)
		}
	}
	var l webhooksink.Ledger
	waitfor.True(t, 5*time.Second, "the ledger", func() bool {
		res, err := http.Get(base + "/_ledger")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		return json.NewDecoder(res.Body).Decode(&l) == nil
	})
	if l.Events != 1 || l.Duplicates != 1 || l.Refused != 1 || l.BadSigs != 2 || l.ByType["sent"] != 1 || l.Devices[webhook.TokenHash("tok")]["sent"] != 1 {
		t.Fatalf("ledger %+v", l)
	}
}
