package honor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one Honor configuration of an app's App.Credentials["honor"], which maps
// profile names (`_default` and deviceProfile names) to these:
//
//	{"_default": {"appId": "104455667", "clientId": "…", "clientSecret": "…"},
//	 "beta":     {"appId": "104455668", "clientId": "…", "clientSecret": "…", "endpoint": "https://…", "tokenUrl": "https://…"}}
//
// appId is the {appId} of the send URL; clientId and clientSecret are the OAuth2 client of
// the app's push service (Honor's developer console shows all three).
type ProfileJSON struct {
	AppID        string `json:"appId"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	// Endpoint and TokenURL override the process-wide hosts for this profile.
	Endpoint string `json:"endpoint,omitempty"`
	TokenURL string `json:"tokenUrl,omitempty"`
}

// Credentials are an app's parsed Honor profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["honor"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["honor"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelHonor, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	var j ProfileJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with appId, clientId and the client secret")
	}
	if j.AppID == "" || j.ClientID == "" || j.ClientSecret == "" {
		return j, errors.New("appId, clientId and the client secret are required")
	}
	for _, c := range j.AppID {
		if c < '0' || c > '9' {
			return j, errors.New("appId must be the numeric Honor app id")
		}
	}
	for _, u := range []string{j.Endpoint, j.TokenURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return j, fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	return j, nil
}
