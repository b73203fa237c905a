package intake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"
)

func floorAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ServeFloor(ln) }()
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// TestIntakeLoadClosedAndOpenLoop runs both loops against the floor over real loopback
// connections: every request is answered once, the latencies are sorted, and the open loop
// does not finish before its schedule's last request is due.
func TestIntakeLoadClosedAndOpenLoop(t *testing.T) {
	addr := floorAddr(t)
	apps := []App{{ID: "a1", AppKey: "k1", MasterKey: "m1"}, {ID: "a2", AppKey: "k2", MasterKey: "m2"}}
	ok := func(code int) bool { return code == 200 }
	closed := Load{Addr: addr, Conns: 8, OK: ok, Request: PushRequests(apps, addr, "run1")}
	res, err := closed.Run(context.Background(), 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 500 || res.Failed != 0 || len(res.Latencies) != 500 || res.PerSecond() <= 0 {
		t.Fatalf("closed loop: %d requests, %d failed, %d latencies, %.0f/s", res.Requests, res.Failed, len(res.Latencies), res.PerSecond())
	}
	for i := 1; i < len(res.Latencies); i++ {
		if res.Latencies[i] < res.Latencies[i-1] {
			t.Fatalf("latencies not sorted at %d", i)
		}
	}
	if res.Percentile(50) > res.Percentile(99) || res.Percentile(99) <= 0 {
		t.Fatalf("p50 %v, p99 %v", res.Percentile(50), res.Percentile(99))
	}
	// 200 requests at 2,000/s: the last is due 99.5 ms after the start.
	open := Load{Addr: addr, Conns: 4, OK: ok, Request: UpsertRequests(apps, addr, "run1", 10), Rate: 2000}
	res, err = open.Run(context.Background(), 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Failed != 0 {
		t.Fatalf("open loop: %d requests, %d failed", res.Requests, res.Failed)
	}
	if res.Elapsed < 199*time.Second/2000 {
		t.Fatalf("open loop took %v, before its last request was due", res.Elapsed)
	}
	// 50 ms of due time at 2,000/s: 100 requests a window, two windows.
	if len(res.Windows) != 2 || res.Windows[0].Requests+res.Windows[1].Requests != 200 ||
		res.Windows[1].Start.Sub(res.Windows[0].Start) != WindowSpan || res.Windows[0].Max <= 0 {
		t.Fatalf("open loop windows %+v, want two of 100 requests, 50 ms apart", res.Windows)
	}
}

// windows groups latencies by the due time of their requests, not by their order once sorted.
func TestIntakeWindows(t *testing.T) {
	start := time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC)
	lat := make([]time.Duration, 250) // 1,000/s: 50 a window, the last one of 50 too
	for i := range lat {
		lat[i] = time.Millisecond
	}
	lat[60], lat[61], lat[99] = 30*time.Millisecond, 11*time.Millisecond, SlowLatency // window 1; 10 ms is not over
	lat[249] = 12 * time.Millisecond
	ws := windows(lat, start, time.Millisecond)
	if len(ws) != 5 {
		t.Fatalf("%d windows, want 5", len(ws))
	}
	for i, w := range ws {
		want := Window{Start: start.Add(time.Duration(i) * WindowSpan), Requests: 50, Max: time.Millisecond}
		switch i {
		case 1:
			want.Slow, want.Max = 2, 30*time.Millisecond
		case 4:
			want.Slow, want.Max = 1, 12*time.Millisecond
		}
		if w != want {
			t.Errorf("window %d: %+v, want %+v", i, w, want)
		}
	}
}

// TestIntakeLoadCountsRefusals checks that answers OK refuses are counted with the first
// one's text, not taken as served.
func TestIntakeLoadCountsRefusals(t *testing.T) {
	addr := floorAddr(t)
	l := Load{Addr: addr, Conns: 2, OK: func(code int) bool { return code == 201 }, Request: PushRequests([]App{{ID: "a"}}, addr, "r")}
	res, err := l.Run(context.Background(), 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 20 || res.FirstError == "" {
		t.Fatalf("%d failed (%q), want 20", res.Failed, res.FirstError)
	}
}

// TestIntakeLoadFailsOnTransportError checks that a server closing its connections ends the
// run with an error instead of hanging or counting the requests.
func TestIntakeLoadFailsOnTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	addr := ln.Addr().String()
	l := Load{Addr: addr, Conns: 2, OK: func(int) bool { return true }, Request: PushRequests([]App{{ID: "a"}}, addr, "r")}
	if res, err := l.Run(context.Background(), 0, 10); err == nil {
		t.Fatalf("Run = %+v, want an error", res)
	}
}

// TestIntakeRequestsAreValid parses the generated requests as HTTP: the method, path,
// headers and Content-Length match, the body is a JSON object, and every push's req_id is
// what pushd takes (at most 16 letters and digits) and unique.
func TestIntakeRequestsAreValid(t *testing.T) {
	apps := []App{{ID: "app1", AppKey: "key1", MasterKey: "mk1"}, {ID: "app2", AppKey: "key2", MasterKey: "mk2"}}
	reqID := regexp.MustCompile(`^[A-Za-z0-9]{1,16}$`)
	seen := map[string]bool{}
	push := PushRequests(apps, "h:1", "a1b2c3")
	ups := UpsertRequests(apps, "h:1", "a1b2c3", 3)
	for _, i := range []int64{0, 1, 2, 3, 1e6, 1e9} {
		for _, tc := range []struct {
			fn         RequestFunc
			app        App
			path, key  string
			wantFields []string
		}{
			{push, apps[i%2], "/1.1/push", apps[i%2].MasterKey + ",master", []string{"data", "req_id"}},
			{ups, apps[i%3%2], "/1.1/installations", apps[i%3%2].AppKey, []string{"deviceType", "installationId", "channels"}},
		} {
			raw := tc.fn([]byte("junk"), i)[len("junk"):]
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				t.Fatalf("request %d to %s: %v\n%s", i, tc.path, err, raw)
			}
			if req.Method != "POST" || req.URL.Path != tc.path || req.Header.Get(headerAppID) != tc.app.ID || req.Header.Get(headerKey) != tc.key || req.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("request %d: %s %s %v", i, req.Method, req.URL, req.Header)
			}
			var body map[string]any
			if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
				t.Fatalf("request %d to %s: body: %v", i, tc.path, err)
			}
			for _, f := range tc.wantFields {
				if _, ok := body[f]; !ok {
					t.Fatalf("request %d to %s: no %s in %v", i, tc.path, f, body)
				}
			}
			if id, ok := body["req_id"].(string); ok {
				if !reqID.MatchString(id) || seen[id] {
					t.Fatalf("request %d: req_id %q invalid or repeated", i, id)
				}
				seen[id] = true
			}
		}
	}
}

// The warm-up's pushes (run tag "w" appended) and the measured loops' never share a req_id: one
// that did was answered from the first push's claim, an accepted push with no job.
func TestIntakeWarmupReqIDsApart(t *testing.T) {
	apps := []App{{ID: "app1", MasterKey: "mk1"}}
	reqID := regexp.MustCompile(`"req_id":"([A-Za-z0-9]+)"`)
	ids := func(run string, n int64) map[string]bool {
		fn, out := PushRequests(apps, "h:1", run), map[string]bool{}
		for i := range n {
			m := reqID.FindSubmatch(fn(nil, i))
			if m == nil {
				t.Fatalf("push %d of run %s has no req_id", i, run)
			}
			out[string(m[1])] = true
		}
		return out
	}
	warm := ids("a1b2c3w", 2000)
	for id := range ids("a1b2c3", 60000) {
		if warm[id] {
			t.Fatalf("req_id %s is both a warm-up push's and a measured one's", id)
		}
	}
}

// TestUpsertPassesUpdate: every pass over the devices sends device d to the same app with the
// same installationId, so that the passes after the first are updates, whatever the numbers
// of apps and devices (32 apps and 30,000 devices, the intake's default, sent each device's
// second pass to another app, where it was created again).
func TestUpsertPassesUpdate(t *testing.T) {
	apps := make([]App, 32)
	for i := range apps {
		apps[i] = App{ID: "app" + strconv.Itoa(i), AppKey: "key" + strconv.Itoa(i)}
	}
	const devices = 30000
	ups := UpsertRequests(apps, "h:1", "a1b2c3", devices)
	target := func(i int64) (app, installationID string) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(ups(nil, i))))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		var body struct{ InstallationID string }
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil || body.InstallationID == "" {
			t.Fatalf("request %d: installationId %q, %v", i, body.InstallationID, err)
		}
		return req.Header.Get(headerAppID), body.InstallationID
	}
	firstApps := map[string]bool{}
	for _, i := range []int64{0, 1, 17, 29999} {
		app, id := target(i)
		firstApps[app] = true
		for pass := int64(1); pass <= 2; pass++ {
			if a, d := target(i + pass*devices); a != app || d != id {
				t.Fatalf("device %d: pass %d goes to %s as %s, the first to %s as %s", i, pass, a, d, app, id)
			}
		}
	}
	if len(firstApps) < 3 {
		t.Fatalf("devices 0, 1, 17 and 29999 went to %d apps, want them spread over the apps", len(firstApps))
	}
}
