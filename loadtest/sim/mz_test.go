package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// mzPost sends a signed (or, with secret "", unsigned) form to the simulator's path.
func mzPost(t *testing.T, s *Mz, path string, f url.Values, secret string) (int, mzReply) {
	t.Helper()
	if secret != "" {
		f.Set("sign", MzSign(f, secret))
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientTLS(), ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
	res, err := c.Post(s.URL()+path, "application/x-www-form-urlencoded;charset=UTF-8", strings.NewReader(f.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r mzReply
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("reply %s: %v", b, err)
		}
	}
	return res.StatusCode, r
}

// TestMzSimulatorChecks: the signature is over the raw values (a value with '+', '&' and
// non-ASCII signs as is), and each request rule of gateways.md §5.5 has its code; code is a
// string and value names only failed pushIds.
func TestMzSimulatorChecks(t *testing.T) {
	s, err := NewMz(MzConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	app, secret := s.NewApp()
	mj := `{"noticeBarInfo":{"title":"A+B & C","content":"今晚 8 点?"},"pushTimeInfo":{"offLine":1,"validTime":24}}`
	form := func(ids, mj string) url.Values {
		return url.Values{"appId": {app}, "pushIds": {ids}, "messageJson": {mj}}
	}

	s.MarkInvalid("dead1")
	if st, r := mzPost(t, s, MzNotificationPath, form("ok1,dead1,bad\"id", mj), secret); st != 200 || r.Code != MzOK || r.MsgID == "" ||
		len(r.Value) != 2 || r.Value[MzUnsubscribed][0] != "dead1" || r.Value[MzIllegalPushID][0] != `bad"id` {
		t.Fatalf("valid request: %d %+v", st, r)
	}
	f := form("ok1", mj)
	f.Set("sign", "0123456789abcdef0123456789abcdef")
	if _, r := mzPost(t, s, MzNotificationPath, f, ""); r.Code != MzSignError {
		t.Fatalf("bad sign: %+v", r)
	}
	// A signature over URL-encoded values is not Meizu's.
	f = form("ok1", mj)
	enc := url.Values{}
	for k, v := range f {
		enc.Set(k, url.QueryEscape(v[0]))
	}
	f.Set("sign", MzSign(enc, secret))
	if _, r := mzPost(t, s, MzNotificationPath, f, ""); r.Code != MzSignError {
		t.Fatalf("sign over encoded values accepted: %+v", r)
	}
	if _, r := mzPost(t, s, MzNotificationPath, url.Values{"appId": {"999"}, "pushIds": {"a"}, "messageJson": {mj}}, "x"); r.Code != MzBadAppID {
		t.Fatalf("unknown appId: %+v", r)
	}
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = "p" + strings.Repeat("x", i%5+1)
	}
	for name, c := range map[string]struct {
		f    url.Values
		code string
	}{
		"101 pushIds":       {form(strings.Join(ids, ","), mj), MzParamError},
		"title too long":    {form("a", `{"noticeBarInfo":{"title":"`+strings.Repeat("题", 33)+`","content":"c"}}`), MzParamError},
		"content too long":  {form("a", `{"noticeBarInfo":{"title":"t","content":"`+strings.Repeat("c", 101)+`"}}`), MzParamError},
		"validTime 73":      {form("a", `{"noticeBarInfo":{"title":"t","content":"c"},"pushTimeInfo":{"validTime":73}}`), MzParamError},
		"clickType 3":       {form("a", `{"noticeBarInfo":{"title":"t","content":"c"},"clickTypeInfo":{"clickType":3}}`), MzParamError},
		"not JSON":          {form("a", `{`), MzParamError},
		"missing pushIds":   {url.Values{"appId": {app}, "messageJson": {mj}}, MzEmptyParam},
		"long notifyKey":    {form("a", `{"noticeBarInfo":{"title":"t","content":"c"},"advanceInfo":{"notifyKey":"123456789"}}`), MzParamError},
		"callback too long": {form("a", `{"noticeBarInfo":{"title":"t","content":"c"},"extra":{"callback":"`+strings.Repeat("u", 129)+`"}}`), MzParamError},
	} {
		if _, r := mzPost(t, s, MzNotificationPath, c.f, secret); r.Code != c.code {
			t.Errorf("%s: %+v, want code %s", name, r, c.code)
		}
	}
	if _, r := mzPost(t, s, MzPassThroughPath, form("a", `{"title":"t","content":"c"}`), secret); r.Code != MzPassThrough {
		t.Fatalf("pass-through: %+v, want 110053", r)
	}

	// The outage control path takes phases as the other simulators do.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientTLS(), ForceAttemptHTTP2: true}}
	res, err := c.Post(s.URL()+"/_outage", "application/json", strings.NewReader(`[{"mode":"status","reason":"1003","for":"1h"}]`))
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_outage: %v %v", res, err)
	}
	res.Body.Close()
	if _, r := mzPost(t, s, MzNotificationPath, form("ok1", mj), secret); r.Code != MzBusy {
		t.Fatalf("in the outage: %+v, want 1003", r)
	}
	st := s.Stats()
	if !st.InOutage || st.Outage != 1 || st.PerToken["ok1"] != 1 || st.Accepted != 1 {
		t.Fatalf("stats %+v", st)
	}
}
