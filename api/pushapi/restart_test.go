package pushapi

import (
	"context"
	"testing"

	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store/pebble"
)

// TestPushAcknowledgedJobsSurviveRestart answers pushes, closes everything, reopens the same
// data directory and finds every acknowledged job in push.jobs and every record in the store.
// (queue/embedded's own test covers kill -9 during appends.)
func TestPushAcknowledgedJobsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	e := newEnvAt(t, dir)
	app := e.newApp(nil)
	acked := map[string]bool{}
	for i := 0; i < 50; i++ {
		r := e.do(app, master, "POST", "/1.1/push", okPush)
		if r.Status != 200 {
			t.Fatalf("push %d: %d %s", i, r.Status, r.Body)
		}
		acked[r.JSON(t)["objectId"].(string)] = true
	}
	e.close()

	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := embedded.Open(st.DB(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lg.Close(); _ = st.Close() }()
	re := &env{t: t, st: st, log: lg}
	got := map[string]bool{}
	for _, j := range re.jobs() {
		got[j.NotificationObjectID] = true
		if _, err := st.GetNotification(context.Background(), app.ID, j.NotificationObjectID); err != nil {
			t.Fatalf("record of job %s after restart: %v", j.ID, err)
		}
	}
	for oid := range acked {
		if !got[oid] {
			t.Fatalf("acknowledged push %s has no job after restart", oid)
		}
	}
	if len(got) != len(acked) {
		t.Fatalf("%d jobs after restart, want %d", len(got), len(acked))
	}
}
