package mz

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

// FuzzMzReply: any reply gets a known outcome with a reason for every pushId, and a pushId is
// dropped only when the reply's value map names it under a dead-pushId code.
func FuzzMzReply(f *testing.F) {
	f.Add(200, []byte(`{"code":"200","message":"","value":{},"msgId":"NS1","redirect":""}`))
	f.Add(200, []byte(`{"code":"200","value":{"110002":["a"],"110003":["b"],"501":["c"]}}`))
	f.Add(200, []byte(`{"code":"1006","message":"签名不正确","value":{}}`))
	f.Add(200, []byte(`{"code":110019}`))
	f.Add(503, []byte(``))
	f.Add(200, []byte(`{"code":"200","value":{"110002":"a"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		ids := []string{"a", "b", "c"}
		out := make([]gateway.Reply, len(ids))
		classify(status, body, "", ids, out)
		var r struct {
			Value map[string]json.RawMessage `json:"value"`
		}
		_ = json.Unmarshal(body, &r)
		for i, rep := range out {
			if rep.Kind < gateway.KindSent || rep.Kind > gateway.KindQuota {
				t.Fatalf("kind %v", rep.Kind)
			}
			if rep.Kind != gateway.KindSent && rep.Reason == "" {
				t.Fatalf("%v without a reason", rep.Kind)
			}
			if rep.Kind == gateway.KindInvalidToken {
				named := false
				for _, code := range []string{CodeUnsubscribed, CodeIllegal} {
					var l []string
					if json.Unmarshal(r.Value[code], &l) == nil && slices.Contains(l, ids[i]) {
						named = true
					}
				}
				if !named {
					t.Fatalf("%s dropped without being named: %s", ids[i], body)
				}
			}
		}
	})
}

func TestMzReplyTable(t *testing.T) {
	ids := []string{"a", "b", "c", "d"}
	cases := []struct {
		status int
		body   string
		want   []gateway.Kind
	}{
		{200, `{"code":"200","value":{}}`, []gateway.Kind{gateway.KindSent, gateway.KindSent, gateway.KindSent, gateway.KindSent}},
		{200, `{"code":"200","value":{"110002":["a"],"110003":["b"],"519":["c"]}}`, []gateway.Kind{gateway.KindInvalidToken, gateway.KindInvalidToken, gateway.KindRetry, gateway.KindSent}},
		{200, `{"code":"200","value":{"999":["d"],"110010":["a"]}}`, []gateway.Kind{gateway.KindFailed, gateway.KindSent, gateway.KindSent, gateway.KindFailed}},
		{200, `{"code":"200","value":null}`, []gateway.Kind{gateway.KindSent, gateway.KindSent, gateway.KindSent, gateway.KindSent}},
		{200, `{"code":1003}`, []gateway.Kind{gateway.KindRetry, gateway.KindRetry, gateway.KindRetry, gateway.KindRetry}},
		{200, `{"code":"110000"}`, []gateway.Kind{gateway.KindCredentials, gateway.KindCredentials, gateway.KindCredentials, gateway.KindCredentials}},
		{200, `garbage`, []gateway.Kind{gateway.KindRetry, gateway.KindRetry, gateway.KindRetry, gateway.KindRetry}},
		{200, `{"code":"110019"}`, []gateway.Kind{gateway.KindQuota, gateway.KindQuota, gateway.KindQuota, gateway.KindQuota}},
		{200, `{"code":"110051"}`, []gateway.Kind{gateway.KindQuota, gateway.KindQuota, gateway.KindQuota, gateway.KindQuota}},
		{200, `{"code":110053}`, []gateway.Kind{gateway.KindQuota, gateway.KindQuota, gateway.KindQuota, gateway.KindQuota}},
		{200, `{"code":"110010"}`, []gateway.Kind{gateway.KindRetry, gateway.KindRetry, gateway.KindRetry, gateway.KindRetry}},
		{200, `{"code":"200","value":{"110011":["b"]}}`, []gateway.Kind{gateway.KindSent, gateway.KindFailed, gateway.KindSent, gateway.KindSent}},
		{502, `{"code":"200"}`, []gateway.Kind{gateway.KindRetry, gateway.KindRetry, gateway.KindRetry, gateway.KindRetry}},
	}
	for _, c := range cases {
		out := make([]gateway.Reply, len(ids))
		classify(c.status, []byte(c.body), "", ids, out)
		for i := range ids {
			if out[i].Kind != c.want[i] {
				t.Errorf("%d %s: %s got %v, want %v", c.status, c.body, ids[i], out[i].Kind, c.want[i])
			}
		}
	}
}

func TestMzCredentials(t *testing.T) {
	for _, bad := range []string{`{}`, `{"_default":{"appSecret":"s"}}`, `{"_default":{"appId":"12a","appSecret":"s"}}`,
		`{"_default":{"appId":"1.5","appSecret":"s"}}`, `{"_default":{"appId":"1","appSecret":"s","endpoint":"ftp://x"}}`,
		`{"bad-name":{"appId":"1","appSecret":"s"}}`} {
		if ParseCredentials([]byte(bad)) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, good := range []string{`{"_default":{"appId":"100999","appSecret":"s"}}`, `{"_default":{"appId":100999,"appSecret":"s"},"eu":{"appId":"2","appSecret":"t","endpoint":"https://x"}}`} {
		if err := ParseCredentials([]byte(good)); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
}
