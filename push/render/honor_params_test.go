package render

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestRenderHonorParams: data.honor's target_user_type and importance reach the sender as
// Params (Honor's test-user flag and message class); values Honor would refuse fail the
// render with ErrVendorParam, as data.hms target_user_type does.
func TestRenderHonorParams(t *testing.T) {
	m, err := Render(json.RawMessage(`{"alert":"a","honor":{"importance":"LOW","target_user_type":1,"k":"v"}}`), push.ChannelHonor, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	var got VendorBody
	if err := json.Unmarshal(m.Body, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.Params) != `{"importance":"LOW","target_user_type":1}` || string(got.Custom) != `{"k":"v"}` {
		t.Fatalf("params %s custom %s", got.Params, got.Custom)
	}
	for _, bad := range []string{
		`{"alert":"a","honor":{"importance":"HIGH"}}`,
		`{"alert":"a","honor":{"importance":1}}`,
		`{"alert":"a","honor":{"target_user_type":2}}`,
	} {
		if _, err := Render(json.RawMessage(bad), push.ChannelHonor, testOpts()); !errors.Is(err, ErrVendorParam) {
			t.Errorf("%s: %v, want ErrVendorParam", bad, err)
		}
	}
}
