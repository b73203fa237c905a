package fcm

import (
	"encoding/json"
	"testing"
)

func TestFCMAppendMessage(t *testing.T) {
	cases := []struct{ name, tok, body, want string }{
		{"typical", "tok:1", `{"notification":{"title":"a"},"android":{"ttl":"60s"}}`,
			`{"message":{"token":"tok:1","notification":{"title":"a"},"android":{"ttl":"60s"}}}`},
		{"empty object", "t", `{}`, `{"message":{"token":"t"}}`},
		{"spaces", "t", " { \n } ", "{\"message\":{\"token\":\"t\" \n } }"},
		{"empty body", "t", ``, `{"message":{"token":"t"}}`},
		{"escaped token", "a\"b", `{"data":{"k":"v"}}`, `{"message":{"token":"a\"b","data":{"k":"v"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := appendMessage(nil, c.tok, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON: %s", got)
			}
		})
	}
	if _, err := appendMessage(nil, "t", []byte(`[1]`)); err == nil {
		t.Fatal("an array body was accepted")
	}
}

func FuzzFCMAppendMessage(f *testing.F) {
	f.Add("tok", []byte(`{"data":{"a":"b"}}`))
	f.Add("t\u00e9", []byte(` {}`))
	f.Fuzz(func(t *testing.T, tok string, body []byte) {
		if !json.Valid(body) {
			return
		}
		out, err := appendMessage(nil, tok, body)
		if err != nil {
			return
		}
		var v struct {
			Message map[string]json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("spliced %q into %q: invalid JSON %q: %v", tok, body, out, err)
		}
		var got string
		if err := json.Unmarshal(v.Message["token"], &got); err != nil {
			t.Fatalf("token: %v", err)
		}
		if want := string([]rune(tok)); got != want && json.Valid([]byte(`"`+tok+`"`)) {
			t.Fatalf("token %q came back as %q", tok, got)
		}
	})
}

func BenchmarkFCMAppendMessage(b *testing.B) {
	body := []byte(`{"notification":{"title":"Ana","body":"See you at 8?"},"data":{"conv":"42"},"android":{"priority":"HIGH","ttl":"3600s","collapse_key":"conv-42","notification":{"channel_id":"chat"}}}`)
	tok := "fOo1:APA91bFakeRegistrationTokenFakeRegistrationTokenFakeRegistrationToken"
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf, _ = appendMessage(buf[:0], tok, body)
	}
}

func FuzzFCMClassify(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}`))
	f.Add(400, []byte(`{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"fieldViolations":[{"field":"message.token"}]}]}}`))
	f.Add(503, []byte(`{"error":`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		r := classify(status, body)
		if r.Kind == 0 || r.Reason == "" || len(r.Reason) > 200 {
			t.Fatalf("classify(%d, %q) = %+v", status, body, r)
		}
	})
}
