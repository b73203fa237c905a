package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
)

// fuzzSeeds are real request bodies: the spec's examples and the shapes clients send.
var fuzzSeeds = []string{
	`{"data":{"alert":"Hello"}}`,
	`{"data":{"alert":"See you at 8?","title":"Ana","badge":"Increment","sound":"default","conv":"42"},"channels":["chat"]}`,
	`{"where":{"deviceType":"ios","updatedAt":{"$gt":{"__type":"Date","iso":"2029-01-01T00:00:00.000Z"}}},"data":{"alert":{"title":"T","body":"B","loc-args":["a"]},"sound":{"name":"a.caf","critical":true,"volume":0.8}},"prod":"dev"}`,
	`{"data":{"aps":{"alert":"x","badge":1,"content-available":1},"apns-push-type":"voip","collapse-id":"c","apns-priority":5,"k":[1,{"a":null}]}}`,
	`{"data":{"alert":"def","ios":{"badge":2},"android":{"silent":true,"action":"com.x.ACTION"},"mi":{"title":"m"},"hms":{"target_user_type":1},"vivo":{"pushMode":1},"oppo":{},"mz":{}},"push_time":"2030-01-03T00:00:00Z","expiration_interval":86400,"notification_id":"abc","req_id":"r1","flow_control":2000,"_notificationChannel":"news"}`,
	`{"data":{"content-available":1},"where":{"deviceType":{"$eq":"ios"}},"expiration_time":"2030-02-01T00:00:00Z","topic":"com.example","apns_team_id":"TEAM"}`,
	`{"data":{"alert":"x","fcm":{"silent":true,"k":"v"}},"channels":"体育"}`,
	`{"data":{"alert":"x"},"where":{"$or":[{"a":1},{"b":{"$in":[1,2]}}]},"channels":["a","b"]}`,
	`{"device_type":"ios","device_ids":["5f1c0e9a7b2d4c6e8f0a1b3c5d7e9f11223344556677889900aabbccddeeff00"],"data":{"alert":"x"},"prod":"dev","device_profile":"cert"}`,
	`{"device_type":"android","device_ids":["r1","r2"],"vendor":"vivo","data":{"alert":"x","vivo":{"pushMode":0}},"device_profile":"_default","channel":"c"}`,
	`[]`, `{}`, `null`, `{"data":null}`, ` {"data":{"alert":"x"}} `,
	// Typos and lax JSON, all refused.
	`{"data":{"alert":"x"},"chanels":["x"]}`, `{"data":{"alert":"x"},"cql":"select"}`, `{"Data":{"alert":"x"}}`,
	`{"data":{"alert":"x"},"expiration_intervall":60}`, `{"device_type":"ios","device_ids":["a"],"data":{"alert":"x"},"flow_control":1}`,
	`{"data":{"alert":"x"},"data":{"alert":"y"}}`, `{"data":{"alert":"x","alert":"y"}}`, `{"data":{"alert":"\ud83d"}}`,
	"{\"data\":{\"alert\":\"caf\xe9\"}}", `{"data":{"alert":"x","__proto__":{}}}`, `{"data":{"alert":"x"},"where":{"constructor":1}}`,
	`{"data":{"alert":"x","k":` + strings.Repeat(`[`, 33) + strings.Repeat(`]`, 33) + `}}`,
	`{"data":{"alert":"x","honor":{"alert":"h"}},"push_time":"2030-01-02T03:04:35Z","expiration_interval":60}`,
	`{"device_type":"android","device_ids":["r"],"vendor":"honor","data":{"alert":"x","honor":{"title":"t"}}}`,
}

var fuzzCodes = []push.Code{push.CodeTooLarge, push.CodeInvalidJSON, push.CodeMissingRequired,
	push.CodeInvalidType, push.CodeInvalidChannel, push.CodeValidation}

func fuzzAdd(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
		// Split at odd points: truncated bodies must be refused cleanly.
		f.Add([]byte(s[:len(s)/2]), false)
		f.Add([]byte(s[:len(s)*2/3]), true)
	}
}

func checkRefusal(t *testing.T, perr *push.Error) {
	t.Helper()
	ok := false
	for _, c := range fuzzCodes {
		ok = ok || perr.Code == c
	}
	if !ok || perr.Message == "" {
		t.Fatalf("unexpected error %v", perr)
	}
	if strings.HasPrefix(perr.Message, "data cannot be rendered") {
		t.Fatalf("the validator accepted data render refuses: %v", perr)
	}
}

// checkCommon checks the invariants of every accepted request; listKey is the member the
// body limit leaves out ("" for none).
func checkCommon(t *testing.T, body []byte, c *Common, listKey string) {
	t.Helper()
	size := len(body)
	if listKey != "" {
		var f map[string]json.RawMessage
		_ = json.Unmarshal(body, &f)
		size -= len(f[listKey])
	}
	if size >= MaxBody || len(body) >= MaxDevicesBody {
		t.Fatalf("accepted a %d-byte body (%d counted)", len(body), size)
	}
	if !isKind(c.Data, '{') || !json.Valid(c.Data) {
		t.Fatalf("data not an object: %s", c.Data)
	}
	if c.Prod != "dev" && c.Prod != "prod" {
		t.Fatalf("prod %q", c.Prod)
	}
	if !c.ExpiresAt.IsZero() && !c.ExpiresAt.After(testNow) {
		t.Fatalf("expiry %v not after now", c.ExpiresAt)
	}
	for _, id := range []string{c.NotificationID, c.ReqID} {
		if len(id) > MaxIDLength || !alnum(id) {
			t.Fatalf("bad id %q", id)
		}
	}
}

// checkRenders renders the accepted data for channel: a message or a documented sentinel,
// never malformed data.
func checkRenders(t *testing.T, data json.RawMessage, channel string) {
	t.Helper()
	m, err := render.Render(data, channel, render.Options{Now: testNow})
	switch {
	case err == nil:
		if !json.Valid(m.Body) {
			t.Fatalf("%s body is not JSON: %s", channel, m.Body)
		}
	case errors.Is(err, render.ErrBadData), errors.Is(err, render.ErrUnknownChannel), errors.Is(err, render.ErrExpired):
		t.Fatalf("accepted data does not render for %s: %v (%s)", channel, err, data)
	}
}

func FuzzWireDecodePush(f *testing.F) {
	fuzzAdd(f)
	f.Fuzz(func(t *testing.T, body []byte, intlEd bool) {
		ed := cn
		if intlEd {
			ed = intl
		}
		r, perr := DecodePush(body, ed, "", testNow)
		if perr != nil {
			if r != nil {
				t.Fatal("request and error")
			}
			checkRefusal(t, perr)
			return
		}
		checkCommon(t, body, &r.Common, "")
		if r.Where != nil && (!isKind(r.Where, '{') || !json.Valid(r.Where)) {
			t.Fatalf("where %s", r.Where)
		}
		if mw := r.MergedWhere(); mw != nil && !json.Valid(mw) {
			t.Fatalf("merged where %s", mw)
		}
		for _, ch := range r.Channels {
			if !ValidChannel(ch) {
				t.Fatalf("channel %q", ch)
			}
		}
		if r.FlowControl != 0 && r.FlowControl < MinFlowControl {
			t.Fatalf("flow control %d", r.FlowControl)
		}
		chans := append([]string{push.ChannelAPNs, push.ChannelDirect}, edition(ed).vendors()...)
		for _, ch := range chans {
			checkRenders(t, r.Data, ch)
		}
	})
}

func FuzzWireDecodePushDevices(f *testing.F) {
	fuzzAdd(f)
	f.Fuzz(func(t *testing.T, body []byte, intlEd bool) {
		ed := cn
		if intlEd {
			ed = intl
		}
		r, perr := DecodePushDevices(body, ed, "1", testNow)
		if perr != nil {
			checkRefusal(t, perr)
			return
		}
		checkCommon(t, body, &r.Common, "device_ids")
		if len(r.DeviceIDs) == 0 || len(r.DeviceIDs) > MaxDeviceIDs {
			t.Fatalf("%d ids", len(r.DeviceIDs))
		}
		if r.DeviceType != push.DeviceIOS && r.DeviceType != push.DeviceAndroid {
			t.Fatalf("device type %q", r.DeviceType)
		}
		m, err := render.Render(r.Data, r.DeliveryChannel(), render.Options{Now: testNow})
		if err != nil && !errors.Is(err, render.ErrNoPassThrough) {
			t.Fatalf("accepted devices push does not render: %v", err)
		}
		if err == nil && !json.Valid(m.Body) {
			t.Fatalf("body %s", m.Body)
		}
	})
}

// checkContentQueryRenderAll is checkContentQuery as first written: every candidate channel
// rendered. The fast path must answer exactly as it does.
func checkContentQueryRenderAll(data json.RawMessage, ed push.Edition, pinned string, now time.Time) (bool, *push.Error) {
	var cands []string
	if pinned != push.DeviceAndroid {
		cands = append(cands, push.ChannelAPNs)
	}
	if pinned != push.DeviceIOS {
		cands = append(cands, push.ChannelDirect)
		cands = append(cands, edition(ed).vendors()...)
	}
	anyOK, alertObject := false, false
	for _, ch := range cands {
		v, err := renderVerdict(data, nil, ch, now)
		switch v {
		case verdictOK, verdictTargetsFail:
			anyOK = true
		case verdictAlertObject:
			alertObject = true
		case verdictBug:
			return false, push.Errorf(push.CodeValidation, "data cannot be rendered for %s: %v", ch, err)
		}
	}
	switch {
	case alertObject && pinned == push.DeviceAndroid:
		return false, IOSOnlyError()
	case !anyOK && alertObject:
		return false, IOSOnlyError()
	case !anyOK:
		return false, noContentError("the targeted platforms")
	}
	return alertObject, nil
}

// FuzzWireContentQueryMatchesRenderAll: checkContentQuery (one render shared by the vendors
// without their own object) answers as rendering every candidate does, for both editions and
// every pinned device type.
func FuzzWireContentQueryMatchesRenderAll(f *testing.F) {
	for _, s := range fuzzSeeds {
		var body struct{ Data json.RawMessage }
		if json.Unmarshal([]byte(s), &body) == nil && len(body.Data) > 0 {
			f.Add([]byte(body.Data))
		}
	}
	for _, d := range []string{
		`{"alert":"x","silent":true}`, `{"silent":true}`, `{"alert":{"title":"t"}}`, `{"title":"t"}`,
		`{"alert":"x","mi":null}`, `{"alert":"x","hms":{"silent":true}}`, `{"silent":true,"vivo":{"silent":false}}`,
		`{"alert":"x","oppo":{"alert":{"a":1}}}`, `{"alert":"x","mz":"str"}`, `{"alert":"x","mi":{"k":1},"hms":[1]}`,
		`{"alert":"x","custom":{"a":1},"badge":"Increment"}`, `{"alert":5}`, `{"alert":"x","title":7}`, `[1]`, `{`,
	} {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ed := range []push.Edition{push.EditionChina, push.EditionInternational} {
			for _, pinned := range []string{"", push.DeviceIOS, push.DeviceAndroid} {
				gotIOS, gotErr := checkContentQuery(data, ed, pinned, testNow)
				wantIOS, wantErr := checkContentQueryRenderAll(data, ed, pinned, testNow)
				if gotIOS != wantIOS || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("checkContentQuery(%s, %s, %q) = %v, %v; rendering all = %v, %v", data, ed, pinned, gotIOS, gotErr, wantIOS, wantErr)
				}
				if top, err := object(data); err == nil && top != nil {
					gotIOS, gotErr = checkContentQueryTop(data, top, ed, pinned, testNow)
					if gotIOS != wantIOS || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
						t.Fatalf("checkContentQueryTop(%s, %s, %q) = %v, %v; rendering all = %v, %v", data, ed, pinned, gotIOS, gotErr, wantIOS, wantErr)
					}
				}
			}
		}
	})
}

// FuzzWirePlainStrings holds the decoders that skip encoding/json for the usual tokens to it:
// a string list plainStrings takes is the one json.Unmarshal gives, a string vString takes
// without it is one json.Unmarshal takes, and compact's copy is json.Compact's.
func FuzzWirePlainStrings(f *testing.F) {
	for _, s := range []string{`[]`, `["a","b"]`, `["a" ,"b"]`, `["a",]`, `["\u00e9"]`, `["é","x\n"]`, `"deals"`, `[["a"]]`,
		`["a"]x`, `{"a":[1,2]}`, `{ "a":1}`, "[\"\xff\"]", `["a","b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want []string
		wantErr := json.Unmarshal(raw, &want)
		if got, ok := plainStrings(raw); ok {
			if wantErr != nil || !slices.Equal(got, want) || got == nil || want == nil {
				t.Fatalf("plainStrings(%q) = %q; json.Unmarshal gives %q, %v", raw, got, want, wantErr)
			}
		}
		var s string
		if jsondoc.IsPlainToken(raw) && json.Unmarshal(raw, &s) != nil {
			t.Fatalf("jsondoc.IsPlainToken(%q), which json.Unmarshal refuses", raw)
		}
		if json.Valid(raw) {
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				t.Fatal(err)
			}
			if got := compact(raw); !bytes.Equal(got, b.Bytes()) || (len(raw) > 0 && &got[0] == &raw[0]) {
				t.Fatalf("compact(%q) = %q, want the copy %q", raw, got, b.Bytes())
			}
		}
	})
}
