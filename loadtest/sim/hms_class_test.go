package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestHMSSimCategory: the HMS simulator takes the categories of Huawei's classification in
// android.category, records them, and refuses an unknown one (80100001) as Huawei does.
func TestHMSSimCategory(t *testing.T) {
	s, err := NewHMS(HMSConfig{Record: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	secret := s.NewApp("1000")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientTLS(), ForceAttemptHTTP2: true}, Timeout: 30 * time.Second}
	res, err := c.PostForm(s.TokenURL(), url.Values{"grant_type": {"client_credentials"}, "client_id": {"1000"}, "client_secret": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.NewDecoder(res.Body).Decode(&tok)
	res.Body.Close()
	if tok.AccessToken == "" {
		t.Fatalf("no access token: %d", res.StatusCode)
	}
	send := func(category string) string {
		body := `{"message":{"token":["IQAAAACy0tok000001"],"android":{"category":"` + category + `","notification":{"title":"t","body":"b","click_action":{"type":3}}}}}`
		req, _ := http.NewRequest("POST", s.URL()+"/v1/1000/messages:send", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var r struct {
			Code string `json:"code"`
		}
		_ = json.NewDecoder(res.Body).Decode(&r)
		return r.Code
	}
	if code := send("MARKETING"); code != HMSSuccess {
		t.Fatalf("MARKETING: code %s, want %s", code, HMSSuccess)
	}
	if sent := s.Sent(); len(sent) != 1 || !strings.Contains(string(sent[0].Body), `"category":"MARKETING"`) {
		t.Fatalf("recorded %v", sent)
	}
	if code := send("PROMO"); code != HMSParamError {
		t.Fatalf("unknown category: code %s, want %s", code, HMSParamError)
	}
}
