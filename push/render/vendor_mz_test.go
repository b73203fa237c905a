package render

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestRenderMzParams: data.mz's click action and notifyKey become Params for sender/mz; the
// same keys at the top level stay custom attributes, as vivo's pushMode does.
func TestRenderMzParams(t *testing.T) {
	m, err := Render(json.RawMessage(`{"alert":"a","url":"top","mz":{"title":"T","clickType":2,"url":"https://x/1","notifyKey":"k1","c":1}}`), push.ChannelMz, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	var got VendorBody
	if err := json.Unmarshal(m.Body, &got); err != nil {
		t.Fatal(err)
	}
	want := VendorBody{Title: "T", Alert: "a", NotificationChannel: "chat", NotificationID: "n1",
		Custom: json.RawMessage(`{"c":1}`), Params: json.RawMessage(`{"clickType":2,"notifyKey":"k1","url":"https://x/1"}`)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v (%s)", got, want, m.Body)
	}
}
