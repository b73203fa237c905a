package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// A dead listed id with no installation is remembered (the spec's "later messages to it are
// dropped"), and so is the token of an installation a dead reply deleted; a token whose
// installation registered it again after the reply's timestamp is not.
func TestInvalidateTokenRemembersDeadTokens(t *testing.T) {
	ctx := context.Background()
	st := invalidatorStore(t)
	inv := invalidator{st}
	start := time.Now().Add(-time.Second)
	wantMark := func(id string, want bool) {
		t.Helper()
		since, err := st.DeadToken(ctx, "app1", id)
		switch {
		case want && (err != nil || since.Before(start.Truncate(time.Millisecond))):
			t.Errorf("%s: mark %v, %v; want one set now", id, since, err)
		case !want && !errors.Is(err, store.ErrNotFound):
			t.Errorf("%s: mark %v, %v; want none", id, since, err)
		}
	}

	// Listed, no installation; an APNs timestamp long past still marks it from now.
	if err := inv.InvalidateToken(ctx, "app1", "", "listed-dead", time.Now().Add(-365*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantMark("listed-dead", true)

	tok := "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
	refreshed := time.Now().Add(-time.Minute).Truncate(time.Second)
	inst := push.Installation{
		Route: push.Route{ObjectID: "obj1", DeviceType: push.DeviceIOS, DeviceToken: tok, UpdatedAt: refreshed.UnixMilli()},
		Doc:   []byte(`{"objectId":"obj1","deviceType":"ios","deviceToken":"` + tok + `"}`),
	}
	if err := st.PutInstallation(ctx, "app1", 16, inst); err != nil {
		t.Fatal(err)
	}
	// Registered again after the 410's timestamp: kept, not marked.
	if err := inv.InvalidateToken(ctx, "app1", "", tok, refreshed.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantMark(tok, false)
	// A 410 after the refresh deletes the installation and marks its token.
	if err := inv.InvalidateToken(ctx, "app1", "obj1", tok, refreshed.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetInstallation(ctx, "app1", "obj1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("installation kept: %v", err)
	}
	wantMark(tok, true)
	// Registering the token again forgets it.
	inst.UpdatedAt = time.Now().UnixMilli()
	if err := st.PutInstallation(ctx, "app1", 16, inst); err != nil {
		t.Fatal(err)
	}
	wantMark(tok, false)
}
