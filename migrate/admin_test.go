package migrate

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/pushd/pushd/api"
)

// TestMigrateAdminImportEndpoint: POST /admin/apps/<id>/installations/import loads an export
// body through the bulk path and answers the report; the rows are then served by the REST
// API with their original objectId and dates; a broken body gets {code, error} and changes
// nothing.
func TestMigrateAdminImportEndpoint(t *testing.T) {
	st, app := openApp(t)
	srv, err := api.New(api.Config{AdminToken: "admin-token-0123456789"}, api.Deps{Apps: st, Installations: st, Importer: Importer{St: st}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + ln.Addr().String()
	do := func(method, path, body string, hdr ...string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	admin := []string{"Authorization", "Bearer admin-token-0123456789"}
	path := "/admin/apps/" + app.ID + "/installations/import"
	body := `{"objectId":"5f1a2b3c4d5e6f7a8b9c0d1e","createdAt":"2024-02-03T04:05:06.789Z","updatedAt":"2025-01-01T00:00:00.000Z","deviceType":"android","installationId":"iid-1","plan":"gold"}
{"objectId":"bad","createdAt":"2024-02-03T04:05:06.789Z","deviceType":"android"}
`
	if code, _ := do("POST", path, body); code != 401 {
		t.Fatalf("without the admin token: %d, want 401", code)
	}
	code, rep := do("POST", path, body, admin...)
	if code != 200 || rep["stored"] != float64(1) || rep["refused"] != float64(1) {
		t.Fatalf("import: %d %v, want 200 with 1 stored and 1 refused", code, rep)
	}
	code, doc := do("GET", "/1.1/installations/5f1a2b3c4d5e6f7a8b9c0d1e", "", "X-SVC-Id", app.ID, "X-SVC-Key", app.MasterKey+",master")
	if code != 200 || doc["createdAt"] != "2024-02-03T04:05:06.789Z" || doc["plan"] != "gold" {
		t.Fatalf("the imported installation through the API: %d %v", code, doc)
	}
	code, e := do("POST", path+"?format=results", `{"results":[{"objectId":"x1","createdAt":"2024-02-03T04:05:06.789Z","deviceType":"android","installationId":"iid-x1"},`, admin...)
	if code != 400 || e["code"] != float64(107) {
		t.Fatalf("a broken body: %d %v, want 400 code 107", code, e)
	}
	if got := stored(t, st, app); len(got) != 1 {
		t.Fatalf("a broken body changed the store: %d installations", len(got))
	}
	if code, e := do("POST", path+"?format=xml", body, admin...); code != 400 || e["code"] != float64(1) {
		t.Fatalf("an unknown format: %d %v, want 400 code 1", code, e)
	}
}
