package api

import (
	"context"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestAdminSenderRates: an app's per-channel sender rates are set through the admin API,
// stored with the app and shown; a bad rate or an unknown channel is refused and changes
// nothing.
func TestAdminSenderRates(t *testing.T) {
	e := newEnv(t)
	path, h := "/admin/apps/"+e.app.ID, e.adminHeaders()
	r := e.do("PUT", path, `{"settings":{"senderRates":{"vivo":4500,"apns":20000}}}`, h...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"senderRates":{"apns":20000,"vivo":4500}`) {
		t.Fatalf("set rates: %d %s", r.Status, r.Body)
	}
	got, err := e.st.GetApp(context.Background(), e.app.ID)
	if err != nil || got.Settings.SenderRates != (push.ChannelRates{Vivo: 4500, APNs: 20000}) {
		t.Fatalf("stored rates %+v, %v", got.Settings.SenderRates, err)
	}
	for _, bad := range []string{
		`{"settings":{"senderRates":{"vivo":-1}}}`,
		`{"settings":{"senderRates":{"vivo":2000000}}}`,
		`{"settings":{"senderRates":{"direct":10}}}`,
		`{"settings":{"senderRates":{"vivo":"fast"}}}`,
	} {
		if r := e.do("PUT", path, bad, h...); r.Status != 400 || r.Code(t) != int(push.CodeValidation) {
			t.Errorf("%s: %d %s, want 400 code %d", bad, r.Status, r.Body, push.CodeValidation)
		}
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Settings.SenderRates != (push.ChannelRates{Vivo: 4500, APNs: 20000}) {
		t.Fatalf("a refused change changed the rates: %+v", got.Settings.SenderRates)
	}
	// {} clears them: the nodes' --sender-rates apply again.
	if r := e.do("PUT", path, `{"settings":{"senderRates":{}}}`, h...); r.Status != 200 {
		t.Fatalf("clear rates: %d %s", r.Status, r.Body)
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Settings.SenderRates != (push.ChannelRates{}) {
		t.Fatalf("rates after {}: %+v", got.Settings.SenderRates)
	}
}
