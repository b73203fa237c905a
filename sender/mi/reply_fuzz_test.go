package mi

import (
	"bytes"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

// FuzzMiReply: any reply gets a known outcome with a reason, never drops a token (Xiaomi
// names no dead regId in its send reply), and parks the app on quota only for an error reply
// whose data names the daily quota.
func FuzzMiReply(f *testing.F) {
	f.Add(200, []byte(`{"result":"ok","code":0,"trace_id":"Xcm1","data":{"id":"scm1"}}`))
	f.Add(200, []byte(`{"result":"error","code":21301,"reason":"Invalid application secret."}`))
	f.Add(200, []byte(`{"result":"error","code":10017,"reason":"bad"}`))
	f.Add(503, []byte(``))
	f.Add(200, []byte(`{"result":"ok"}`))
	f.Add(200, []byte(`{"result":"error","code":200001,"reason":"Daily quota exceeded.","data":{"day_quota":"100"}}`))
	f.Add(200, []byte(`{"result":"error","code":200001,"data":"x"}`))
	f.Add(200, []byte(`{"result":"ok","code":0,"data":{"id":"scm1","day_quota":"100","day_acked":"3"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		r := classify(status, body, "")
		if r.Kind < gateway.KindSent || r.Kind > gateway.KindQuota || r.Kind == gateway.KindInvalidToken || r.Kind == gateway.KindAuth {
			t.Fatalf("kind %v", r.Kind)
		}
		// encoding/json matches keys without regard to case: "dAY_quotA" is day_quota.
		if r.Kind == gateway.KindQuota && (status != 200 || !bytes.Contains(bytes.ToLower(body), []byte("quota"))) {
			t.Fatalf("quota from %d %s", status, body)
		}
		if r.Kind != gateway.KindSent && r.Reason == "" {
			t.Fatalf("%v without a reason", r.Kind)
		}
	})
}

func TestMiReplyTable(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   gateway.Kind
	}{
		{200, `{"result":"ok","code":0}`, gateway.KindSent},
		{200, `{"result":"error","code":21301}`, gateway.KindCredentials},
		{200, `{"result":"error","code":200001}`, gateway.KindFailed},
		{200, `{"result":"error","code":200001,"data":{"day_quota":"100"}}`, gateway.KindQuota},
		{200, `{"result":"error","code":22000,"data":{"channel_exceed_quota":1}}`, gateway.KindQuota},
		{200, `{"result":"error","code":22000,"data":{"day_quota":null}}`, gateway.KindFailed},
		{200, `{"result":"error","code":22000,"data":[1]}`, gateway.KindFailed},
		{200, `{"result":"ok","code":0,"data":{"day_quota":"100"}}`, gateway.KindSent},
		{503, ``, gateway.KindRetry},
		{200, `{"result":"ok"}`, gateway.KindRetry},
		{200, `garbage`, gateway.KindRetry},
		{500, `{"code":0}`, gateway.KindRetry},
		{404, ``, gateway.KindRetry},
	}
	for _, c := range cases {
		if r := classify(c.status, []byte(c.body), ""); r.Kind != c.want {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, r.Kind, c.want)
		}
	}
}

func TestMiCredentials(t *testing.T) {
	for _, bad := range []string{`{}`, `{"_default":{"appSecret":"s"}}`, `{"_default":{"appSecret":"s","packageName":"a,b"}}`,
		`{"_default":{"appSecret":"s","packageName":"p","region":"mars"}}`} {
		if ParseCredentials([]byte(bad)) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := ParseCredentials([]byte(`{"_default":{"appSecret":"s","packageName":"com.x","region":"global"}}`)); err != nil {
		t.Fatal(err)
	}
}
