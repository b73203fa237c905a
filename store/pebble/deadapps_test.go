package pebble

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// newDeviceBatch builds, without committing, the batch of a new installation of app holding
// deviceToken, and returns how many rows it sets or deletes.
func newDeviceBatch(t *testing.T, s *Store, app, oid, token string) uint32 {
	t.Helper()
	inst := push.Installation{Route: push.Route{ObjectID: oid, DeviceType: push.DeviceIOS, DeviceToken: token, Channels: []string{"news"}, UpdatedAt: 5},
		CreatedAt: 5, Doc: []byte(`{}`)}
	w := s.absence.begin(app)
	defer w.end()
	b, err := s.putInstBatch(w, app, 4, &inst, inst.Route.DeviceIDs(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.Count()
}

// TestStoreDeadMarksClearedOnlyWhereTheyMayBe: a new installation of an app that holds no
// dead-token mark writes no deletion of one (a row fewer than in an app that holds marks); the
// apps holding marks are read back at Open, so a mark written before a restart is still
// cleared when its token is registered again after it.
func TestStoreDeadMarksClearedOnlyWhereTheyMayBe(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range [][2]string{{"marked", "tok-dead"}, {"marked", "tok-dead2"}, {"zed", "tok-z"}} {
		if err := s.MarkDeadToken(ctx, m[0], m[1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	clean, marked := newDeviceBatch(t, s, "clean", "o1", "tok1"), newDeviceBatch(t, s, "marked", "o1", "tok1")
	if marked != clean+1 {
		t.Fatalf("rows of a new installation: %d in an app without marks, %d in one with marks; want one more (the mark's deletion)", clean, marked)
	}

	s = closeReopen(t, s, dir)
	for _, app := range []string{"marked", "zed"} { // the second found past the first's marks
		if got := newDeviceBatch(t, s, app, "o1", "tok1"); got != marked {
			t.Fatalf("after a reopen, rows of a new installation of app %s, which has marks: %d, want %d", app, got, marked)
		}
	}
	if got := newDeviceBatch(t, s, "clean", "o1", "tok1"); got != clean {
		t.Fatalf("after a reopen, rows of a new installation of an app without marks: %d, want %d", got, clean)
	}
	inst := push.Installation{Route: push.Route{ObjectID: "o2", DeviceType: push.DeviceIOS, DeviceToken: "tok-dead", UpdatedAt: 5}, CreatedAt: 5, Doc: []byte(`{}`)}
	if err := s.PutInstallation(ctx, "marked", 4, inst); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeadToken(ctx, "marked", "tok-dead"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the mark of a token registered again after a reopen: %v, want cleared", err)
	}
}
