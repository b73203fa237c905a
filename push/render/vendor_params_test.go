package render

import (
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestRenderVivoParams: data.vivo's pushMode, classification and category reach the sender as
// Params; such a key at the top level, not set in data.vivo, stays a custom attribute.
func TestRenderVivoParams(t *testing.T) {
	m, err := Render(json.RawMessage(`{"alert":"a","classification":0,"vivo":{"category":"IM","pushMode":1,"k":"v"}}`), push.ChannelVivo, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	var got VendorBody
	if err := json.Unmarshal(m.Body, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.Params) != `{"category":"IM","pushMode":1}` || string(got.Custom) != `{"classification":0,"k":"v"}` {
		t.Fatalf("params %s custom %s", got.Params, got.Custom)
	}
}

func TestRenderOppoParams(t *testing.T) {
	m, err := Render(json.RawMessage(`{"alert":"a","oppo":{"category":"IM","notify_level":2,"k":1}}`), push.ChannelOppo, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	var got VendorBody
	if err := json.Unmarshal(m.Body, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.Params) != `{"category":"IM","notify_level":2}` || string(got.Custom) != `{"k":1}` {
		t.Fatalf("params %s custom %s", got.Params, got.Custom)
	}
}
