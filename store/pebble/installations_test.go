package pebble

import (
	"context"
	"maps"
	"testing"

	"github.com/pushd/pushd/push"
)

// dumpKeys returns every key and value of the store's installation tables.
func dumpKeys(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.iterate([]byte{0}, []byte{0xFF}, func(k, v []byte) error {
		switch k[0] {
		case tInst, tByBucket, tByChannel, tByDevice, tUpdated:
			out[string(k)] = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStorePutInstallationRowsEqualFreshWrite: after any sequence of updates (channels,
// device ids, device type, updatedAt changing within its hour or not), the rows on disk are exactly those a
// single write of the final versions produces: no stale index row is left, none is missing.
func TestStorePutInstallationRowsEqualFreshWrite(t *testing.T) {
	mk := func(oid, dt, tok, iid, rid string, updated int64, doc string, channels ...string) push.Installation {
		return push.Installation{
			Route: push.Route{ObjectID: oid, DeviceType: dt, DeviceToken: tok, InstallationID: iid,
				RegistrationID: rid, Channels: channels, UpdatedAt: updated},
			CreatedAt: 1,
			Doc:       []byte(doc),
		}
	}
	steps := []push.Installation{
		mk("o1", push.DeviceAndroid, "", "iid1", "", 10, `{"v":1}`, "a", "b"),
		mk("o2", push.DeviceIOS, "tok2", "", "", 10, `{"v":1}`, "a"),
		mk("o1", push.DeviceAndroid, "", "iid1", "", 11, `{"v":2}`, "b", "c"),          // channels move
		mk("o1", push.DeviceAndroid, "", "iid1", "", 11, `{"v":3}`, "b", "c"),          // same updatedAt
		mk("o1", push.DeviceAndroid, "", "iid1", "reg1", 12, `{"v":4}`, "c"),           // id added
		mk("o1", push.DeviceIOS, "tok1", "iid1", "", 13, `{"v":5}`),                    // type changes, id swapped
		mk("o2", push.DeviceIOS, "tok2", "iid2", "", 14, `{"v":2}`, "a", "a"),          // duplicate channel
		mk("o1", push.DeviceIOS, "tok1", "iid1", "", 13, `{"v":5}`),                    // identical rewrite
		mk("o2", push.DeviceIOS, "tok2", "iid2", "", updatedSlotMs+7, `{"v":3}`, "a"),  // next hour
		mk("o2", push.DeviceIOS, "tok2", "iid2", "", updatedSlotMs+99, `{"v":4}`, "a"), // same hour
	}
	s := openTest(t)
	final := map[string]push.Installation{}
	for _, in := range steps {
		if err := s.PutInstallation(context.Background(), "app", 4, in); err != nil {
			t.Fatalf("PutInstallation(%s): %v", in.ObjectID, err)
		}
		final[in.ObjectID] = in
	}
	fresh := openTest(t)
	for _, in := range final {
		if err := fresh.PutInstallation(context.Background(), "app", 4, in); err != nil {
			t.Fatal(err)
		}
	}
	got, want := dumpKeys(t, s), dumpKeys(t, fresh)
	if !maps.Equal(got, want) {
		for k, v := range got {
			if w, ok := want[k]; !ok || w != v {
				t.Errorf("extra or different row %q", k)
			}
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("missing row %q", k)
			}
		}
	}
}
