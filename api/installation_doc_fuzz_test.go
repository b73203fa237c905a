package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// FuzzInstallationBody feeds arbitrary bodies through the create path's validation: it
// never panics, and an accepted document encodes, decodes and validates again unchanged.
func FuzzInstallationBody(f *testing.F) {
	for _, s := range []string{
		`{"deviceType":"android","installationId":"IID","channels":["a","体育"],"n":{"__op":"Increment","amount":1}}`,
		`{"deviceType":"ios","deviceToken":"` + tokA + `","badge":1,"valid":false}`,
		`{"deviceType":"ios","deviceToken":"` + tokA + `","x":{"__op":"AddUnique","objects":[1,1,"a"]}}`,
		`{"deviceType":"android","installationId":"a","deviceProfile":"p_1","x":{"y":[{"z":1}]}}`,
		`[]`, `{"objectId":1}`, `{"a.b":1}`, `{"deviceType":"android","installationId":"a","c":{"__op":"Remove"}}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Unix(1700000000, 123e6)
	f.Fuzz(func(t *testing.T, body []byte) {
		m, perr := decodeObject(body)
		if perr != nil {
			return
		}
		if checkBodyFields(m) != nil {
			return
		}
		doc := map[string]any{}
		if applyBody(doc, m) != nil || validateDoc(doc) != nil {
			return
		}
		inst, err := buildInstallation("0123456789abcdef01234567", doc, now, now)
		if err != nil {
			t.Fatalf("accepted document does not encode: %v", err)
		}
		back, err := decodeStored(inst.Doc)
		if err != nil {
			t.Fatalf("stored document does not decode: %v", err)
		}
		if perr := validateDoc(back); perr != nil {
			t.Fatalf("stored document does not validate: %v", perr)
		}
		if r := routeOf(inst.ObjectID, back, now); r.DeviceType != inst.DeviceType || r.DeviceID() != inst.DeviceID() || len(r.Channels) != len(inst.Channels) {
			t.Fatalf("route changed after a round trip: %+v vs %+v", r, inst.Route)
		}
		if _, err := json.Marshal(back); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzAuthSignHeader: the X-SVC-Sign parser never panics and accepts only a correct digest.
func FuzzAuthSignHeader(f *testing.F) {
	f.Add("d5bcbb897e19b2f6633c716dfdfaf9be,1453014943466")
	f.Add("e074720658078c898aa0d4b1b82bdf4b,1453014943466,master")
	f.Add(",,,")
	app := &push.App{AppKey: "UtOCzqb67d3sN12Kts4URwy8", MasterKey: "DyJegPlemooo4X1tg94gQkw1"}
	now := time.UnixMilli(1453014943466)
	f.Fuzz(func(t *testing.T, h string) {
		master, perr := checkSign(h, app, now, 15*time.Minute)
		if perr != nil {
			return
		}
		key := app.AppKey
		if master {
			key = app.MasterKey
		}
		var ts string
		for i := 0; i < len(h); i++ {
			if h[i] == ',' {
				ts = h[i+1:]
				if j := len(ts) - len(",master"); master && j >= 0 {
					ts = ts[:j]
				}
				if h[:i] != Sign(ts, key) {
					t.Fatalf("accepted a wrong signature %q", h)
				}
				return
			}
		}
		t.Fatalf("accepted %q without a timestamp", h)
	})
}
