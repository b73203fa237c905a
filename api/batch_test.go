package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestBatchInstallations(t *testing.T) {
	e := newEnv(t)
	lc := []string{"X-LC-Id", e.app.ID, "X-LC-Key", e.app.AppKey}
	master := []string{"X-LC-Id", e.app.ID, "X-LC-Key", e.app.MasterKey + ",master"}

	// Two creates, a create with a bad channel, and a path that cannot be batched.
	r := e.do("POST", "/1.1/batch", `{"requests":[
		{"method":"POST","path":"/1.1/classes/_Installation","body":{"deviceType":"android","installationId":"b-1"}},
		{"method":"POST","path":"/1.1/installations","body":{"deviceType":"android","installationId":"b-2","channels":["x"]}},
		{"method":"POST","path":"/1.1/installations","body":{"deviceType":"android","installationId":"b-3","channels":["bad channel"]}},
		{"method":"POST","path":"/1.1/classes/Post","body":{"title":"x"}},
		{"method":"POST","path":"/1.1/batch","body":{"requests":[]}},
		{"method":"GET","path":"/1.1/installations","params":{"where":{"installationId":"b-2"},"count":1}}
	]}`, lc...)
	if r.Status != 200 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	var arr []map[string]map[string]any
	if err := json.Unmarshal(r.Body, &arr); err != nil || len(arr) != 6 {
		t.Fatalf("batch answer %s: %v", r.Body, err)
	}
	for i, want := range []string{"success", "success", "error", "error", "error", "error"} {
		if arr[i][want] == nil {
			t.Errorf("request %d: %v, want %s", i, arr[i], want)
		}
	}
	if arr[2]["error"]["code"] != float64(112) || arr[3]["error"]["code"] != float64(404) || arr[4]["error"]["code"] != float64(404) {
		t.Errorf("codes %v %v %v: want 112 (bad channel), 404 (other class), 404 (nested batch)", arr[2], arr[3], arr[4])
	}
	if arr[5]["error"]["code"] != float64(119) {
		t.Errorf("app-key query in a batch %v: want 119 as alone", arr[5])
	}
	if r.Header.Peek("Location") != nil {
		t.Errorf("batch answer carries a Location header")
	}
	// The same query with the master key, params as the JavaScript SDK sends them.
	r = e.do("POST", "/1.1/batch", `{"requests":[{"method":"GET","path":"/1.1/classes/_Installation","params":{"where":{"installationId":"b-2"},"count":1,"limit":5}}]}`, master...)
	if err := json.Unmarshal(r.Body, &arr); err != nil || arr[0]["success"]["count"] != float64(1) {
		t.Fatalf("master query in a batch: %s", r.Body)
	}
	// destroyAll: one DELETE of comma-joined ids.
	var ids []string
	for _, iid := range []string{"b-1", "b-2"} {
		r = e.do("GET", "/1.1/installations?where="+fmt.Sprintf(`{"installationId":%q}`, iid), "", master...)
		ids = append(ids, r.JSON(t)["results"].([]any)[0].(map[string]any)["objectId"].(string))
	}
	r = e.do("POST", "/1.1/batch", `{"requests":[{"method":"DELETE","path":"/1.1/classes/_Installation/`+strings.Join(ids, ",")+`","body":{}}]}`, lc...)
	if !strings.Contains(string(r.Body), `"code":119`) {
		t.Fatalf("app-key destroyAll: %s, want 119", r.Body)
	}
	r = e.do("POST", "/1.1/batch", `{"requests":[{"method":"DELETE","path":"/1.1/classes/_Installation/`+strings.Join(ids, ",")+`","body":{}}]}`, master...)
	if string(r.Body) != `[{"success":{}}]` {
		t.Fatalf("destroyAll: %s", r.Body)
	}
	if r = e.do("GET", "/1.1/installations?count=1&limit=0", "", master...); r.JSON(t)["count"] != float64(0) {
		t.Fatalf("after destroyAll: %s", r.Body)
	}
}

func TestBatchBadInput(t *testing.T) {
	e := newEnv(t)
	lc := []string{"X-LC-Id", e.app.ID, "X-LC-Key", e.app.AppKey}
	many := strings.Repeat(`{"method":"GET","path":"/1.1/installations/x"},`, maxBatchOps)
	for _, c := range []struct {
		name, body string
		status     int
		code       int
	}{
		{"not an object", `[1]`, 400, 107},
		{"no requests", `{}`, 400, 113},
		{"requests not an array", `{"requests":{}}`, 400, 111},
		{"request without a path", `{"requests":[{"method":"GET"}]}`, 400, 113},
		{"too many", `{"requests":[` + many + `{"method":"GET","path":"/1.1/installations/x"}]}`, 400, 1},
	} {
		for _, path := range []string{"/1.1/batch", "/1.1/batch/save"} {
			r := e.do("POST", path, c.body, lc...)
			if r.Status != c.status || r.Code(t) != c.code {
				t.Errorf("%s on %s: %d %s, want %d code %d", c.name, path, r.Status, r.Body, c.status, c.code)
			}
		}
	}
	r := e.do("POST", "/1.1/batch", `{"requests":[]}`)
	if r.Status != 401 {
		t.Errorf("batch without credentials: %d %s", r.Status, r.Body)
	}
}

// TestBatchSave: the Objective-C SDK's save path. Answers are keyed by __internalId (the
// SDK's uuid) or else the objectId; __internalId and __children are not stored; the first
// failing request answers for the batch.
func TestBatchSave(t *testing.T) {
	e := newEnv(t)
	lc := []string{"X-LC-Id", e.app.ID, "X-LC-Key", e.app.AppKey}
	tok := strings.Repeat("ab", 32)
	r := e.do("POST", "/1.1/batch/save", `{"requests":[{"method":"POST","path":"/1.1/installations","new":true,
		"body":{"deviceType":"ios","deviceToken":"`+tok+`","timeZone":"UTC","__internalId":"U-1","__children":[]}}]}`, lc...)
	res, _ := r.JSON(t)["U-1"].(map[string]any)
	oid, _ := res["objectId"].(string)
	if r.Status != 200 || oid == "" || res["createdAt"] == nil {
		t.Fatalf("batch/save create: %d %s", r.Status, r.Body)
	}
	// A second save names the objectId in the body and in __internalId, asks fetchWhenSave.
	r = e.do("POST", "/1.1/batch/save", `{"requests":[{"method":"POST","path":"/1.1/installations","params":{"fetchWhenSave":true},
		"body":{"channels":{"__op":"AddUnique","objects":["a"]},"objectId":"`+oid+`","deviceType":"ios","deviceToken":"`+tok+`","__internalId":"`+oid+`"}}]}`, lc...)
	res, _ = r.JSON(t)[oid].(map[string]any)
	if r.Status != 200 || res["timeZone"] != "UTC" || fmt.Sprint(res["channels"]) != "[a]" {
		t.Fatalf("batch/save update: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "__internalId") || strings.Contains(string(r.Body), "__children") {
		t.Fatalf("stored the SDK's bookkeeping fields: %s", r.Body)
	}
	// The Objective-C SDK's final form for a known installation: PUT with the objectId in the
	// body too. The same id is no change; another is 117.
	r = e.do("POST", "/1.1/batch/save", `{"requests":[{"method":"PUT","path":"/1.1/installations/`+oid+`",
		"body":{"channels":{"__op":"AddUnique","objects":["b"]},"objectId":"`+oid+`","deviceType":"ios","deviceToken":"`+tok+`","__internalId":"`+oid+`"}}]}`, lc...)
	if res, _ = r.JSON(t)[oid].(map[string]any); r.Status != 200 || res["updatedAt"] == nil {
		t.Fatalf("batch/save PUT with its objectId: %d %s", r.Status, r.Body)
	}
	r = e.do("PUT", "/1.1/installations/"+oid, `{"objectId":"0123456789abcdef01234567"}`, lc...)
	if r.Status != 400 || r.Code(t) != 117 {
		t.Fatalf("PUT with another objectId: %d %s, want 117", r.Status, r.Body)
	}
	// A failing request: its error is the answer.
	r = e.do("POST", "/1.1/batch/save", `{"requests":[{"method":"POST","path":"/1.1/installations","body":{"deviceType":"ios","deviceToken":"nothex","__internalId":"U-2"}}]}`, lc...)
	if r.Status != 400 || r.Code(t) != 114 {
		t.Fatalf("batch/save bad token: %d %s, want 400 code 114", r.Status, r.Body)
	}
	// An objectId not of the objectId shape is still read-only.
	r = e.do("POST", "/1.1/installations", `{"deviceType":"ios","deviceToken":"`+tok+`","objectId":"mine"}`, lc...)
	if r.Status != 400 || r.Code(t) != 117 {
		t.Fatalf("create with objectId mine: %d %s, want 117", r.Status, r.Body)
	}
}

// TestInstallationsOriginalPaths: /1.1/classes/_Installation is the same resource, and
// fetchWhenSave=true / new=true answer the stored document.
func TestInstallationsOriginalPaths(t *testing.T) {
	e := newEnv(t)
	lc := []string{"X-LC-Id", e.app.ID, "X-LC-Key", e.app.AppKey}
	r := e.do("POST", "/1.1/classes/_Installation?fetchWhenSave=true", `{"deviceType":"android","installationId":"p-1","timeZone":"Asia/Shanghai"}`, lc...)
	m := r.JSON(t)
	oid, _ := m["objectId"].(string)
	if r.Status != 201 || m["timeZone"] != "Asia/Shanghai" || m["createdAt"] == nil || !strings.HasSuffix(string(r.Header.Peek("Location")), "/1.1/installations/"+oid) {
		t.Fatalf("create on the class path with fetchWhenSave: %d %s", r.Status, r.Body)
	}
	r = e.do("PUT", "/1.1/classes/_Installation/"+oid+"?new=true", `{"valid":false}`, lc...)
	if m = r.JSON(t); r.Status != 200 || m["valid"] != false || m["installationId"] != "p-1" {
		t.Fatalf("PUT new=true: %d %s", r.Status, r.Body)
	}
	r = e.do("PUT", "/1.1/installations/"+oid+"?fetchWhenSave=false", `{"valid":true}`, lc...)
	if m = r.JSON(t); len(m) != 2 || m["updatedAt"] == nil {
		t.Fatalf("PUT fetchWhenSave=false: %s, want the short answer", r.Body)
	}
	if r = e.do("GET", "/1.1/classes/_Installation/"+oid, "", lc...); r.Status != 200 || r.JSON(t)["valid"] != true {
		t.Fatalf("GET on the class path: %d %s", r.Status, r.Body)
	}
	if r = e.do("DELETE", "/1.1/classes/_Installation/"+oid, "", lc...); r.Status != 403 || r.Code(t) != 119 {
		t.Fatalf("app-key DELETE on the class path: %d %s", r.Status, r.Body)
	}
	if r = e.do("GET", "/1.1/classes/_User", "", lc...); r.Status != 404 {
		t.Fatalf("another class: %d %s", r.Status, r.Body)
	}
}
