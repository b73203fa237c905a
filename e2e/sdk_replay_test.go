package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The original service's identity of the migrated app in these tests: an app id of its
// north-China shape and the keys of its REST guide's signing example.
const (
	origAppID     = "FFnN2hso42Wego3pWq4X5qlu-gzGzoHsz"
	origAppKey    = "UtOCzqb67d3sN12Kts4URwy8"
	origMasterKey = "DyJegPlemooo4X1tg94gQkw1"
	e2eAdminToken = "e2e-admin-token-0123456789"
)

// createOriginalApp runs `pushd app create --id` on data with the original keys in the
// environment, as an app owner moving an app does, and returns its output.
func createOriginalApp(t *testing.T, data string) string {
	t.Helper()
	out, _, err := runPushd(t, []string{"PUSHD_APP_KEY=" + origAppKey, "PUSHD_MASTER_KEY=" + origMasterKey},
		"app", "create", "--data", data, "--name", "moved", "--id", origAppID)
	if err != nil {
		t.Fatalf("pushd app create --id: %v\n%s", err, out)
	}
	return out
}

// TestE2EAppCreateOriginalIdentity: `pushd app create --id` takes the keys from the
// environment only, refuses ids and keys not of the original's shape, never prints the keys,
// and never overwrites an app.
func TestE2EAppCreateOriginalIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: builds and runs the real binary")
	}
	data := t.TempDir()
	for _, c := range []struct {
		name string
		env  []string
		id   string
		want string
	}{
		{"no keys in the environment", nil, origAppID, "PUSHD_APP_KEY"},
		{"id of pushd's shape", []string{"PUSHD_APP_KEY=" + origAppKey, "PUSHD_MASTER_KEY=" + origMasterKey}, "0123456789abcdefghijABCDEFGHIJ01", "not an id of the original service"},
		{"short master key", []string{"PUSHD_APP_KEY=" + origAppKey, "PUSHD_MASTER_KEY=" + origMasterKey[:20]}, origAppID, "master key is not a key of the original service"},
	} {
		out, _, err := runPushd(t, append([]string{"PUSHD_APP_KEY=", "PUSHD_MASTER_KEY="}, c.env...), "app", "create", "--data", data, "--name", "moved", "--id", c.id)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: err %v, output %q: want a failure saying %q", c.name, err, out, c.want)
		}
	}
	out := createOriginalApp(t, data)
	if strings.Contains(out, origAppKey) || strings.Contains(out, origMasterKey) || !strings.Contains(out, origAppID) {
		t.Errorf("app create output %q: want the id and neither key", out)
	}
	out, _, err := runPushd(t, []string{"PUSHD_APP_KEY=AAAAAAAAAAAAAAAAAAAAAAAA", "PUSHD_MASTER_KEY=BBBBBBBBBBBBBBBBBBBBBBBB"},
		"app", "create", "--data", data, "--name", "again", "--id", origAppID)
	if err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("second create of the same id: err %v, output %q: want already exists", err, out)
	}
	// The first keys still hold.
	p := startPushd(t, data)
	r := replayer{t: t, base: p.base}
	ans := r.send(&sdkRequest{name: "check", method: "GET", path: "/1.1/installations", auth: masterSign, header: javaHeaders})
	if ans.status != 200 {
		t.Fatalf("master-signed list after a refused re-create: %d %s", ans.status, ans.body)
	}
}

// Credentials a recorded request carries, as its SDK computes them (X-LC-Sign is
// md5(timestamp+key),timestamp[,master], request.js sign / GeneralRequestSignature.java /
// LCPaasClient.m signatureHeaderFieldValue).
const (
	appSign     = "app-sign"
	masterSign  = "master-sign"
	appKey      = "app-key"
	masterKey   = "master-key" // X-LC-Key: <master>,master
	avosMaster  = "avos-master-key"
	adminBearer = "admin"
)

// Headers each SDK adds to every request besides its credentials.
var (
	// leancloud-storage 4.15.2, src/request.js setHeaders (Node build: User-Agent, not X-LC-UA).
	jsHeaders = map[string]string{"Content-Type": "application/json;charset=UTF-8", "User-Agent": "LeanCloud-JS-SDK/4.15.2 (Node.js/v20.20.2)"}
	// java-unified-sdk, core/.../core/RequestPaddingInterceptor.java: X-LC-Prod from
	// AVCloud.isProductionMode() (default true: "1"), Accept and Content-Type on every request.
	javaHeaders = map[string]string{"X-LC-Prod": "1", "Accept": "application/json", "Content-Type": "application/json", "User-Agent": "LeanCloud-Java-SDK/8.2.24"}
	// objc-sdk, AVOS/Sources/Foundation/Network/LCPaasClient.m requestWithPath: JSON bodies,
	// X-LC-Prod only when the app set a production mode.
	// swift-sdk, Sources/Storage/HTTPClient.swift: X-LC-Id, X-LC-Sign, JSON bodies.
	swiftHeaders = map[string]string{"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "LeanCloud-Swift-SDK/17.11.0"}
	objcHeaders  = map[string]string{"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "LeanCloud-Objective-C-SDK/13.9.0"}
)

// sdkRequest is one request an original SDK makes for installations or push, rebuilt from the
// SDK's source: method, path and query, headers and body as the SDK serialises them.
type sdkRequest struct {
	name   string
	from   string // the SDK source file (and function) it is recorded from
	method string
	path   string // may hold {{oid:<save name>}} and {{appId}}
	auth   string
	header map[string]string
	body   string // may hold {{oid:<save name>}} and {{now}} (the current time, as the SDKs fill push_time)
	status int
	code   int    // the error code, when status is not 2xx
	save   string // remember the answer's objectId under this name
	check  func(t *testing.T, ans map[string]any, r *replayer)
	// batchCheck checks a /1.1/batch answer: one {"success": ...} or {"error": ...} each.
	batchCheck func(t *testing.T, ans []map[string]map[string]any, r *replayer)
}

// replayer sends recorded requests to a running pushd and keeps the objectIds they created.
type replayer struct {
	t    *testing.T
	base string
	oids map[string]string
}

type replayAnswer struct {
	status int
	body   []byte
}

var placeholder = regexp.MustCompile(`\{\{(oid:[a-z0-9-]+|now|appId)\}\}`)

func (r *replayer) fill(s string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		k := m[2 : len(m)-2]
		switch {
		case k == "now":
			return time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		case k == "appId":
			return origAppID
		}
		oid, ok := r.oids[strings.TrimPrefix(k, "oid:")]
		if !ok {
			r.t.Fatalf("no objectId saved as %q yet", k)
		}
		return oid
	})
}

func lcSign(key string, master bool) string {
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	sum := md5.Sum([]byte(ts + key))
	s := hex.EncodeToString(sum[:]) + "," + ts
	if master {
		s += ",master"
	}
	return s
}

func (r *replayer) send(q *sdkRequest) replayAnswer {
	r.t.Helper()
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(r.fill(q.body))
	}
	req, err := http.NewRequest(q.method, r.base+r.fill(q.path), body)
	if err != nil {
		r.t.Fatal(err)
	}
	for k, v := range q.header {
		req.Header.Set(k, v)
	}
	switch q.auth {
	case adminBearer:
		req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	case avosMaster:
		req.Header.Set("X-AVOSCloud-Application-Id", origAppID)
		req.Header.Set("X-AVOSCloud-Master-Key", origMasterKey)
	default:
		req.Header.Set("X-LC-Id", origAppID)
		switch q.auth {
		case appSign:
			req.Header.Set("X-LC-Sign", lcSign(origAppKey, false))
		case masterSign:
			req.Header.Set("X-LC-Sign", lcSign(origMasterKey, true))
		case appKey:
			req.Header.Set("X-LC-Key", origAppKey)
		case masterKey:
			req.Header.Set("X-LC-Key", origMasterKey+",master")
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s: %v", q.name, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatalf("%s: %v", q.name, err)
	}
	return replayAnswer{status: res.StatusCode, body: b}
}

// run sends q and checks its answer.
func (r *replayer) run(q *sdkRequest) {
	r.t.Helper()
	ans := r.send(q)
	var m map[string]any
	_ = json.Unmarshal(ans.body, &m)
	if ans.status != q.status {
		r.t.Errorf("%s (%s): status %d %s, want %d", q.name, q.from, ans.status, ans.body, q.status)
		return
	}
	if q.code != 0 {
		if c, _ := m["code"].(float64); int(c) != q.code {
			r.t.Errorf("%s (%s): %s, want code %d", q.name, q.from, ans.body, q.code)
		}
		return
	}
	if q.save != "" {
		oid, _ := m["objectId"].(string)
		if oid == "" {
			r.t.Fatalf("%s (%s): answer %s has no objectId", q.name, q.from, ans.body)
		}
		r.oids[q.save] = oid
	}
	if q.check != nil {
		q.check(r.t, m, r)
	}
	if q.batchCheck != nil {
		var arr []map[string]map[string]any
		if err := json.Unmarshal(ans.body, &arr); err != nil {
			r.t.Fatalf("%s (%s): batch answer %s: %v", q.name, q.from, ans.body, err)
		}
		q.batchCheck(r.t, arr, r)
	}
}

// The installations the recorded requests register.
const (
	jsInstallationID   = "7c0b3d1e-5a2f-4c8e-9b61-2f4d5e6a7b8c"                             // AV._getInstallationId: uuid v4
	javaInstallationID = "0f6e1c2b3a4d5e6f708192a3b4c5d6e7"                                 // LCInstallation.genInstallationId: md5 hex
	iosToken           = "5c1ad8e4c0b3e2f1a0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7" // LCInstallation.m hexadecimalStringFromData: lowercase
	swiftToken         = "0e1d2c3b4a59687766554433221100ffeeddccbbaa99887766554433221100ff"
	hmsToken           = "IQAAAACy0kYJAAAAAAjwbVtAgB1HnRFEGzxsQ5nK7lFBbW-EXAMPLE"
	objcInternalID     = "3F2504E0-4F89-11D3-9A0C-0305E82C3301" // LCObject._uuid, sent as body.__internalId
)

// sdkRequests lists every request the original SDKs make for installations and push, in an
// order that replays a device's life: register, subscribe, query, push, unsubscribe,
// delete. docs/migration.md ("Identity and SDKs") lists the same requests.
var sdkRequests = []sdkRequest{
	// ---- JavaScript SDK: leancloud-storage 4.15.2 (the npm package the jssdk test drives) ----
	{name: "js-create", from: "leancloud-storage src/object.js save (POST, route classes) via src/request.js _request",
		method: "POST", path: "/1.1/classes/_Installation", auth: appSign, header: jsHeaders,
		body:   `{"deviceType":"android","installationId":"` + jsInstallationID + `","channels":["news"],"timeZone":"Asia/Shanghai"}`,
		status: 201, save: "js",
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if m["createdAt"] == nil {
				t.Errorf("js-create answer %v: want createdAt", m)
			}
		}},
	{name: "js-update-fetch-when-save", from: "leancloud-storage src/object.js save: PUT with query new=true for options.fetchWhenSave, an AddUnique op from addUnique()",
		method: "PUT", path: "/1.1/classes/_Installation/{{oid:js}}?new=true", auth: appSign, header: jsHeaders,
		body: `{"channels":{"__op":"AddUnique","objects":["sports"]},"badge":{"__op":"Increment","amount":1},"deviceProfile":"huawei_prod","valid":true}`, status: 200,
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if ch, _ := m["channels"].([]any); len(ch) != 2 || m["badge"] != float64(1) || m["installationId"] != jsInstallationID || m["updatedAt"] == nil {
				t.Errorf("js fetchWhenSave answer %v: want the whole stored installation", m)
			}
		}},
	{name: "js-fetch", from: "leancloud-storage src/object.js fetch: GET classes/<class>/<id> with transformFetchOptions (keys, include)",
		method: "GET", path: "/1.1/classes/_Installation/{{oid:js}}?keys=channels,timeZone&include=owner", auth: appSign, header: jsHeaders, status: 200,
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if m["objectId"] == nil || m["timeZone"] != "Asia/Shanghai" {
				t.Errorf("js fetch %v", m)
			}
		}},
	{name: "js-query", from: "leancloud-storage src/query.js find: _createRequest GET /classes/<class> with _getParams (where, limit, order, keys)",
		method: "GET", path: "/1.1/classes/_Installation?where=" + urlQ(`{"channels":"sports"}`) + "&limit=10&order=-updatedAt&keys=channels", auth: masterSign, header: jsHeaders, status: 200,
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if rs, _ := m["results"].([]any); len(rs) != 1 {
				t.Errorf("js query results %v: want the one installation on sports", m)
			}
		}},
	{name: "js-count", from: "leancloud-storage src/query.js count: params.limit = 0, params.count = 1",
		method: "GET", path: "/1.1/classes/_Installation?where=" + urlQ(`{"deviceType":"android"}`) + "&limit=0&count=1", auth: masterSign, header: jsHeaders, status: 200,
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if m["count"] != float64(1) {
				t.Errorf("js count %v: want 1", m)
			}
		}},
	{name: "js-long-query-batch", from: "leancloud-storage src/query.js _createRequest: a query whose URL passes 2000 characters goes as one GET in POST /batch",
		method: "POST", path: "/1.1/batch", auth: masterSign, header: jsHeaders,
		body:   `{"requests":[{"method":"GET","path":"/1.1/classes/_Installation","params":{"where":{"installationId":{"$in":["` + jsInstallationID + `","` + strings.Repeat("x", 1990) + `"]}},"limit":100}}]}`,
		status: 200,
		batchCheck: func(t *testing.T, arr []map[string]map[string]any, _ *replayer) {
			if rs, _ := arr[0]["success"]["results"].([]any); len(arr) != 1 || len(rs) != 1 {
				t.Errorf("batch GET answer %v: want one success with the JS installation", arr)
			}
		}},
	{name: "js-save-all", from: "leancloud-storage src/object.js AV.Object.saveAll -> _deepSaveAsync: POST /batch with one POST classes/<class> per unsaved object",
		method: "POST", path: "/1.1/batch", auth: appSign, header: jsHeaders,
		body: `{"requests":[{"method":"POST","path":"/1.1/classes/_Installation","body":{"deviceType":"android","installationId":"c0ffee00-0000-4000-8000-00000000000a","channels":["news"]}},` +
			`{"method":"POST","path":"/1.1/classes/_Installation","body":{"deviceType":"android","installationId":"c0ffee00-0000-4000-8000-00000000000b","channels":["news"]}}]}`,
		status: 200,
		batchCheck: func(t *testing.T, arr []map[string]map[string]any, r *replayer) {
			for i, name := range []string{"js-a", "js-b"} {
				oid, _ := arr[i]["success"]["objectId"].(string)
				if len(arr) != 2 || oid == "" {
					t.Fatalf("saveAll answer %v: want two successes with objectIds", arr)
				}
				r.oids[name] = oid
			}
		}},
	{name: "js-push", from: "leancloud-storage src/push.js AV.Push.send: POST /push (service push) with the caller's data, where from query._getParams().where, push_time via toJSON",
		method: "POST", path: "/1.1/push", auth: masterSign, header: jsHeaders,
		body:   `{"channels":["sports"],"data":{"alert":"Kick-off in 10 minutes","badge":"Increment"},"expiration_interval":86400,"prod":"dev"}`,
		status: 200, save: "js-push"},
	{name: "js-push-where", from: "leancloud-storage src/push.js AV.Push.send with data.where an AV.Query",
		method: "POST", path: "/1.1/push", auth: masterSign, header: jsHeaders,
		body:   `{"where":{"deviceType":"android","channels":{"$in":["news"]}},"data":{"alert":"Morning briefing","title":"News"}}`,
		status: 200},

	// ---- Java/Android SDK: java-unified-sdk (LCInstallation, LCPush; old AVInstallation alike) ----
	{name: "java-create", from: "java-unified-sdk core/.../service/APIService.java saveWholeObject POST /1.1/{endpointClass}; LCInstallation.java initialize (installationId, deviceType, timeZone), totallyOverwrite with fetchWhenSave",
		method: "POST", path: "/1.1/installations?fetchWhenSave=true", auth: appSign, header: javaHeaders,
		body:   `{"deviceType":"android","installationId":"` + javaInstallationID + `","timeZone":"Asia/Shanghai"}`,
		status: 201, save: "java",
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if m["installationId"] != javaInstallationID || m["timeZone"] != "Asia/Shanghai" || m["createdAt"] == nil {
				t.Errorf("java fetchWhenSave create %v: want the whole stored installation", m)
			}
		}},
	{name: "java-mixpush-register", from: "java-unified-sdk android-sdk/mixpush-hms .../LCMixPushManager.java: registrationId and vendor put on the current installation, saved whole (LCObject.generateChangedParam)",
		method: "POST", path: "/1.1/installations?fetchWhenSave=true", auth: appSign, header: javaHeaders,
		body:   `{"deviceType":"android","installationId":"` + javaInstallationID + `","timeZone":"Asia/Shanghai","registrationId":"` + hmsToken + `","vendor":"HMS","deviceProfile":"huawei_prod"}`,
		status: 200,
		check: func(t *testing.T, m map[string]any, r *replayer) {
			if m["objectId"] != r.oids["java"] || m["vendor"] != "HMS" {
				t.Errorf("java mixpush upsert %v: want the same installation with the vendor", m)
			}
		}},
	{name: "java-subscribe", from: "java-unified-sdk APIService.java saveWholeObject PUT /1.1/{endpointClass}/{objectId}: PushService.subscribe adds to channels, whole object without objectId/createdAt/updatedAt",
		method: "PUT", path: "/1.1/installations/{{oid:java}}?fetchWhenSave=true", auth: appSign, header: javaHeaders,
		body:   `{"deviceType":"android","installationId":"` + javaInstallationID + `","timeZone":"Asia/Shanghai","registrationId":"` + hmsToken + `","vendor":"HMS","deviceProfile":"huawei_prod","channels":["news","sports"]}`,
		status: 200},
	{name: "java-query", from: "java-unified-sdk APIService.java queryObjects GET /1.1/classes/{className} with QueryConditions.assembleParameters (where, limit, skip, order, include, keys)",
		method: "GET", path: "/1.1/classes/_Installation?where=" + urlQ(`{"vendor":"HMS"}`) + "&limit=100&skip=0&order=createdAt", auth: masterSign, header: javaHeaders, status: 200,
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if rs, _ := m["results"].([]any); len(rs) != 1 {
				t.Errorf("java query %v: want the HMS installation", m)
			}
		}},
	{name: "java-fetch-whole", from: "java-unified-sdk APIService.java getWholeObject GET /1.1/{endpointClass}/{objectId}",
		method: "GET", path: "/1.1/installations/{{oid:java}}", auth: appSign, header: javaHeaders, status: 200},
	{name: "java-push-client-off", from: "java-unified-sdk core/.../core/PushService.java sendPushRequest POST /1.1/push (app-key signature); LCPush.java postDataMap",
		method: "POST", path: "/1.1/push", auth: appSign, header: javaHeaders,
		body:   `{"channels":["news"],"data":{"alert":"hello"}}`,
		status: 403, code: 119},
	{name: "admin-allow-client-push", from: "not an SDK request: the owner allows client push, as it was allowed on the original",
		method: "PUT", path: "/admin/apps/{{appId}}", auth: adminBearer, header: map[string]string{"Content-Type": "application/json"},
		body: `{"settings":{"clientPush":true}}`, status: 200},
	{name: "java-push", from: "java-unified-sdk LCPush.java postDataMap: where from pushQuery.assembleParameters (deviceType when one target), push_time + expiration_interval, flow_control, prod, topic, apns_team_id, notification_id",
		method: "POST", path: "/1.1/push", auth: appSign, header: javaHeaders,
		body:   `{"where":{"deviceType":"android"},"push_time":"{{now}}","expiration_interval":3600,"flow_control":1000,"prod":"prod","notification_id":"news0001","data":{"alert":"hello","title":"News","silent":false}}`,
		status: 200},
	{name: "java-push-channels", from: "java-unified-sdk LCPush.java setChannels/setMessage: channels, data {alert}",
		method: "POST", path: "/1.1/push", auth: appSign, header: javaHeaders,
		body: `{"channels":["sports"],"data":{"alert":"goal!"}}`, status: 200},

	// ---- Objective-C SDK: objc-sdk (LCInstallation, LCPush) ----
	{name: "objc-register", from: "objc-sdk AVOS/Sources/Foundation/Object/LCObject.m saveWithOption -> buildSaveRequests/sendBatchRequest POST /1.1/batch/save; Push/LCInstallation.m init (deviceType, timeZone, apnsTopic) and setDeviceTokenHexString:teamId:",
		method: "POST", path: "/1.1/batch/save", auth: appSign, header: objcHeaders,
		body:   `{"requests":[{"method":"POST","path":"/1.1/installations","body":{"deviceType":"ios","deviceToken":"` + iosToken + `","apnsTeamId":"7J5XJ6FRC4","apnsTopic":"com.example.news","timeZone":"Asia/Shanghai","badge":0,"__internalId":"` + objcInternalID + `"}}]}`,
		status: 200,
		check: func(t *testing.T, m map[string]any, r *replayer) {
			res, _ := m[objcInternalID].(map[string]any)
			oid, _ := res["objectId"].(string)
			if oid == "" {
				t.Fatalf("objc batch/save answer %v: want an object keyed by __internalId with the objectId", m)
			}
			r.oids["objc"] = oid
		}},
	{name: "objc-subscribe", from: "objc-sdk Push/LCPush.m subscribeToChannel (addUniqueObject:forKey:channels) -> LCInstallation.m postProcessBatchRequests (objectId, deviceToken, apnsTeamId, deviceType, timeZone, apnsTopic into the body), then LCObject.m sendBatchRequest: PUT <myObjectPath> once the objectId is known",
		method: "POST", path: "/1.1/batch/save", auth: appSign, header: objcHeaders,
		body:   `{"requests":[{"method":"PUT","path":"/1.1/installations/{{oid:objc}}","body":{"channels":{"__op":"AddUnique","objects":["news","sports"]},"objectId":"{{oid:objc}}","deviceToken":"` + iosToken + `","apnsTeamId":"7J5XJ6FRC4","deviceType":"ios","timeZone":"Asia/Shanghai","apnsTopic":"com.example.news","__internalId":"{{oid:objc}}"},"params":{"fetchWhenSave":true}}]}`,
		status: 200,
		check: func(t *testing.T, m map[string]any, r *replayer) {
			res, _ := m[r.oids["objc"]].(map[string]any)
			if ch, _ := res["channels"].([]any); len(ch) != 2 {
				t.Errorf("objc subscribe answer %v: want the installation keyed by its objectId, with both channels (fetchWhenSave)", m)
			}
		}},
	{name: "objc-badge", from: "objc-sdk Push/LCInstallation.m setBadge (addSetRequest badge) in the form postProcessBatchRequests gives it (POST /1.1/installations with the objectId), which older SDK versions send as is",
		method: "POST", path: "/1.1/batch/save", auth: appSign, header: objcHeaders,
		body:   `{"requests":[{"method":"POST","path":"/1.1/installations","body":{"badge":0,"deviceProfile":"ios_prod","objectId":"{{oid:objc}}","deviceToken":"` + iosToken + `","apnsTeamId":"7J5XJ6FRC4","deviceType":"ios","timeZone":"Asia/Shanghai","apnsTopic":"com.example.news","__internalId":"{{oid:objc}}"}}]}`,
		status: 200},
	{name: "objc-subscribed-channels", from: "objc-sdk Push/LCPush.m getSubscribedChannelsWithBlock: an app-key query on deviceToken (the original also needs the master key to query installations)",
		method: "GET", path: "/1.1/classes/_Installation?where=" + urlQ(`{"deviceToken":"`+iosToken+`"}`), auth: appSign, header: objcHeaders,
		status: 403, code: 119},
	{name: "objc-push-query", from: "objc-sdk Push/LCPush.m postData with a query: prod, where as the query's JSON text (LCQuery assembleParameters whereString), data",
		method: "POST", path: "/1.1/push", auth: appSign, header: objcHeaders,
		body:   `{"prod":"dev","where":"{\"channels\":\"news\",\"deviceType\":\"ios\"}","data":{"alert":"Breaking","sound":"default","badge":"Increment"}}`,
		status: 200},
	{name: "objc-push-targets", from: "objc-sdk Push/LCPush.m postData with channels and setPushToIOS: where {deviceType: {$in: targets}}, expiration_time",
		method: "POST", path: "/1.1/push", auth: appSign, header: objcHeaders,
		body:   `{"prod":"prod","channels":["sports"],"where":{"deviceType":{"$in":["ios"]}},"expiration_time":"2099-01-01T00:00:00.000Z","data":{"alert":"Final score"}}`,
		status: 200},
	{name: "objc-unsubscribe", from: "objc-sdk Push/LCPush.m unsubscribeFromChannel: removeObject:forKey:channels, saved as above",
		method: "POST", path: "/1.1/batch/save", auth: appSign, header: objcHeaders,
		body:   `{"requests":[{"method":"POST","path":"/1.1/installations","body":{"channels":{"__op":"Remove","objects":["sports"]},"objectId":"{{oid:objc}}","deviceToken":"` + iosToken + `","apnsTeamId":"7J5XJ6FRC4","deviceType":"ios","timeZone":"Asia/Shanghai","apnsTopic":"com.example.news","__internalId":"{{oid:objc}}"}}]}`,
		status: 200},

	// ---- Swift SDK: swift-sdk (LCInstallation, LCPush) ----
	{name: "swift-register", from: "swift-sdk Sources/Storage/ObjectUpdater.swift save -> POST batch/save; BatchRequest.swift jsonValue (new: true, body.__internalId); DataType/Installation.swift initialize (timeZone, apnsTopic, deviceType)",
		method: "POST", path: "/1.1/batch/save", auth: appSign, header: swiftHeaders,
		body:   `{"requests":[{"path":"/1.1/installations","method":"POST","new":true,"body":{"__internalId":"swift-internal-1","deviceType":"ios","timeZone":"Europe/Paris","apnsTopic":"com.example.swift","deviceToken":"` + swiftToken + `","apnsTeamId":"7J5XJ6FRC4"}}]}`,
		status: 200,
		check: func(t *testing.T, m map[string]any, r *replayer) {
			res, _ := m["swift-internal-1"].(map[string]any)
			oid, _ := res["objectId"].(string)
			if oid == "" {
				t.Fatalf("swift batch/save answer %v: want an object keyed by __internalId", m)
			}
			r.oids["swift"] = oid
		}},
	{name: "swift-subscribe", from: "swift-sdk BatchRequest.swift: a known object's operations as PUT <eigenEndpoint> with body.__internalId = objectId (ObjectUpdater.updateObjects matches the answer by objectId)",
		method: "POST", path: "/1.1/batch/save", auth: appSign, header: swiftHeaders,
		body:   `{"requests":[{"path":"/1.1/installations/{{oid:swift}}","method":"PUT","body":{"__internalId":"{{oid:swift}}","channels":{"__op":"AddUnique","objects":["news"]},"badge":3}}]}`,
		status: 200,
		check: func(t *testing.T, m map[string]any, r *replayer) {
			if res, _ := m[r.oids["swift"]].(map[string]any); res["updatedAt"] == nil {
				t.Errorf("swift subscribe answer %v: want the update keyed by objectId", m)
			}
		}},
	{name: "swift-push-query", from: "swift-sdk Sources/Storage/Push.swift send: prod, data, the query's lconValue merged in (className, where, and order/limit when set), push_time with expiration_interval",
		method: "POST", path: "/1.1/push", auth: appSign, header: swiftHeaders,
		body:   `{"prod":"dev","data":{"alert":"Bonjour"},"className":"_Installation","where":{"timeZone":"Europe/Paris"},"order":"-updatedAt","limit":1000,"push_time":"{{now}}","expiration_interval":7200}`,
		status: 200},
	{name: "swift-push-channels", from: "swift-sdk Sources/Storage/Push.swift send with channels, expiration_time (LCDate.stringFromDate)",
		method: "POST", path: "/1.1/push", auth: appSign, header: swiftHeaders,
		body:   `{"prod":"prod","data":{"alert":"Salut"},"channels":["news"],"expiration_time":"2099-06-01T12:00:00.000Z"}`,
		status: 200},

	// ---- Older SDKs and REST clients of the original: X-AVOSCloud-* headers ----
	{name: "avoscloud-query", from: "older AVOSCloud SDKs and REST clients: X-AVOSCloud-Application-Id with X-AVOSCloud-Master-Key (the original's LeanEngine SDKs read them: leanengine-node-sdk middleware, leanengine-java-sdk EndpointParser)",
		method: "GET", path: "/1.1/installations?where=" + urlQ(`{"deviceType":"ios"}`), auth: avosMaster, header: map[string]string{"Content-Type": "application/json"}, status: 200,
		check: func(t *testing.T, m map[string]any, _ *replayer) {
			if rs, _ := m["results"].([]any); len(rs) != 2 {
				t.Errorf("avoscloud query %v: want the two iOS installations (Objective-C, Swift)", m)
			}
		}},

	// ---- Deletes last ----
	{name: "js-destroy-all", from: "leancloud-storage src/object.js AV.Object.destroyAll: POST /batch with one DELETE classes/<class>/<id>,<id> per class",
		method: "POST", path: "/1.1/batch", auth: masterSign, header: jsHeaders,
		body:   `{"requests":[{"method":"DELETE","path":"/1.1/classes/_Installation/{{oid:js-a}},{{oid:js-b}}","body":{}}]}`,
		status: 200,
		batchCheck: func(t *testing.T, arr []map[string]map[string]any, _ *replayer) {
			if len(arr) != 1 || arr[0]["success"] == nil {
				t.Errorf("destroyAll answer %v: want one success", arr)
			}
		}},
	{name: "js-destroy", from: "leancloud-storage src/object.js destroy: DELETE classes/<class>/<id> with the object's _flags ({}) as body",
		method: "DELETE", path: "/1.1/classes/_Installation/{{oid:js}}", auth: masterSign, header: jsHeaders, body: `{}`, status: 200},
	{name: "java-delete-whole", from: "java-unified-sdk APIService.java deleteWholeObject DELETE /1.1/{endpointClass}/{objectId}",
		method: "DELETE", path: "/1.1/installations/{{oid:java}}", auth: masterKey, header: javaHeaders, status: 200},
}

func urlQ(s string) string {
	r := strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D", `"`, "%22", ":", "%3A", ",", "%2C", "[", "%5B", "]", "%5D", "$", "%24", " ", "%20", "+", "%2B")
	return r.Replace(s)
}

// TestE2ESDKReplay replays every installation and push request of the original SDKs, as
// their sources build them, against the real pushd serving the app under its original
// identity, and checks what they leave stored.
func TestE2ESDKReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: builds and runs the real binary")
	}
	data := t.TempDir()
	createOriginalApp(t, data)
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	p := startPushd(t, data)
	r := &replayer{t: t, base: p.base, oids: map[string]string{}}
	for i := range sdkRequests {
		q := &sdkRequests[i]
		r.run(q)
		if q.name == "objc-unsubscribe" {
			// What the iOS device's installation holds now: every field the SDK saves.
			ans := r.send(&sdkRequest{method: "GET", path: "/1.1/installations/{{oid:objc}}", auth: masterSign, header: objcHeaders})
			var m map[string]any
			_ = json.Unmarshal(ans.body, &m)
			want := map[string]any{"deviceType": "ios", "deviceToken": iosToken, "apnsTeamId": "7J5XJ6FRC4", "apnsTopic": "com.example.news",
				"timeZone": "Asia/Shanghai", "deviceProfile": "ios_prod"}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("iOS installation %s = %v, want %v (%s)", k, m[k], v, ans.body)
				}
			}
			// badge was saved as 0; the push with "badge":"Increment" may have raised it since.
			if b, ok := m["badge"].(float64); !ok || b < 0 || b > 1 {
				t.Errorf("iOS installation badge %v, want 0 or 1", m["badge"])
			}
			if ch, _ := m["channels"].([]any); len(ch) != 1 || ch[0] != "news" {
				t.Errorf("iOS installation channels %v, want [news]", m["channels"])
			}
			for _, k := range []string{"__internalId", "__children"} {
				if _, ok := m[k]; ok {
					t.Errorf("iOS installation stored the SDK's %s: %s", k, ans.body)
				}
			}
		}
	}
	// Every push the SDKs sent is a record of the app (the master key reads them).
	ans := r.send(&sdkRequest{method: "GET", path: "/1.1/notifications?limit=100", auth: masterSign, header: javaHeaders})
	var recs struct{ Results []map[string]any }
	if err := json.Unmarshal(ans.body, &recs); err != nil || ans.status != 200 {
		t.Fatalf("notifications: %d %s", ans.status, ans.body)
	}
	pushes := 0
	for i := range sdkRequests {
		if sdkRequests[i].path == "/1.1/push" && sdkRequests[i].status == 200 {
			pushes++
		}
	}
	if len(recs.Results) != pushes {
		t.Errorf("%d push records, want %d (one per accepted SDK push): %s", len(recs.Results), pushes, ans.body)
	}
	if !bytes.Contains(ans.body, []byte(r.oids["js-push"])) {
		t.Errorf("push records %s lack the JavaScript SDK's push %s", ans.body, r.oids["js-push"])
	}
}
