package vivo

import (
	"bytes"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

// FuzzVivoReply: any answer gets a known outcome with a reason for every regId, and only a
// regId that the reply names invalid (status 1 or 2) is dropped.
func FuzzVivoReply(f *testing.F) {
	f.Add(200, []byte(`{"result":0,"desc":"请求成功","taskId":"121397329"}`))
	f.Add(200, []byte(`{"result":0,"desc":"ok","taskId":"1","invalidUsers":[{"userid":"a","status":2},{"userid":"b","status":4}]}`))
	f.Add(200, []byte(`{"result":10302,"desc":"x","invalidUser":{"userid":"a","status":1}}`))
	f.Add(200, []byte(`{"result":10070,"desc":"quota"}`))
	f.Add(200, []byte(`{"result":10000}`))
	f.Add(500, []byte(``))
	f.Add(200, []byte(`{"result":0,"invalidUsers":[{"userid":"a","status":1}`))
	ids := []string{"a", "b", "c"}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		out := make([]gateway.Reply, len(ids))
		classifyList(status, body, "", ids, out)
		for i, r := range out {
			if r.Kind < gateway.KindSent || r.Kind > gateway.KindQuota {
				t.Fatalf("kind %v", r.Kind)
			}
			if r.Kind != gateway.KindSent && r.Reason == "" {
				t.Fatalf("%v without a reason", r.Kind)
			}
			// The seeds never name c; an input that does (in any case of the keys: encoding/json
			// matches them so) may drop it.
			if r.Kind == gateway.KindInvalidToken && ids[i] == "c" && !bytes.Contains(body, []byte(`"c"`)) {
				t.Fatalf("regId c dropped though no reply names it: %s", body)
			}
		}
	})
}

func TestVivoReplyTable(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   gateway.Kind
	}{
		{200, `{"result":0,"taskId":"1"}`, gateway.KindSent},
		{200, `{"result":10302,"invalidUser":{"userid":"a","status":1}}`, gateway.KindInvalidToken},
		{200, `{"result":10302,"invalidUser":{"userid":"a","status":2}}`, gateway.KindInvalidToken},
		{200, `{"result":10302,"invalidUser":{"userid":"a","status":4}}`, gateway.KindFailed},
		{200, `{"result":10302}`, gateway.KindFailed},
		{200, `{"result":10050}`, gateway.KindFailed},
		{200, `{"result":10054}`, gateway.KindFailed},
		{200, `{"result":10094}`, gateway.KindCredentials},
		{200, `{"result":10097}`, gateway.KindFailed},
		{200, `{"result":10070}`, gateway.KindQuota},
		{200, `{"result":10252}`, gateway.KindQuota},
		{200, `{"result":10254}`, gateway.KindQuota},
		{200, `{"result":10206}`, gateway.KindCredentials},
		{200, `{"result":10250}`, gateway.KindRetry},
		{200, `{"result":10000}`, gateway.KindAuth},
		{200, `{"result":12345}`, gateway.KindFailed},
		{200, `{"desc":"x"}`, gateway.KindRetry},
		{200, `garbage`, gateway.KindRetry},
		{500, `{"result":0}`, gateway.KindRetry},
		{429, ``, gateway.KindRetry},
		{404, ``, gateway.KindFailed},
	}
	for _, c := range cases {
		if _, r, _ := parse(c.status, []byte(c.body), ""); r.Kind != c.want {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, r.Kind, c.want)
		}
	}
}

func TestVivoCredentials(t *testing.T) {
	for _, bad := range []string{`{}`, `{"_default":{"appId":"1","appKey":"k"}}`, `{"_default":{"appId":"x1","appKey":"k","appSecret":"s"}}`,
		`{"_default":{"appId":"1","appKey":"k","appSecret":"s","endpoint":"ftp://x"}}`} {
		if ParseCredentials([]byte(bad)) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, good := range []string{`{"_default":{"appId":"10004","appKey":"k","appSecret":"s"}}`, `{"_default":{"appId":10004,"appKey":"k","appSecret":"s"}}`} {
		if err := ParseCredentials([]byte(good)); err != nil {
			t.Fatalf("%s: %v", good, err)
		}
	}
	// md5("10004" + "key" + "1700000000000" + "secret"), computed with md5sum.
	if got, want := Sign(" 10004", "key", "1700000000000", "secret "), "c8c535379302fced2a2076f8473068db"; got != want {
		t.Fatalf("sign %q, want %q", got, want)
	}
}
