package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestMiSimulatorReceipts: with extra.callback set, the simulator POSTs receipts to it after
// answering: the delivered regIds (type 1) and, with callback.type 16, the invalid ones, each
// naming the message id of the reply and the callback.param; bad callback fields are refused.
func TestMiSimulatorReceipts(t *testing.T) {
	got := make(chan url.Values, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		v, _ := url.ParseQuery(string(b))
		got <- v
	}))
	defer rcv.Close()
	s, err := NewMi(MiConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := s.NewApp("com.a")
	s.MarkInvalid("r3")
	form := url.Values{"registration_id": {"r1,r2,r3"}, "restricted_package_name": {"com.a"}, "title": {"t"}, "description": {"d"},
		"extra.callback": {rcv.URL + "/receipts"}, "extra.callback.param": {"p1"}, "extra.callback.type": {"17"}}
	st, _, r := miPost(t, s, secret, form)
	if st != 200 || r.Code != MiOK {
		t.Fatalf("send: %d %+v", st, r)
	}
	msgID, _ := r.Data["id"].(string)
	byType := map[float64]string{}
	for range 2 {
		select {
		case v := <-got:
			var data map[string]struct {
				Param   string  `json:"param"`
				Type    float64 `json:"type"`
				Targets string  `json:"targets"`
			}
			if err := json.Unmarshal([]byte(v.Get("data")), &data); err != nil || len(data) != 1 {
				t.Fatalf("receipt %v: %v", v, err)
			}
			rc, ok := data[msgID]
			if !ok || rc.Param != "p1" {
				t.Fatalf("receipt %v: want message %s with param p1", v, msgID)
			}
			byType[rc.Type] = rc.Targets
		case <-time.After(10 * time.Second):
			t.Fatalf("receipts so far %v: want 2", byType)
		}
	}
	if byType[MiReceiptDelivered] != "r1,r2" || byType[MiReceiptInvalid] != "r3" {
		t.Fatalf("receipts %v: want delivered r1,r2 and invalid r3", byType)
	}

	for field, bad := range map[string]string{"extra.callback": "ftp://x", "extra.callback.param": strings.Repeat("p", 65), "extra.callback.type": "4"} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set(field, bad)
		if _, _, r := miPost(t, s, secret, f); r.Code != MiDefaultParamCode {
			t.Fatalf("%s=%q: %+v, want the parameter error", field, bad, r)
		}
	}
}
