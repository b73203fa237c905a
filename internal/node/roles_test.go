package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// A dead-token reply deletes the installation only while it still has that token: FCM rotates
// tokens, and the old one answers UNREGISTERED after the app stored the new one.
func TestInvalidateTokenKeepsRotatedInstallation(t *testing.T) {
	ctx := context.Background()
	st := invalidatorStore(t)
	inst := push.Installation{
		Route: push.Route{ObjectID: "obj1", DeviceType: push.DeviceAndroid, Vendor: "fcm", RegistrationID: "tok-new", InstallationID: "iid1"},
		Doc:   []byte(`{"objectId":"obj1","deviceType":"android","vendor":"fcm","registrationId":"tok-new","installationId":"iid1"}`),
	}
	if err := st.PutInstallation(ctx, "app1", 16, inst); err != nil {
		t.Fatal(err)
	}
	inv := invalidator{st}
	if err := inv.InvalidateToken(ctx, "app1", "obj1", "tok-old", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetInstallation(ctx, "app1", "obj1"); err != nil {
		t.Fatalf("the old token's UNREGISTERED deleted the installation holding the new one: %v", err)
	}
	if err := inv.InvalidateToken(ctx, "app1", "obj1", "tok-new", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetInstallation(ctx, "app1", "obj1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the current token's dead reply kept the installation: %v", err)
	}
}

// An APNs 410 says since when the token is dead; an installation refreshed after that has
// registered the token again and keeps it (gateways.md: DROP unless re-registered after).
func TestInvalidateTokenKeepsReregisteredInstallation(t *testing.T) {
	ctx := context.Background()
	st := invalidatorStore(t)
	tok := "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
	refreshed := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	inst := push.Installation{
		Route: push.Route{ObjectID: "obj1", DeviceType: push.DeviceIOS, DeviceToken: tok, UpdatedAt: refreshed.UnixMilli()},
		Doc:   []byte(`{"objectId":"obj1","deviceType":"ios","deviceToken":"` + tok + `"}`),
	}
	if err := st.PutInstallation(ctx, "app1", 16, inst); err != nil {
		t.Fatal(err)
	}
	inv := invalidator{st}
	if err := inv.InvalidateToken(ctx, "app1", "obj1", tok, refreshed.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetInstallation(ctx, "app1", "obj1"); err != nil {
		t.Fatalf("a 410 older than the installation's refresh deleted it: %v", err)
	}
	// A 410 of the refresh's own second (apns2 keeps seconds only) may well be later: it counts.
	if err := inv.InvalidateToken(ctx, "app1", "obj1", tok, refreshed.Add(300*time.Millisecond).Truncate(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetInstallation(ctx, "app1", "obj1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a 410 of the second of the installation's refresh kept it: %v", err)
	}
}

// invalidatorStore is a Pebble store, closed when t ends, holding app1 with 16 buckets.
func invalidatorStore(t *testing.T) *pebble.Store {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	app := push.App{ID: "app1"}
	app.Settings.Buckets = 16
	if err := st.CreateApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	return st
}
