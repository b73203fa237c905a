package pushapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/push"
)

func TestPushRecordsQueryAggregateAndDelete(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	var oids []string
	for i, body := range []string{
		`{"data":{"alert":"a"},"notification_id":"shared"}`,
		`{"data":{"alert":"b"},"notification_id":"shared"}`,
		`{"data":{"alert":"c"},"notification_id":"solo","prod":"dev"}`,
	} {
		e.advance(time.Second)
		r := e.do(app, master, "POST", "/1.1/push", body)
		if r.Status != 200 {
			t.Fatalf("push %d: %d %s", i, r.Status, r.Body)
		}
		oids = append(oids, r.JSON(t)["objectId"].(string))
	}
	// Fan-out's progress, as it would record it.
	ctx := context.Background()
	for i, sent := range []int64{3, 4} {
		_, err := e.st.UpdateNotification(ctx, app.ID, oids[i], func(n *push.Notification) error {
			n.Counts = push.Counts{push.ChannelAPNs: {Targets: sent + 1, Sent: sent, Failed: 1}, push.ChannelDirect: {Targets: 2, Sent: 2}}
			n.Status = push.StatusDone
			if i == 1 {
				n.Status = push.StatusInProcess
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	agg := e.do(app, master, "GET", "/1.1/notifications/shared", "").JSON(t)
	if agg["pushes"] != float64(2) || agg["successes"] != float64(3+2+4+2) || agg["iosSuccesses"] != float64(7) ||
		agg["lcSuccesses"] != float64(4) || agg["devices"] != float64(4+5+4) || agg["status"] != push.StatusInProcess {
		t.Fatalf("aggregate of a shared notification_id: %v", agg)
	}
	byType := agg["counts"].(map[string]any)["byDeviceType"].(map[string]any)
	if byType["ios"].(map[string]any)["failed"] != float64(2) {
		t.Fatalf("per-device-type counts: %v", byType)
	}
	if r := e.do(app, client, "GET", "/1.1/notifications/shared", ""); r.Status != 403 {
		t.Fatalf("records with the app key: %d, want 403", r.Status)
	}
	if r := e.do(app, master, "GET", "/1.1/notifications/nope", ""); r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("unknown notification: %d %s", r.Status, r.Body)
	}

	list := e.do(app, master, "GET", "/1.1/notifications?count=1&limit=1&where="+url.QueryEscape(`{"prod":"prod"}`), "").JSON(t)
	res := list["results"].([]any)
	if list["count"] != float64(2) || len(res) != 1 || res[0].(map[string]any)["objectId"] != oids[1] {
		t.Fatalf("list where prod, newest first, limit 1: %v", list)
	}
	asc := e.do(app, master, "GET", "/1.1/notifications?order=createdAt&skip=1", "").JSON(t)["results"].([]any)
	if len(asc) != 2 || asc[0].(map[string]any)["objectId"] != oids[1] {
		t.Fatalf("order=createdAt skip=1: %v", asc)
	}
	if r := e.do(app, master, "GET", "/1.1/notifications?where=%7B", ""); r.Status != 400 {
		t.Fatalf("bad where: %d", r.Status)
	}

	// Delete: the in-process push is cancelled and both records go.
	if r := e.do(app, master, "DELETE", "/1.1/notifications/shared", ""); r.Status != 200 || string(r.Body) != "{}" {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	for _, oid := range oids[:2] {
		if r := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oid, ""); r.Status != 404 {
			t.Fatalf("record %s after delete: %d", oid, r.Status)
		}
	}
	if r := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oids[2], ""); r.Status != 200 {
		t.Fatalf("other record after delete: %d", r.Status)
	}
	// Another app cannot see this app's records.
	other := e.newApp(nil)
	if r := e.do(other, master, "GET", "/1.1/tables/Notifications/"+oids[2], ""); r.Status != 404 {
		t.Fatalf("cross-app record read: %d", r.Status)
	}
}

// The sweeper's 7-day retention, seen through the API: a finished push's record leaves the
// listing 7 days after it finished; a scheduled push's record stays.
func TestPushRecordsSweptSevenDaysAfterFinishing(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	ctx := context.Background()
	sent := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"a"}}`).JSON(t)["objectId"].(string)
	later := e.clock().Add(10 * 24 * time.Hour).Format(time.RFC3339)
	sched := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"b"},"push_time":"`+later+`"}`).JSON(t)["objectId"].(string)
	if _, err := e.st.UpdateNotification(ctx, app.ID, sent, func(n *push.Notification) error {
		n.Status, n.UpdatedAt = push.StatusDone, e.clock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	listed := func() []string {
		var ids []string
		for _, r := range e.do(app, master, "GET", "/1.1/notifications", "").JSON(t)["results"].([]any) {
			ids = append(ids, r.(map[string]any)["objectId"].(string))
		}
		return ids
	}
	if got := listed(); len(got) != 2 {
		t.Fatalf("before the sweep: %v", got)
	}
	now := e.clock().Add(push.RecordRetention + time.Minute)
	w := api.NewSweeper(api.SweeperConfig{Now: func() time.Time { return now }}, e.st, nil, nil)
	if s, err := w.SweepOnce(ctx); err != nil || s.Records != 1 {
		t.Fatalf("sweep: %+v, %v", s, err)
	}
	if got := listed(); len(got) != 1 || got[0] != sched {
		t.Fatalf("after the sweep: %v, want only the scheduled push %s", got, sched)
	}
	if r := e.do(app, master, "GET", "/1.1/tables/Notifications/"+sent, ""); r.Status != 404 {
		t.Fatalf("swept record by objectId: %d", r.Status)
	}
}

// limit, skip, order, keys and count of GET /1.1/notifications follow the installation query's
// rules (api.ParseListParams): a limit outside 0..1000 is the default 100, not an error.
func TestPushRecordsListParamsLikeInstallationQuery(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	ctx := context.Background()
	t0 := e.clock()
	const total = 101
	for i := range total {
		n := push.Notification{ObjectID: fmt.Sprintf("rec%03d", i), AppID: app.ID, NotificationID: fmt.Sprintf("n%d", i),
			Status: push.StatusDone, CreatedAt: t0.Add(time.Duration(i) * time.Second), Data: json.RawMessage(`{}`),
			PushTime: t0.Add(time.Duration(total-i) * time.Minute)}
		if err := e.st.CreateNotificationNoSync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	list := func(params string) (ids []string, count any) {
		t.Helper()
		r := e.do(app, master, "GET", "/1.1/notifications?"+params, "")
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", params, r.Status, r.Body)
		}
		m := r.JSON(t)
		for _, x := range m["results"].([]any) {
			ids = append(ids, x.(map[string]any)["objectId"].(string))
		}
		return ids, m["count"]
	}
	for _, c := range []struct {
		params string
		n      int
	}{
		{"", 100}, {"limit=-1", 100}, {"limit=1001", 100}, {"limit=99999999999999999999", 400},
		{"limit=1000", total}, {"limit=5", 5}, {"limit=0", 0},
	} {
		if c.n == 400 { // not an int: the installation parser refuses it
			if r := e.do(app, master, "GET", "/1.1/notifications?"+c.params, ""); r.Status != 400 || r.Code(t) != int(push.CodeInvalidQuery) {
				t.Errorf("%s: %d %s, want 400 code 300", c.params, r.Status, r.Body)
			}
			continue
		}
		if ids, _ := list(c.params); len(ids) != c.n {
			t.Errorf("%s: %d results, want %d", c.params, len(ids), c.n)
		}
	}
	if ids, count := list("limit=0&count=1"); len(ids) != 0 || count != float64(total) {
		t.Errorf("limit=0&count=1: %d results, count %v", len(ids), count)
	}
	if ids, count := list("limit=2&count=true"); len(ids) != 2 || count != float64(total) {
		t.Errorf("count=true: %d results, count %v", len(ids), count)
	}
	// A where's relative times count from the request's clock, here t0: records created
	// more than a minute after it are rec061..rec100.
	if ids, _ := list("limit=1000&where=" + url.QueryEscape(`{"createdAt":{"$gt":{"$relativeTime":"in 1 min"}}}`)); len(ids) != total-61 || ids[len(ids)-1] != "rec061" {
		t.Errorf("createdAt after in 1 min: %d results %v", len(ids), ids)
	}
	// Newest first by default; skip pages through that order.
	if ids, _ := list("limit=2&skip=1"); len(ids) != 2 || ids[0] != "rec099" || ids[1] != "rec098" {
		t.Errorf("default order with skip: %v", ids)
	}
	if ids, _ := list("limit=1&order=createdAt"); len(ids) != 1 || ids[0] != "rec000" {
		t.Errorf("order=createdAt: %v", ids)
	}
	if ids, _ := list("limit=1&order=,createdAt,"); len(ids) != 1 || ids[0] != "rec000" { // empty entries skipped
		t.Errorf("order=,createdAt,: %v", ids)
	}
	// Record fields the installation name rule would refuse are fine in order and keys.
	if ids, _ := list("limit=1&order=push-time"); len(ids) != 1 || ids[0] != "rec100" {
		t.Errorf("order=push-time: %v", ids)
	}
	r := e.do(app, master, "GET", "/1.1/notifications?limit=1&keys=status,push-time", "")
	if got := r.JSON(t)["results"].([]any)[0].(map[string]any); len(got) != 5 || got["status"] != push.StatusDone || got["push-time"] == nil {
		t.Errorf("keys=status,push-time: %v", got)
	}
	for _, bad := range []string{"limit=abc", "limit=1.5", "skip=-1", "skip=10001", "skip=x", "order=-"} {
		r := e.do(app, master, "GET", "/1.1/notifications?"+bad, "")
		want := int(push.CodeInvalidQuery)
		if strings.HasPrefix(bad, "order") {
			want = int(push.CodeInvalidKeyName)
		}
		if r.Status != 400 || r.Code(t) != want {
			t.Errorf("%s: %d %s, want 400 code %d", bad, r.Status, r.Body, want)
		}
		if m := r.JSON(t); m["error"] == "" || m["error"] == nil {
			t.Errorf("%s: no error text: %s", bad, r.Body)
		}
	}
}
