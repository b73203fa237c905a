package hms

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one HMS configuration of an app's App.Credentials["hms"], which maps profile
// names (`_default` and deviceProfile names) to these:
//
//	{"_default": {"appId": "104455667", "appSecret": "…"},
//	 "beta":     {"appId": "104455668", "appSecret": "…", "endpoint": "https://…", "tokenUrl": "https://…"}}
//
// appId is the OAuth2 client id and the {appId} of the send URL.
type ProfileJSON struct {
	AppID     string `json:"appId"`
	AppSecret string `json:"appSecret"`
	// Endpoint and TokenURL override the process-wide hosts for this profile.
	Endpoint string `json:"endpoint,omitempty"`
	TokenURL string `json:"tokenUrl,omitempty"`
}

// Credentials are an app's parsed HMS profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["hms"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["hms"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelHMS, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	var j ProfileJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with appId and the app secret")
	}
	if j.AppID == "" || j.AppSecret == "" {
		return j, errors.New("appId and the app secret are required")
	}
	for _, c := range j.AppID {
		if c < '0' || c > '9' {
			return j, errors.New("appId must be the numeric HMS app id")
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
