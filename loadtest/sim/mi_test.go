package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// miPost sends a Xiaomi form with the given key and returns the status, Retry-After and reply.
func miPost(t *testing.T, s *Mi, secret string, f url.Values) (int, string, miReply) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v3/message/regid", strings.NewReader(f.Encode()))
	req.Header.Set("Authorization", "key="+secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded;charset=UTF-8")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientTLS(), ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r miReply
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("reply %s: %v", b, err)
		}
	}
	return res.StatusCode, res.Header.Get("Retry-After"), r
}

// TestMiSimulatorQuotaAndRate: the day quota counts regIds per China day and its answer
// carries data.day_quota (as does a scripted quota answer); the rate mode answers HTTP 503
// with Retry-After until the app's bucket refills on the simulator's clock.
func TestMiSimulatorQuotaAndRate(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 4, 15, 0, 0, 0, time.UTC) // 23:00 in China
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s, err := NewMi(MiConfig{DayQuota: 3, TargetsPerSecond: 2, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := s.NewApp("com.a")
	form := func(ids string) url.Values {
		return url.Values{"registration_id": {ids}, "restricted_package_name": {"com.a"}, "title": {"t"}, "description": {"d"}}
	}

	if st, _, r := miPost(t, s, secret, form("r1,r2")); st != 200 || r.Code != MiOK || r.Data["day_quota"] != "3" || r.Data["day_acked"] != "2" {
		t.Fatalf("first: %d %+v", st, r)
	}
	if st, ra, _ := miPost(t, s, secret, form("r3")); st != http.StatusServiceUnavailable || ra != "1" {
		t.Fatalf("over the rate: %d Retry-After %q, want 503 and 1", st, ra)
	}
	advance(time.Second)
	if st, _, r := miPost(t, s, secret, form("r3,r4")); st != 200 || r.Code != MiDefaultQuotaCode || r.Result != "error" || r.Data["day_quota"] != "3" {
		t.Fatalf("over the day quota: %d %+v", st, r)
	}
	advance(time.Hour) // 00:00:01 in China: a new quota day, though not in UTC
	if st, _, r := miPost(t, s, secret, form("r3,r4")); st != 200 || r.Code != MiOK {
		t.Fatalf("next China day: %d %+v", st, r)
	}
	s.Inject(1, Fault{Reason: strconv.Itoa(MiDefaultQuotaCode)})
	advance(time.Second)
	if _, _, r := miPost(t, s, secret, form("r5")); r.Code != MiDefaultQuotaCode || r.Data["day_quota"] == nil {
		t.Fatalf("scripted quota answer: %+v", r)
	}
	if st := s.Stats(); st.Accepted != 4 || st.ByReason["503"] != 1 || st.ByReason[strconv.Itoa(MiDefaultQuotaCode)] != 2 {
		t.Fatalf("stats: accepted %d, by reason %v", st.Accepted, st.ByReason)
	}
}
