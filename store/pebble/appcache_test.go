package pebble

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// The app cache hands out copies: a caller changing the app it got changes nothing for the
// next reader. cloneApp copies Credentials only, so every other field of push.App must be a
// value (comparable: no map, slice or pointer inside); a field added that is not fails here.
// A write is seen by the next read, and the cache holds what Pebble holds.
func TestStoreAppCacheCopies(t *testing.T) {
	typ := reflect.TypeOf(push.App{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name != "Credentials" && !f.Type.Comparable() {
			t.Errorf("push.App.%s (%s) is not a value: cloneApp must copy it", f.Name, f.Type)
		}
	}

	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	app := push.App{ID: "a1", Name: "one", AppKey: "k", MasterKey: "m", Settings: push.DefaultSettings(),
		Credentials: map[string]json.RawMessage{"apns": json.RawMessage(`{"keyId":"1"}`)}, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateApp(ctx, app); err != nil {
		t.Fatal(err)
	}
	first, err := s.GetApp(ctx, "a1") // from Pebble, cached
	if err != nil {
		t.Fatal(err)
	}
	first.Credentials["fcm"] = json.RawMessage(`{}`)
	first.Name = "changed by a reader"
	second, err := s.GetApp(ctx, "a1") // from the cache
	if err != nil {
		t.Fatal(err)
	}
	if second.Name != "one" || len(second.Credentials) != 1 {
		t.Errorf("a reader's change reached the cache: %+v", second)
	}
	second.Name, second.Settings.CallsPerMinute = "two", 1200
	if err := s.PutApp(ctx, second); err != nil {
		t.Fatal(err)
	}
	third, err := s.GetApp(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if third.Name != "two" || third.Settings.CallsPerMinute != 1200 {
		t.Errorf("the app read after a write is %+v, want the written one", third)
	}
	fromCache, err := s.GetApp(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	fromCache.Credentials["apns"] = json.RawMessage(`{"keyId":"changed"}`)
	if again, err := s.GetApp(ctx, "a1"); err != nil || string(again.Credentials["apns"]) != `{"keyId":"1"}` {
		t.Errorf("a change to a cached app's credentials reached the cache: %s, %v", again.Credentials["apns"], err)
	}
	s2 := closeReopen(t, s, dir)
	fromDisk, err := s2.GetApp(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromDisk, third) {
		t.Errorf("app from Pebble alone %+v, through the cache %+v", fromDisk, third)
	}
}
