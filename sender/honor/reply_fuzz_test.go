package honor

import (
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

// FuzzHonorReply: any reply gives every token exactly one known outcome with a reason; a
// token is dropped only when the gateway says all are invalid or lists it in expireTokens.
func FuzzHonorReply(f *testing.F) {
	f.Add(200, []byte(`{"code":200,"message":"success","data":{"sendResult":true,"requestId":"1"}}`))
	f.Add(200, []byte(`{"code":"80000000","message":"success"}`))
	f.Add(200, []byte(`{"code":200,"data":{"failTokens":["a"],"expireTokens":["b"]}}`))
	f.Add(200, []byte(`{"code":80100000,"data":{"expireTokens":["c"]}}`))
	f.Add(200, []byte(`{"code":80300007,"message":"all invalid"}`))
	f.Add(401, []byte(`{"code":"80200003","message":"expired"}`))
	f.Add(400, []byte(`{"code":80100003`))
	f.Add(503, []byte(`traffic control`))
	f.Add(500, []byte(`{"code":200}`))
	f.Add(200, []byte(`{"code":"80300099"}`))
	f.Add(200, []byte(`{"code":1e400}`))
	tokens := []string{"a", "b", "c"}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		out := make([]gateway.Reply, len(tokens))
		classify(status, body, "", tokens, out, []string{"80300099"})
		var r sendReply
		_ = json.Unmarshal(body, &r) // as classify reads it, partly filled on an error
		allDead := r.code() == CodeAllInvalid
		for i, rep := range out {
			if rep.Kind < gateway.KindSent || rep.Kind > gateway.KindQuota {
				t.Fatalf("token %d: unknown kind %v", i, rep.Kind)
			}
			if rep.Kind != gateway.KindSent && rep.Reason == "" {
				t.Fatalf("token %d: %v without a reason", i, rep.Kind)
			}
			if rep.Kind == gateway.KindInvalidToken && !allDead && (r.Data == nil || !contains(r.Data.ExpireTokens, tokens[i])) {
				t.Fatalf("token %d dropped though the reply does not name it: %s", i, body)
			}
		}
	})
}

func contains(ts []string, t string) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func TestHonorReplyTable(t *testing.T) {
	tokens := []string{"a", "b"}
	sent, dead, retry, fix := gateway.KindSent, gateway.KindInvalidToken, gateway.KindRetry, gateway.KindFailed
	auth, creds, quota := gateway.KindAuth, gateway.KindCredentials, gateway.KindQuota
	cases := []struct {
		status int
		body   string
		want   [2]gateway.Kind
	}{
		{200, `{"code":200,"message":"success","data":{"sendResult":true}}`, [2]gateway.Kind{sent, sent}},
		{200, `{"code":"200"}`, [2]gateway.Kind{sent, sent}},
		{200, `{"code":"80000000"}`, [2]gateway.Kind{sent, sent}},
		{200, `{"code":200,"data":{"expireTokens":["b"]}}`, [2]gateway.Kind{sent, dead}},
		{200, `{"code":200,"data":{"failTokens":["a"],"expireTokens":["b"]}}`, [2]gateway.Kind{retry, dead}},
		{200, `{"code":80100000,"data":{"expireTokens":["a"]}}`, [2]gateway.Kind{dead, sent}},
		{200, `{"code":80300007}`, [2]gateway.Kind{dead, dead}},
		{401, `{"code":80200001}`, [2]gateway.Kind{auth, auth}},
		{401, `{"code":"80200003"}`, [2]gateway.Kind{auth, auth}},
		{400, `{"code":80300010}`, [2]gateway.Kind{fix, fix}},
		{400, `{"code":80300008}`, [2]gateway.Kind{fix, fix}},
		{400, `{"code":80100003}`, [2]gateway.Kind{fix, fix}},
		{403, `{"code":80300002}`, [2]gateway.Kind{creds, creds}},
		{400, `{"code":80600003}`, [2]gateway.Kind{creds, creds}},
		{500, `{"code":81000001}`, [2]gateway.Kind{retry, retry}},
		{200, `{"code":80300099}`, [2]gateway.Kind{quota, quota}},
		{500, `{"code":200}`, [2]gateway.Kind{retry, retry}},
		{502, ``, [2]gateway.Kind{retry, retry}},
		{503, `traffic control`, [2]gateway.Kind{retry, retry}},
		{401, ``, [2]gateway.Kind{auth, auth}},
		{200, `{}`, [2]gateway.Kind{retry, retry}},
		{400, `{"code":89999999}`, [2]gateway.Kind{fix, fix}},
	}
	for _, c := range cases {
		out := make([]gateway.Reply, 2)
		classify(c.status, []byte(c.body), "", tokens, out, []string{"80300099"})
		if out[0].Kind != c.want[0] || out[1].Kind != c.want[1] {
			t.Errorf("%d %s: got %v %v, want %v", c.status, c.body, out[0].Kind, out[1].Kind, c.want)
		}
	}
	// Without the quota code configured, an unknown code fails the request (no park).
	out := make([]gateway.Reply, 2)
	classify(200, []byte(`{"code":80300099}`), "", tokens, out, nil)
	if out[0].Kind != gateway.KindFailed {
		t.Errorf("unconfigured quota code: %v", out[0].Kind)
	}
}
