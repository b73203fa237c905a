package receipt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
	"github.com/pushd/pushd/webhook"
)

var bg = context.Background()

// deadCalls records the invalidator's calls (the real one is internal/node's, exercised by
// e2e/receipts_test.go).
type deadCalls struct {
	mu  sync.Mutex
	ids []string
}

func (d *deadCalls) InvalidateToken(_ context.Context, _, _, deviceID string, _ time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, deviceID)
	return nil
}

type events struct {
	mu  sync.Mutex
	evs []webhook.Event
}

func (e *events) Enabled(string) bool { return true }
func (e *events) Emit(ev webhook.Event) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return true
}

type env struct {
	st   *pebble.Store
	h    *Handler
	dead *deadCalls
	ev   *events
	app  push.App
}

const (
	miSecret   = "mi-app-secret"
	hmsUser    = "receipt-user"
	hmsKey     = "receipt-key"
	testPushID = "0123456789abcdef01234567"
)

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	app := push.App{ID: "app1", Name: "a", AppKey: "k", MasterKey: "m", Credentials: map[string]json.RawMessage{
		push.ChannelMi:  json.RawMessage(`{"_default":{"appSecret":"` + miSecret + `","packageName":"p"}}`),
		push.ChannelHMS: json.RawMessage(`{"_default":{"appId":"1","appSecret":"x","receiptUser":"` + hmsUser + `","receiptKey":"` + hmsKey + `"}}`),
	}}
	if err := st.CreateApp(bg, app); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := st.CreateNotification(bg, push.Notification{ObjectID: testPushID, AppID: app.ID, NotificationID: "nid1", Status: push.StatusInProcess,
		CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}); err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, dead: &deadCalls{}, ev: &events{}, app: app}
	e.h = New(Config{}, st, e.dead, e.ev, zap.NewNop(), metrics.NewSet())
	return e
}

func (e *env) arrivals(t *testing.T, ch string) int64 {
	t.Helper()
	n, err := e.st.GetNotification(bg, e.app.ID, testPushID)
	if err != nil {
		t.Fatal(err)
	}
	return n.Counts[ch].Arrivals
}

func miBody(typ int, ids string) []byte {
	d, _ := json.Marshal(map[string]any{"msg1": map[string]any{"param": Param(testPushID, "nid1"), "type": typ, "targets": ids, "timestamp": 1}})
	return []byte(url.Values{"data": {string(d)}}.Encode())
}

func hmsBody(statuses ...any) []byte {
	var st []map[string]any
	for i := 0; i+1 < len(statuses); i += 2 {
		st = append(st, map[string]any{"biTag": Param(testPushID, "nid1"), "token": statuses[i], "status": statuses[i+1], "timestamp": 1, "appid": "1"})
	}
	b, _ := json.Marshal(map[string]any{"statuses": st})
	return b
}

func hmsHeader(user, key string) func(string) string {
	v := "timestamp=1563105451261;nonce=a07bfa17;value=" + HuaweiSignature(key, "1563105451261", "a07bfa17", user)
	return func(k string) string {
		if k == HeaderHuawei {
			return v
		}
		return ""
	}
}

func noHeader(string) string { return "" }

func code(err error) push.Code {
	var pe *push.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return -1
}

// Refused receipts: an unknown vendor or app, a wrong or missing token, an unsigned or badly
// signed HMS receipt, a body that is not the vendor's shape: each gets its {code, error} and
// changes nothing (no arrival, no deletion, no event).
func TestReceiptRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	tok := Token(miSecret, e.app.ID)
	for _, c := range []struct {
		name               string
		vendor, app, token string
		header             func(string) string
		body               []byte
		want               push.Code
	}{
		{"unknown vendor", "nokia", e.app.ID, tok, noHeader, miBody(1, "r1"), push.CodeNotFoundRoute},
		{"unknown app", push.ChannelMi, "nope", tok, noHeader, miBody(1, "r1"), push.CodeObjectNotFound},
		{"no token", push.ChannelMi, e.app.ID, "", noHeader, miBody(1, "r1"), push.CodeUnauthorized},
		{"wrong token", push.ChannelMi, e.app.ID, Token("other", e.app.ID), noHeader, miBody(1, "r1"), push.CodeUnauthorized},
		{"another app's token", push.ChannelMi, e.app.ID, Token(miSecret, "app2"), noHeader, miBody(1, "r1"), push.CodeUnauthorized},
		{"vendor without credentials", push.ChannelOppo, e.app.ID, tok, noHeader, []byte(`[]`), push.CodeUnauthorized},
		{"hms unsigned", push.ChannelHMS, e.app.ID, "", noHeader, hmsBody("t1", 0), push.CodeUnauthorized},
		{"hms bad signature", push.ChannelHMS, e.app.ID, "", hmsHeader(hmsUser, "wrong"), hmsBody("t1", 0), push.CodeUnauthorized},
		{"hms other user", push.ChannelHMS, e.app.ID, "", hmsHeader("someone", hmsKey), hmsBody("t1", 0), push.CodeUnauthorized},
		{"mi not a form", push.ChannelMi, e.app.ID, tok, noHeader, []byte("%zz"), push.CodeValidation},
		{"mi no data", push.ChannelMi, e.app.ID, tok, noHeader, []byte("x=1"), push.CodeValidation},
		{"mi bad type", push.ChannelMi, e.app.ID, tok, noHeader, []byte(`{"m":{"param":"` + testPushID + `:n","type":"x","targets":"a"}}`), push.CodeValidation},
		{"hms not json", push.ChannelHMS, e.app.ID, "", hmsHeader(hmsUser, hmsKey), []byte(`{"statuses":`), push.CodeValidation},
		{"hms status not a number", push.ChannelHMS, e.app.ID, "", hmsHeader(hmsUser, hmsKey), hmsBody("t1", "zero"), push.CodeValidation},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := e.h.Receive(bg, c.vendor, c.app, c.token, c.header, c.body)
			if got := code(err); got != c.want {
				t.Fatalf("Receive = %v; want code %d", err, c.want)
			}
			if e.arrivals(t, push.ChannelMi) != 0 || e.arrivals(t, push.ChannelHMS) != 0 || len(e.dead.ids) != 0 || len(e.ev.evs) != 0 {
				t.Fatalf("a refused receipt changed something: mi %d, hms %d arrivals, deleted %v, events %d",
					e.arrivals(t, push.ChannelMi), e.arrivals(t, push.ChannelHMS), e.dead.ids, len(e.ev.evs))
			}
		})
	}
}

// A vendor repeating a receipt counts each device once; arrivals emit the webhook's arrived
// events, naming the installation of a stored token; dead statuses go to the invalidator;
// other statuses change nothing.
func TestReceiptArrivalsOnceDeadCleaned(t *testing.T) {
	e := newEnv(t)
	// r1 is the Mi token of a stored installation; r2 and the rest are not stored.
	if err := e.st.PutInstallation(bg, e.app.ID, push.DefaultBuckets, push.Installation{
		Route: push.Route{ObjectID: "o-r1", DeviceType: push.DeviceAndroid, InstallationID: "iid-r1", RegistrationID: "r1",
			Vendor: push.ChannelMi, UpdatedAt: 1}, CreatedAt: 1, Doc: []byte(`{"objectId":"o-r1"}`)}); err != nil {
		t.Fatal(err)
	}
	tok := Token(miSecret, e.app.ID)
	for range 2 {
		if err := e.h.Receive(bg, push.ChannelMi, e.app.ID, tok, noHeader, miBody(1, "r1,r2")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.h.Receive(bg, push.ChannelMi, e.app.ID, tok, noHeader, miBody(16, "r3")); err != nil {
		t.Fatal(err)
	}
	if got := e.arrivals(t, push.ChannelMi); got != 2 {
		t.Fatalf("mi arrivals %d; want 2 however often the vendor repeats", got)
	}
	h := hmsHeader(hmsUser, hmsKey)
	if err := e.h.Receive(bg, push.ChannelHMS, e.app.ID, "", h, hmsBody("t1", 0, "t2", 2, "t3", 5, "t4", 6, "t5", 10)); err != nil {
		t.Fatal(err)
	}
	if got := e.arrivals(t, push.ChannelHMS); got != 1 {
		t.Fatalf("hms arrivals %d; want 1", got)
	}
	if fmt.Sprint(e.dead.ids) != "[r3 t2 t3]" {
		t.Fatalf("deleted %v; want r3 (type 16), t2 (status 2), t3 (status 5)", e.dead.ids)
	}
	var arrived []string
	for _, ev := range e.ev.evs {
		if ev.Type != webhook.Arrived || ev.PushID != testPushID || ev.NotificationID != "nid1" {
			t.Fatalf("event %+v", ev)
		}
		// r1 is a stored installation's token: its event names the installation.
		if want := map[string]string{"r1": "iid-r1"}[ev.DeviceID]; ev.InstallationID != want {
			t.Errorf("arrived event of %s names installation %q, want %q", ev.DeviceID, ev.InstallationID, want)
		}
		arrived = append(arrived, ev.Channel+"/"+ev.DeviceID)
	}
	if len(arrived) != 5 || arrived[4] != "hms/t1" {
		t.Fatalf("arrived events %v; want r1, r2 twice (same ids: a repeated receipt repeats them) and t1", arrived)
	}
	// A receipt about a push that is not pushd's (no param of ours), or of no device, is taken
	// (the vendor must not retry it) and counts nothing.
	d, _ := json.Marshal(map[string]any{"m": map[string]any{"param": "", "type": 1, "targets": "r9"}})
	for _, b := range [][]byte{[]byte(url.Values{"data": {string(d)}}.Encode()), miBody(1, "")} {
		if err := e.h.Receive(bg, push.ChannelMi, e.app.ID, tok, noHeader, b); err != nil {
			t.Fatalf("a receipt of nothing of ours: %v", err)
		}
	}
	if got := e.arrivals(t, push.ChannelMi); got != 2 || len(e.ev.evs) != 5 {
		t.Fatalf("a receipt of nothing of ours changed arrivals (%d) or events (%d)", got, len(e.ev.evs))
	}
}

// The guard: dead statuses of one app and vendor are deleted until they are more than
// InvalidGuard and more than the arrivals, as a sender pool's dead-token answers.
func TestReceiptDeadBurstStopsAtTheGuard(t *testing.T) {
	e := newEnv(t)
	h := hmsHeader(hmsUser, hmsKey)
	var st []any
	for i := range 60 {
		st = append(st, fmt.Sprintf("d%02d", i), 2)
	}
	if err := e.h.Receive(bg, push.ChannelHMS, e.app.ID, "", h, hmsBody(st...)); err != nil {
		t.Fatal(err)
	}
	if len(e.dead.ids) != 50 {
		t.Fatalf("deleted %d; want the guard's 50", len(e.dead.ids))
	}
	// Xiaomi's guard is its own: its dead regIds are still deleted.
	if err := e.h.Receive(bg, push.ChannelMi, e.app.ID, Token(miSecret, e.app.ID), noHeader, miBody(16, "m1")); err != nil {
		t.Fatal(err)
	}
	if len(e.dead.ids) != 51 {
		t.Fatalf("deleted %d; want Xiaomi's m1 too", len(e.dead.ids))
	}
	// Arrivals beyond the dead ones let deletions go on.
	var ok []any
	for i := range 70 {
		ok = append(ok, fmt.Sprintf("a%02d", i), 0)
	}
	if err := e.h.Receive(bg, push.ChannelHMS, e.app.ID, "", h, hmsBody(append(ok, "d99", 5)...)); err != nil {
		t.Fatal(err)
	}
	if len(e.dead.ids) != 52 || e.dead.ids[51] != "d99" {
		t.Fatalf("deleted %v; want d99 once arrivals outnumber the dead", e.dead.ids[50:])
	}
}
