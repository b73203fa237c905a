package sim

import (
	"bytes"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// An outage's phases run back to back on the simulator's clock: 503, dropped connections,
// GOAWAY, 429 with Retry-After; then the simulator answers normally again.
func TestAPNsSimOutagePhases(t *testing.T) {
	c := &clock{t: time.Now()}
	f := newAPNsFixture(t, APNsConfig{Now: c.now})
	if err := f.s.StartOutage(
		Outage{Mode: OutageStatus, For: 10 * time.Second},
		Outage{Mode: OutageDrop, For: 10 * time.Second},
		Outage{Mode: OutageGoAway, For: 10 * time.Second},
		Outage{Mode: OutageStatus, Status: 429, RetryAfter: 5 * time.Second, For: 10 * time.Second},
	); err != nil {
		t.Fatal(err)
	}
	if r := f.send(t, apnsReq{}); r.status != 503 || r.reason != "ServiceUnavailable" {
		t.Fatalf("phase 1: %+v, want 503 ServiceUnavailable", r)
	}
	c.add(10 * time.Second)
	if _, err := rawPost(f.c, f.s.URL()+"/3/device/"+testToken, f.jwt); err == nil {
		t.Fatal("phase 2: got an answer, want the connection dropped")
	}
	c.add(10 * time.Second)
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	if r := f.sendTraced(t, trace); r.status != 503 || r.reason != "Shutdown" {
		t.Fatalf("phase 3: %+v, want 503 Shutdown", r)
	}
	c.add(10 * time.Second)
	if r := f.sendTraced(t, trace); r.status != 429 || r.reason != "TooManyRequests" || r.retryAfter != "5" {
		t.Fatalf("phase 4: %+v, want 429 TooManyRequests with Retry-After 5", r)
	}
	if len(reused) != 2 || reused[1] {
		t.Fatalf("connection reuse after the GOAWAY %v: want a new connection", reused)
	}
	if st := f.s.Stats(); st.Outage != 4 || !st.InOutage || st.Accepted != 0 {
		t.Fatalf("stats during the outage %+v: want 4 outage requests", st)
	}
	c.add(10 * time.Second)
	if r := f.send(t, apnsReq{}); r.status != 200 {
		t.Fatalf("after the outage: %+v", r)
	}
	if st := f.s.Stats(); st.Outage != 4 || st.InOutage || st.Accepted != 1 {
		t.Fatalf("stats after the outage %+v", st)
	}
	if err := f.s.StartOutage(Outage{Mode: "flood", For: time.Second}); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

func (f *apnsFixture) sendTraced(t *testing.T, trace *httptrace.ClientTrace) apnsResp {
	t.Helper()
	tr := f.c.Transport
	f.c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return tr.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	})
	defer func() { f.c.Transport = tr }()
	return f.send(t, apnsReq{})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (fn roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return fn(r) }

func rawPost(c *http.Client, url, jwt string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"aps":{"alert":"hi"}}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("authorization", "bearer "+jwt)
	req.Header.Set("apns-topic", testTopic)
	res, err := c.Do(req)
	if err == nil {
		res.Body.Close()
	}
	return res, err
}

// POST /_outage starts an outage of the phases in its body; DELETE ends it. FCM answers an
// outage with its own error shape.
func TestFCMSimOutageControl(t *testing.T) {
	f := newFCMFixture(t, FCMConfig{})
	do := func(method, body string) int {
		req, err := http.NewRequest(method, f.base+"/_outage", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, bad := range []string{`{}`, `[{"mode":"status","for":"soon"}]`, `[{"mode":"status","status":200,"for":"1s"}]`, `[{"mode":"drop","for":"-1s"}]`} {
		if got := do(http.MethodPost, bad); got != http.StatusBadRequest {
			t.Errorf("POST /_outage %s: %d, want 400", bad, got)
		}
	}
	if f.s.Stats().InOutage {
		t.Fatal("a refused outage started")
	}
	if got := do(http.MethodPost, `[{"mode":"status","status":429,"retry_after":"3s","for":"1h"}]`); got != http.StatusNoContent {
		t.Fatalf("POST /_outage: %d", got)
	}
	if r := f.send(t, testProject, msg(`"token":"reg:1","notification":{"title":"t"}`)); r.status != 429 || r.errorCode != "QUOTA_EXCEEDED" || r.retryAfter != "3" {
		t.Fatalf("during the outage: %+v", r)
	}
	if got := do(http.MethodDelete, ""); got != http.StatusNoContent {
		t.Fatalf("DELETE /_outage: %d", got)
	}
	if st := f.s.Stats(); st.InOutage || st.Outage != 1 {
		t.Fatalf("after DELETE: %+v", st)
	}
}
