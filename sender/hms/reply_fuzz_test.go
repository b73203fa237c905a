package hms

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

// FuzzHMSReply: any reply gives every token exactly one known outcome; a token is dropped
// only when the gateway says all are invalid or names it in a partial success.
func FuzzHMSReply(f *testing.F) {
	f.Add(200, []byte(`{"code":"80000000","msg":"Success","requestId":"1"}`))
	f.Add(200, []byte(`{"code":"80100000","msg":"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"b\"]}","requestId":"1"}`))
	f.Add(200, []byte(`{"code":"80300007","msg":"all invalid"}`))
	f.Add(401, []byte(`{"code":"80200003","msg":"expired"}`))
	f.Add(400, []byte(`{"code":"80100003"`))
	f.Add(503, []byte(`traffic control`))
	f.Add(200, []byte(`{"code":80000000}`))
	tokens := []string{"a", "b", "c"}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		out := make([]gateway.Reply, len(tokens))
		classify(status, body, "", tokens, out)
		for i, r := range out {
			if r.Kind < gateway.KindSent || r.Kind > gateway.KindCredentials {
				t.Fatalf("token %d: unknown kind %v", i, r.Kind)
			}
			if r.Kind != gateway.KindSent && r.Reason == "" {
				t.Fatalf("token %d: %v without a reason", i, r.Kind)
			}
		}
	})
}

func TestHMSReplyTable(t *testing.T) {
	tokens := []string{"a", "b"}
	cases := []struct {
		status int
		body   string
		want   [2]gateway.Kind
	}{
		{200, `{"code":"80000000"}`, [2]gateway.Kind{gateway.KindSent, gateway.KindSent}},
		{200, `{"code":"80100000","msg":"{\"illegal_tokens\":[\"b\"]}"}`, [2]gateway.Kind{gateway.KindSent, gateway.KindInvalidToken}},
		{200, `{"code":"80100000","msg":"not json"}`, [2]gateway.Kind{gateway.KindSent, gateway.KindSent}},
		{200, `{"code":"80300007"}`, [2]gateway.Kind{gateway.KindInvalidToken, gateway.KindInvalidToken}},
		{401, `{"code":"80200001"}`, [2]gateway.Kind{gateway.KindAuth, gateway.KindAuth}},
		{401, `{"code":"80200003"}`, [2]gateway.Kind{gateway.KindAuth, gateway.KindAuth}},
		{400, `{"code":"80300010"}`, [2]gateway.Kind{gateway.KindFailed, gateway.KindFailed}},
		{403, `{"code":"80300002"}`, [2]gateway.Kind{gateway.KindCredentials, gateway.KindCredentials}},
		{400, `{"code":"80600003"}`, [2]gateway.Kind{gateway.KindCredentials, gateway.KindCredentials}},
		{500, `{"code":"81000001"}`, [2]gateway.Kind{gateway.KindRetry, gateway.KindRetry}},
		{200, `{"code":"80100017"}`, [2]gateway.Kind{gateway.KindRetry, gateway.KindRetry}},
		{502, ``, [2]gateway.Kind{gateway.KindRetry, gateway.KindRetry}},
		{200, `{}`, [2]gateway.Kind{gateway.KindRetry, gateway.KindRetry}},
		{400, `{"code":"89999999"}`, [2]gateway.Kind{gateway.KindFailed, gateway.KindFailed}},
	}
	for _, c := range cases {
		out := make([]gateway.Reply, 2)
		classify(c.status, []byte(c.body), "", tokens, out)
		if out[0].Kind != c.want[0] || out[1].Kind != c.want[1] {
			t.Errorf("%d %s: got %v %v, want %v", c.status, c.body, out[0].Kind, out[1].Kind, c.want)
		}
	}
}

func TestHMSCredentials(t *testing.T) {
	for _, bad := range []string{`[]`, `{}`, `{"_default":{}}`, `{"_default":{"appId":"12"}}`, `{"_default":{"appId":"x1","appSecret":"s"}}`,
		`{"9bad":{"appId":"1","appSecret":"s"}}`, `{"_default":{"appId":"1","appSecret":"s","endpoint":"ftp://x"}}`} {
		if err := ParseCredentials([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		} else if strings.Contains(err.Error(), `"s"`) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
	if err := ParseCredentials([]byte(`{"_default":{"appId":"104455667","appSecret":"s"},"beta":{"appId":"2","appSecret":"t"}}`)); err != nil {
		t.Fatal(err)
	}
}
