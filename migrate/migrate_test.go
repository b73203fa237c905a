package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/loadtest/scansim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// openApp opens a real Pebble store on a temporary directory with one app of 16 buckets.
func openApp(t testing.TB) (*pebble.Store, push.App) {
	t.Helper()
	return openAppIn(t, t.TempDir())
}

// openAppIn is openApp with the store in dir.
func openAppIn(t testing.TB, dir string) (*pebble.Store, push.App) {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	name, buckets := "imported", 16
	app, perr, err := api.CreateApp(context.Background(), st, api.AppRequest{Name: &name, Settings: &api.SettingsRequest{Buckets: &buckets}}, time.Now())
	if perr != nil || err != nil {
		t.Fatalf("CreateApp: %v %v", perr, err)
	}
	return st, app
}

// stored reads every stored document of app, by objectId.
func stored(t testing.TB, st *pebble.Store, app push.App) map[string]map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(context.Background(), st, app, &buf, nil); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		out[m["objectId"].(string)] = m
	}
	return out
}

// checkRows says whether the store holds exactly the valid rows of the simulator's config,
// each with its objectId, dates and custom fields as the original served them.
func checkRows(t *testing.T, got map[string]map[string]any, cfg *scansim.Config, row func(i int) map[string]any) {
	t.Helper()
	want := 0
	for i := 0; i < cfg.Rows; i++ {
		if !cfg.Valid(i) {
			if _, ok := got[scansim.ObjectID(i)]; ok {
				t.Errorf("invalid row %d was stored", i)
			}
			continue
		}
		want++
		r := row(i)
		g, ok := got[scansim.ObjectID(i)]
		if !ok {
			t.Errorf("valid row %d (%s) is missing", i, scansim.ObjectID(i))
			continue
		}
		for _, f := range []string{"createdAt", "updatedAt", "deviceType", "appVersion"} {
			if g[f] != r[f] {
				t.Errorf("row %d: %s is %v, want %v", i, f, g[f], r[f])
			}
		}
		for _, f := range []string{"owner", "lastSeen", "ACL", "channels"} {
			gb, _ := json.Marshal(g[f])
			wb, _ := json.Marshal(r[f])
			if !bytes.Equal(gb, wb) {
				t.Errorf("row %d: %s is %s, want %s", i, f, gb, wb)
			}
		}
	}
	if len(got) != want {
		t.Errorf("%d installations stored, want exactly the %d valid rows", len(got), want)
	}
}
