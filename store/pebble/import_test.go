package pebble

import (
	"context"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

func importInst(oid, tok, iid string, updated int64, doc string) push.Installation {
	dt := push.DeviceAndroid
	if tok != "" {
		dt = push.DeviceIOS
	}
	return push.Installation{
		Route:     push.Route{ObjectID: oid, DeviceType: dt, DeviceToken: tok, InstallationID: iid, UpdatedAt: updated, Channels: []string{"c"}},
		CreatedAt: 1,
		Doc:       []byte(doc),
	}
}

func runImport(t *testing.T, s *Store, insts []push.Installation) ([]store.ImportOutcome, []string) {
	t.Helper()
	out := make([]store.ImportOutcome, len(insts))
	by := make([]string, len(insts))
	if err := s.ImportInstallations(context.Background(), "app", 4, insts, out, by); err != nil {
		t.Fatalf("ImportInstallations: %v", err)
	}
	return out, by
}

// TestStoreImportNewestWins: of two versions of an objectId and of two holders of a device
// id, the newest wins, in the import and against the store; the rows left are exactly those
// of a fresh write of the winners; a rerun, and a run in another order, end the same.
func TestStoreImportNewestWins(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	// In the store before the import: o1 (older than its imported version), o2 (newer than its
	// imported version), o3 holding tokA (older than o4, which takes it), o5 holding iidB
	// (newer than o6, which is stale).
	for _, in := range []push.Installation{
		importInst("o1", "", "iid1", 10, `{"v":"o1-store"}`),
		importInst("o2", "", "iid2", 50, `{"v":"o2-store"}`),
		importInst("o3", "aa", "", 10, `{"v":"o3-store"}`),
		importInst("o5", "", "iidb", 50, `{"v":"o5-store"}`),
	} {
		if err := s.PutInstallation(ctx, "app", 4, in); err != nil {
			t.Fatal(err)
		}
	}
	insts := []push.Installation{
		importInst("o1", "", "iid1", 20, `{"v":"o1-new"}`), // 0: stored
		importInst("o2", "", "iid2", 20, `{"v":"o2-old"}`), // 1: kept newer
		importInst("o4", "aa", "", 20, `{"v":"o4"}`),       // 2: stored, o3 deleted
		importInst("o6", "", "iidb", 20, `{"v":"o6"}`),     // 3: stale (o5)
		importInst("o7", "", "iid7", 5, `{"v":"o7-old"}`),  // 4: kept newer (row 5)
		importInst("o7", "", "iid7", 30, `{"v":"o7"}`),     // 5: stored
		importInst("o8", "", "iidx", 30, `{"v":"o8"}`),     // 6: stale (o9, same time, greater id)
		importInst("o9", "", "iidx", 30, `{"v":"o9"}`),     // 7: stored
		importInst("o10", "", "iid10", 1, `{"v":"o10"}`),   // 8: stored
	}
	want := []store.ImportOutcome{store.ImportStored, store.ImportKeptNewer, store.ImportStored, store.ImportStale,
		store.ImportKeptNewer, store.ImportStored, store.ImportStale, store.ImportStored, store.ImportStored}
	out, by := runImport(t, s, insts)
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("row %d (%s): outcome %v (by %q), want %v", i, insts[i].ObjectID, out[i], by[i], want[i])
		}
	}
	if by[3] != "o5" || by[6] != "o9" {
		t.Errorf("stale rows name %q and %q, want o5 and o9", by[3], by[6])
	}
	if _, err := s.GetInstallation(ctx, "app", "o3"); err == nil {
		t.Error("o3, an older registration of tokA, is still stored")
	}

	// The rows equal a fresh write of the final versions.
	fresh := openTest(t)
	for _, in := range []push.Installation{insts[0], importInst("o2", "", "iid2", 50, `{"v":"o2-store"}`), insts[2],
		importInst("o5", "", "iidb", 50, `{"v":"o5-store"}`), insts[5], insts[7], insts[8]} {
		if err := fresh.PutInstallation(ctx, "app", 4, in); err != nil {
			t.Fatal(err)
		}
	}
	got, wantRows := dumpKeys(t, s), dumpKeys(t, fresh)
	if !maps.Equal(got, wantRows) {
		t.Fatalf("rows after import differ from a fresh write of the winners: %d rows, want %d", len(got), len(wantRows))
	}

	// A rerun changes nothing; neither does a run in another order.
	runImport(t, s, insts)
	if !maps.Equal(dumpKeys(t, s), wantRows) {
		t.Fatal("a second run changed the rows")
	}
	shuffled := append([]push.Installation(nil), insts...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	runImport(t, s, shuffled)
	if !maps.Equal(dumpKeys(t, s), wantRows) {
		t.Fatal("a run in another order changed the rows")
	}
}

// TestStoreImportSwappedIDsWaitAPass: an installation that takes a device id another one of
// the same import gives up is written once the other is (no id ends up held by two).
func TestStoreImportSwappedIDsWaitAPass(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.PutInstallation(ctx, "app", 4, importInst("a", "", "iid-old", 10, `{}`)); err != nil {
		t.Fatal(err)
	}
	// b takes iid-old, which a gives up in the same import; b comes first.
	insts := []push.Installation{importInst("b", "", "iid-old", 20, `{}`), importInst("a", "", "iid-new", 20, `{}`)}
	out, _ := runImport(t, s, insts)
	if out[0] != store.ImportStored || out[1] != store.ImportStored {
		t.Fatalf("outcomes %v, want both stored", out)
	}
	oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid-old")
	if err != nil || oid != "b" {
		t.Fatalf("iid-old belongs to %q (%v), want b", oid, err)
	}
}

// TestStoreImportChainSettlesWhateverTheOrder: x (stored) holds a token and an installationId;
// a newer a takes the installationId (x is deleted as stale); an older b wants the token,
// which x held after b: b is stale in either order of a and b.
func TestStoreImportChainSettlesWhateverTheOrder(t *testing.T) {
	tok := "abababababababababababababababababababababababababababababababab"
	a := push.Installation{Route: push.Route{ObjectID: "a", DeviceType: push.DeviceIOS, DeviceToken: strings.Repeat("cd", 32), InstallationID: "iidx", UpdatedAt: 30}, CreatedAt: 1, Doc: []byte(`{}`)}
	b := push.Installation{Route: push.Route{ObjectID: "b", DeviceType: push.DeviceIOS, DeviceToken: tok, UpdatedAt: 10}, CreatedAt: 1, Doc: []byte(`{}`)}
	var rows []map[string]string
	for _, order := range [][]push.Installation{{a, b}, {b, a}} {
		s := openTest(t)
		x := push.Installation{Route: push.Route{ObjectID: "x", DeviceType: push.DeviceIOS, DeviceToken: tok, InstallationID: "iidx", UpdatedAt: 20}, CreatedAt: 1, Doc: []byte(`{}`)}
		if err := s.PutInstallation(context.Background(), "app", 4, x); err != nil {
			t.Fatal(err)
		}
		out, by := runImport(t, s, order)
		for i, in := range order {
			want := store.ImportStored
			if in.ObjectID == "b" {
				want = store.ImportStale
			}
			if out[i] != want {
				t.Errorf("order %s,%s: %s is %v (by %q), want %v", order[0].ObjectID, order[1].ObjectID, in.ObjectID, out[i], by[i], want)
			}
		}
		rows = append(rows, dumpKeys(t, s))
	}
	if !maps.Equal(rows[0], rows[1]) {
		t.Fatal("the two orders left different rows")
	}
}
