package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

func freshInst(oid, iid string) push.Installation {
	r := push.Route{ObjectID: oid, DeviceType: push.DeviceAndroid, InstallationID: iid, Channels: []string{"news"}, UpdatedAt: time.Now().UnixMilli()}
	doc, _ := json.Marshal(map[string]any{"objectId": oid, "deviceType": push.DeviceAndroid, "installationId": iid, "channels": r.Channels})
	return push.Installation{Route: r, CreatedAt: r.UpdatedAt, Doc: doc}
}

// TestStoreFreshWritesSkipOnlyTheObjectRead checks the intake's writes under an objectId
// just generated: PutNewInstallation writes an installation found by its device id and
// channel like PutInstallation's, still refuses a device id another installation holds,
// and CreateNewNotificationNoSync writes a readable record, while CreateNotificationNoSync
// (the adopted-claim path) still refuses an existing one.
func TestStoreFreshWritesSkipOnlyTheObjectRead(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.PutNewInstallation(ctx, "app", 4, freshInst("o1", "dev-1")); err != nil {
		t.Fatal(err)
	}
	if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "dev-1"); err != nil || oid != "o1" {
		t.Fatalf("LookupDevice = %q, %v; want o1", oid, err)
	}
	got, err := s.GetInstallation(ctx, "app", "o1")
	if err != nil || got.InstallationID != "dev-1" {
		t.Fatalf("GetInstallation = %+v, %v", got.Route, err)
	}
	if err := s.PutNewInstallation(ctx, "app", 4, freshInst("o2", "dev-1")); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("PutNewInstallation of a held device id = %v, want ErrDuplicate", err)
	}
	if _, err := s.GetInstallation(ctx, "app", "o2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused installation was written: %v", err)
	}
	// An update through PutInstallation still finds and replaces the stored version.
	up := freshInst("o1", "dev-1")
	up.Channels = []string{"sports"}
	if err := s.PutInstallation(ctx, "app", 4, up); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetInstallation(ctx, "app", "o1"); len(got.Channels) != 1 || got.Channels[0] != "sports" {
		t.Fatalf("channels after update %v", got.Channels)
	}

	n := testRecord("r1")
	if err := s.CreateNewNotificationNoSync(ctx, n); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.GetNotification(ctx, "app", "r1"); err != nil || rec.NotificationID != n.NotificationID {
		t.Fatalf("GetNotification = %+v, %v", rec, err)
	}
	if err := s.CreateNotificationNoSync(ctx, n); !errors.Is(err, store.ErrExists) {
		t.Fatalf("CreateNotificationNoSync of an existing record = %v, want ErrExists", err)
	}
}
