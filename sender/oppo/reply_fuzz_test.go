package oppo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pushd/pushd/sender/gateway"
)

// FuzzOppoReply: any answer gets a known outcome with a reason for every regId, and a regId is
// dropped only with a configured dead-regId code, in a batch only when the reply names it.
func FuzzOppoReply(f *testing.F) {
	f.Add(200, []byte(`{"code":0,"message":"Success","data":{"messageId":"5c5a"}}`), false)
	f.Add(200, []byte(`{"code":0,"message":"Success","data":[{"messageId":"1","registrationId":"a"},{"registrationId":"b","errorCode":10000,"errorMessage":"Invalid RegistrationId"}]}`), true)
	f.Add(200, []byte(`{"code":10000,"message":"Invalid RegistrationId"}`), false)
	f.Add(200, []byte(`{"code":33,"message":"Exceed Daily Message Limit"}`), true)
	f.Add(200, []byte(`{"code":-2}`), false)
	f.Add(502, []byte(``), true)
	ids := []string{"a", "b", "c"}
	drop := []int{10000}
	f.Fuzz(func(t *testing.T, status int, body []byte, batch bool) {
		n := 1
		if batch {
			n = len(ids)
		}
		out := make([]gateway.Reply, n)
		classify(status, body, "", ids[:n], drop, batch, out)
		for i, r := range out {
			if r.Kind < gateway.KindSent || r.Kind > gateway.KindQuota {
				t.Fatalf("kind %v", r.Kind)
			}
			if r.Kind != gateway.KindSent && r.Reason == "" {
				t.Fatalf("%v without a reason", r.Kind)
			}
			named := bytes.Contains(body, []byte(`"`+ids[i]+`"`)) || bytes.Contains(body, []byte(`\u00`))
			if r.Kind == gateway.KindInvalidToken && (batch && !named || !strings.HasPrefix(r.Reason, "oppo 10000")) {
				t.Fatalf("regId %s dropped: %+v for %s", ids[i], r, body)
			}
		}
	})
}

func TestOppoReplyTable(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   gateway.Kind
	}{
		{200, `{"code":0,"data":{"messageId":"1"}}`, gateway.KindSent},
		{200, `{"code":-1}`, gateway.KindRetry},
		{200, `{"code":-2}`, gateway.KindRetry},
		{200, `{"code":11}`, gateway.KindAuth},
		{200, `{"code":12}`, gateway.KindFailed},
		{200, `{"code":13}`, gateway.KindRetry},
		{200, `{"code":14}`, gateway.KindCredentials},
		{200, `{"code":19}`, gateway.KindCredentials},
		{200, `{"code":22}`, gateway.KindFailed},
		{200, `{"code":26}`, gateway.KindCredentials},
		{200, `{"code":30}`, gateway.KindCredentials},
		{200, `{"code":29}`, gateway.KindFailed},
		{200, `{"code":32}`, gateway.KindFailed},
		{200, `{"code":33}`, gateway.KindQuota},
		{200, `{"code":34}`, gateway.KindFailed},
		{200, `{"code":41}`, gateway.KindFailed},
		{200, `{"code":55}`, gateway.KindRetry},
		{200, `{"code":67}`, gateway.KindFailed},
		{200, `{"code":10000}`, gateway.KindInvalidToken},
		{200, `{"code":10001}`, gateway.KindFailed},
		{200, `{"message":"x"}`, gateway.KindRetry},
		{200, `garbage`, gateway.KindRetry},
		{503, ``, gateway.KindRetry},
		{400, ``, gateway.KindFailed},
	}
	for _, c := range cases {
		out := make([]gateway.Reply, 1)
		if classify(c.status, []byte(c.body), "", []string{"a"}, []int{10000}, false, out); out[0].Kind != c.want {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, out[0].Kind, c.want)
		}
	}
	// A batch item the reply does not list is retried, not counted sent.
	out := make([]gateway.Reply, 2)
	classify(200, []byte(`{"code":0,"data":[{"messageId":"1","registrationId":"a"}]}`), "", []string{"a", "b"}, nil, true, out)
	if out[0].Kind != gateway.KindSent || out[1].Kind != gateway.KindRetry {
		t.Fatalf("partial batch reply: %+v", out)
	}
}

func TestOppoCredentials(t *testing.T) {
	for _, bad := range []string{`{}`, `{"_default":{"appKey":"k"}}`, `{"_default":{"appKey":"k","masterSecret":"s","intlEndpoint":"x"}}`} {
		if ParseCredentials([]byte(bad)) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := ParseCredentials([]byte(`{"_default":{"appKey":"k","masterSecret":"s"},"beta":{"appKey":"k2","masterSecret":"s2"}}`)); err != nil {
		t.Fatal(err)
	}
	// sha256("key" + "1700000000000" + "secret"), computed with sha256sum.
	if got, want := Sign("key", "1700000000000", "secret"), "ee412f504f93d283888979ab4f37e98beb471243575d468a4048c57285abad84"; got != want {
		t.Fatalf("sign %q, want %q", got, want)
	}
	if (Config{InvalidRegIDCodes: []int{33}}).Validate() == nil {
		t.Fatal("a common code accepted as a dead-regId code")
	}
}
