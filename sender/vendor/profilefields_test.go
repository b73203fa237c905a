package vendor_test

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vivo"
)

// TestVendorProfileErrors: each vendor's profile parser refuses what it must, with the
// reason saying what is wrong, and accepts a good profile.
func TestVendorProfileErrors(t *testing.T) {
	parsers := map[string]func([]byte) error{
		"hms": hms.ParseCredentials, "honor": honor.ParseCredentials, "mi": mi.ParseCredentials,
		"mz": mz.ParseCredentials, "oppo": oppo.ParseCredentials, "vivo": vivo.ParseCredentials,
	}
	cases := []struct{ vendor, profile, want string }{
		{"hms", `{"appId":"123","appSecret":"s"}`, ""},
		{"hms", `[]`, "it must be a JSON object with appId and the app secret"},
		{"hms", `{"appId":"123"}`, "appId and the app secret are required"},
		{"hms", `{"appId":"12a","appSecret":"s"}`, "appId must be the numeric HMS app id"},
		{"hms", `{"appId":"123","appSecret":"s","tokenUrl":"ftp://x"}`, `"ftp://x" is not an http(s) URL`},
		{"honor", `{"appId":"123","clientId":"c","clientSecret":"s","endpoint":"https://h"}`, ""},
		{"honor", `7`, "it must be a JSON object with appId, clientId and the client secret"},
		{"honor", `{"appId":"123","clientId":"c"}`, "appId, clientId and the client secret are required"},
		{"honor", `{"appId":"x","clientId":"c","clientSecret":"s"}`, "appId must be the numeric Honor app id"},
		{"honor", `{"appId":"1","clientId":"c","clientSecret":"s","endpoint":"https://"}`, `"https://" is not an http(s) URL`},
		{"oppo", `{"appKey":"k","masterSecret":"m"}`, ""},
		{"oppo", `{"appKey":1}`, "it must be a JSON object with appKey and the master secret"},
		{"oppo", `{"appKey":"k"}`, "appKey and the master secret are required"},
		{"oppo", `{"appKey":"k","masterSecret":"m","intlEndpoint":"x"}`, `"x" is not an http(s) URL`},
		{"vivo", `{"appId":"15","appKey":"k","appSecret":"s"}`, ""},
		{"vivo", `{"appId":true}`, "it must be a JSON object with appId, appKey and the app secret"},
		{"vivo", `{"appId":"15","appKey":"k"}`, "appId, appKey and the app secret are required"},
		{"vivo", `{"appId":"0","appKey":"k","appSecret":"s"}`, "appId must be the numeric vivo app id"},
		{"vivo", `{"appId":"15","appKey":"k","appSecret":"s","endpoint":"//h"}`, `"//h" is not an http(s) URL`},
		{"mi", `{"appSecret":"s","packageName":"p"}`, ""},
		{"mi", `{"appSecret":[]}`, "it must be a JSON object with the app secret and packageName"},
		{"mi", `{"appSecret":"s"}`, "the app secret and packageName are required"},
		{"mi", `{"appSecret":"s","packageName":"p,q"}`, "packageName must be one package name"},
		{"mi", `{"appSecret":"s","packageName":"p","region":"mars"}`, `region "mars" is none of`},
		{"mi", `{"appSecret":"s","packageName":"p","endpoint":"h"}`, `"h" is not an http(s) URL`},
		{"mz", `{"appId":"42","appSecret":"s"}`, ""},
		{"mz", `{"appId":{}}`, "it must be a JSON object with appId and appSecret"},
		{"mz", `{"appId":"42"}`, "appId and appSecret are required"},
		{"mz", `{"appId":"4.2","appSecret":"s"}`, "appId must be Meizu's numeric app id"},
		{"mz", `{"appId":42,"appSecret":"s","endpoint":"mailto:x"}`, `"mailto:x" is not an http(s) URL`},
	}
	for _, c := range cases {
		err := parsers[c.vendor]([]byte(`{"_default":` + c.profile + `}`))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.vendor, c.profile, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s: %v, want %q", c.vendor, c.profile, err, c.want)
		}
	}
}
