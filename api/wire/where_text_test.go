package wire

import (
	"testing"

	"github.com/pushd/pushd/push"
)

// TestWirePushWhereAsText: the original's Objective-C SDK sends a query's where as its JSON
// text (LCPush.m postData, LCQuery assembleParameters whereString); it means the same as the
// object. Text that is not a JSON object is refused as a wrong type.
func TestWirePushWhereAsText(t *testing.T) {
	for _, c := range []struct {
		name, body, where string
		code              push.Code
	}{
		{"object", `{"data":{"alert":"a"},"where":{"channels":"news"}}`, `{"channels":"news"}`, 0},
		{"text", `{"data":{"alert":"a"},"where":"{\"channels\":\"news\",\"deviceType\":\"ios\"}"}`, `{"channels":"news","deviceType":"ios"}`, 0},
		{"text with spaces", `{"data":{"alert":"a"},"where":" { \"a\" : 1 } "}`, `{"a":1}`, 0},
		{"text of an array", `{"data":{"alert":"a"},"where":"[1]"}`, "", push.CodeInvalidType},
		{"text not JSON", `{"data":{"alert":"a"},"where":"{channels:news}"}`, "", push.CodeInvalidType},
		{"empty text", `{"data":{"alert":"a"},"where":""}`, "", push.CodeInvalidType},
		{"number", `{"data":{"alert":"a"},"where":1}`, "", push.CodeInvalidType},
	} {
		r, perr := DecodePush([]byte(c.body), cn, "", testNow)
		switch {
		case c.code != 0 && (perr == nil || perr.Code != c.code):
			t.Errorf("%s: %v, want code %d", c.name, perr, c.code)
		case c.code == 0 && perr != nil:
			t.Errorf("%s: refused: %v", c.name, perr)
		case c.code == 0 && string(r.Where) != c.where:
			t.Errorf("%s: where %s, want %s", c.name, r.Where, c.where)
		}
	}
}

// TestWirePushSDKQueryParams: the query parameters the SDKs merge into a query push
// (className, limit, skip, order, include, keys, returnACL) are accepted and do not narrow
// the audience; className must be _Installation; a near miss is still refused as a typo.
func TestWirePushSDKQueryParams(t *testing.T) {
	for _, c := range []struct {
		name, body string
		code       push.Code
	}{
		{"swift query", `{"prod":"dev","data":{"alert":"a"},"className":"_Installation","where":{"a":1},"order":"-updatedAt","limit":10,"skip":0,"include":"owner","keys":"a","returnACL":"true"}`, 0},
		{"null className", `{"data":{"alert":"a"},"className":null}`, 0},
		{"other class", `{"data":{"alert":"a"},"className":"_User","where":{"a":1}}`, push.CodeValidation},
		{"className not a string", `{"data":{"alert":"a"},"className":1}`, push.CodeValidation},
		{"typo of a push parameter", `{"data":{"alert":"a"},"chanels":["x"]}`, push.CodeValidation},
	} {
		r, perr := DecodePush([]byte(c.body), cn, "", testNow)
		switch {
		case c.code != 0 && (perr == nil || perr.Code != c.code):
			t.Errorf("%s: %v, want code %d", c.name, perr, c.code)
		case c.code == 0 && perr != nil:
			t.Errorf("%s: refused: %v", c.name, perr)
		case c.code == 0 && c.name == "swift query" && string(r.Where) != `{"a":1}`:
			t.Errorf("%s: where %s", c.name, r.Where)
		}
	}
}
