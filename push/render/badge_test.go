package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

func TestRenderBadgedIncrement(t *testing.T) {
	cases := []struct {
		name, data string
		body       string // the shared body: no badge
		badged     string // the template's payload with badge 7; "" for no template
		pushType   string
	}{
		{"flat", `{"alert":"hi","badge":"Increment","k":1}`,
			`{"aps":{"alert":"hi"},"k":1}`, `{"aps":{"alert":"hi","badge":7},"k":1}`, "alert"},
		{"badge first in aps", `{"badge":"Increment","content-available":1,"sound":"s"}`,
			`{"aps":{"sound":"s","content-available":1}}`, `{"aps":{"badge":7,"sound":"s","content-available":1}}`, "alert"},
		{"badge alone makes it an alert push", `{"badge":"Increment","content-available":1}`,
			`{"aps":{"content-available":1}}`, `{"aps":{"badge":7,"content-available":1}}`, "alert"},
		{"apple form", `{"aps":{"alert":"a","badge":"Increment"}}`,
			`{"aps":{"alert":"a"}}`, `{"aps":{"alert":"a","badge":7}}`, "alert"},
		{"ios object", `{"alert":"a","badge":2,"ios":{"badge":"Increment"}}`,
			`{"aps":{"alert":"a"}}`, `{"aps":{"alert":"a","badge":7}}`, "alert"},
		{"a number is no template", `{"alert":"a","badge":2}`, `{"aps":{"alert":"a","badge":2}}`, "", "alert"},
		{"ios object removes it", `{"alert":"a","badge":"Increment","ios":{"badge":null}}`, `{"aps":{"alert":"a"}}`, "", "alert"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, bt, err := RenderBadged(json.RawMessage(tc.data), testOpts())
			if err != nil {
				t.Fatal(err)
			}
			if string(msg.Body) != tc.body || msg.PushType != tc.pushType {
				t.Errorf("message body %s type %s, want %s %s", msg.Body, msg.PushType, tc.body, tc.pushType)
			}
			if tc.badged == "" {
				if bt != nil {
					t.Errorf("template %q, want none", bt.AppendBody(nil, 7))
				}
				return
			}
			if bt == nil {
				t.Fatal("no template")
			}
			if got := string(bt.AppendBody(nil, 7)); got != tc.badged {
				t.Errorf("payload with badge 7 = %s, want %s", got, tc.badged)
			}
			if got := bt.AppendBody([]byte("x"), push.MaxBadge); len(got) != bt.Len()+1 || !json.Valid(got[1:]) {
				t.Errorf("payload with the largest badge = %s (%d bytes), want valid JSON of Len %d", got[1:], len(got)-1, bt.Len())
			}
			// Render (intake's check, the other channels' path) gives the same shared body.
			plain, err := Render(json.RawMessage(tc.data), push.ChannelAPNs, testOpts())
			if err != nil || string(plain.Body) != tc.body {
				t.Errorf("Render = %s, %v; want %s", plain.Body, err, tc.body)
			}
		})
	}
}

// A payload that fits without its badge but not with the longest one is refused, at intake
// (Render) as at fan-out, rather than failing at the gateway.
func TestRenderBadgedTooLarge(t *testing.T) {
	base := `{"alert":"","badge":"Increment"}`
	long := strings.Repeat("a", maxAPNsPayload-len(`{"aps":{"alert":""}}`)-5)
	data := strings.Replace(base, `""`, `"`+long+`"`, 1)
	if _, err := Render(json.RawMessage(strings.Replace(data, `"Increment"`, `null`, 1)), push.ChannelAPNs, testOpts()); err != nil {
		t.Fatalf("without a badge: %v", err)
	}
	if _, _, err := RenderBadged(json.RawMessage(data), testOpts()); !errors.Is(err, ErrTooLarge) {
		t.Errorf("RenderBadged = %v, want ErrTooLarge", err)
	}
	if _, err := Render(json.RawMessage(data), push.ChannelAPNs, testOpts()); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Render = %v, want ErrTooLarge", err)
	}
}

func TestRenderCacheBadged(t *testing.T) {
	job := &push.Job{Data: json.RawMessage(`{"alert":"hi","badge":"Increment"}`)}
	c := NewCache(job)
	bt := c.Badged()
	if bt == nil {
		t.Fatal("Badged = nil")
	}
	msg, err := c.Get(push.ChannelAPNs)
	if err != nil || string(msg.Body) != `{"aps":{"alert":"hi"}}` {
		t.Errorf("Get(apns) = %s, %v", msg.Body, err)
	}
	if got := string(bt.AppendBody(nil, 1)); got != `{"aps":{"alert":"hi","badge":1}}` {
		t.Errorf("template = %s", got)
	}
	if NewCache(&push.Job{Data: json.RawMessage(`{"alert":"hi","badge":1}`)}).Badged() != nil {
		t.Error("Badged of a numeric badge is not nil")
	}
}
