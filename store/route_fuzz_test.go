package store

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/pushd/pushd/push"
)

func FuzzRouteCodec(f *testing.F) {
	f.Add("ios", "tok\x00en", "", "", "", "", "com.example", "TEAM", "obj1", int64(1700000000000), "a,b", true)
	f.Add("android", "", "iid-1", "reg-1", "HMS", "_default", "", "", "o", int64(-1), "", false)
	f.Add("", "", "", "", "", "", "", "", "", int64(0), ",,", false)
	f.Fuzz(func(t *testing.T, dt, tok, iid, reg, vendor, prof, topic, team, oid string, upd int64, chans string, invalid bool) {
		in := push.Route{ObjectID: oid, DeviceType: dt, DeviceToken: tok, InstallationID: iid,
			RegistrationID: reg, Vendor: vendor, DeviceProfile: prof, APNsTopic: topic, APNsTeamID: team,
			Invalid: invalid, UpdatedAt: upd}
		if chans != "" {
			in.Channels = bytes2strs(chans)
		}
		enc := AppendIndexValue(nil, &in, []byte(`{"x":1}`))
		for _, alias := range []bool{false, true} {
			var out push.Route
			n, err := decodeRoute(enc, &out, alias)
			if err != nil {
				t.Fatalf("decode(alias=%v): %v", alias, err)
			}
			if string(enc[n:]) != `{"x":1}` {
				t.Fatalf("doc after route = %q", enc[n:])
			}
			if len(in.Channels) == 0 {
				out.Channels, in.Channels = nil, nil
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("round trip (alias=%v):\n got %+v\nwant %+v", alias, out, in)
			}
		}
		// Arbitrary input never panics, and what decodes re-encodes to the same bytes.
		var r push.Route
		raw := []byte(dt + tok + oid)
		if n, err := DecodeRoute(raw, &r); err == nil {
			if again := AppendRoute(nil, &r); !bytes.Equal(again, raw[:n]) {
				t.Fatalf("re-encode of %x = %x", raw[:n], again)
			}
		}
	})
}

func bytes2strs(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func FuzzKeyCodec(f *testing.F) {
	f.Add("ios", "obj\x00\x01", uint16(7), int64(-5))
	f.Add("", "", uint16(0), int64(0))
	f.Add("\x00\xff", "\x00\x00", uint16(65535), int64(1<<62))
	f.Fuzz(func(t *testing.T, a, b string, u uint16, i int64) {
		k := AppendKeyString(nil, a)
		k = AppendKeyUint16(k, u)
		k = AppendKeyInt64(k, i)
		k = AppendKeyString(k, b)
		ga, rest, err := DecodeKeyString(k)
		if err != nil || ga != a {
			t.Fatalf("string a: %q %v", ga, err)
		}
		gu, rest, err := DecodeKeyUint16(rest)
		if err != nil || gu != u {
			t.Fatalf("uint16: %d %v", gu, err)
		}
		gi, rest, err := DecodeKeyInt64(rest)
		if err != nil || gi != i {
			t.Fatalf("int64: %d %v", gi, err)
		}
		gb, rest, err := DecodeKeyString(rest)
		if err != nil || gb != b || len(rest) != 0 {
			t.Fatalf("string b: %q %v rest %x", gb, err, rest)
		}
		// Order preservation and prefix freedom for strings.
		ka, kb := AppendKeyString(nil, a), AppendKeyString(nil, b)
		if c1, c2 := bytes.Compare(ka, kb), cmpStr(a, b); c1 != c2 {
			t.Fatalf("order of %q vs %q: encoded %d, raw %d", a, b, c1, c2)
		}
		if a != b && (bytes.HasPrefix(ka, kb) || bytes.HasPrefix(kb, ka)) {
			t.Fatalf("%q and %q encode with one a prefix of the other", a, b)
		}
		if rest, err := SkipKeyString(ka); err != nil || len(rest) != 0 {
			t.Fatalf("skip: %v %x", err, rest)
		}
		// Arbitrary bytes never panic.
		_, _, _ = DecodeKeyString([]byte(a))
		_, _, _ = DecodeCursor([]byte(b))
	})
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
